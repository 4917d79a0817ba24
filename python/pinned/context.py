"""The ctx an instance gets: bound to one activation, so to one epoch (src/pinned/context.ts)."""

from __future__ import annotations

import asyncio
import datetime
from typing import TYPE_CHECKING, Awaitable, Callable, Optional, TypeVar, Union

from aiohttp import web

from .attestation import AttestationClaims
from .storage import EpochStorage
from .websocket import PinnedWebSocket

if TYPE_CHECKING:
    from .live_instance import LiveInstance

T = TypeVar("T")


class InstanceContext:
    def __init__(self, live: "LiveInstance") -> None:
        self._live = live

    @property
    def ns(self) -> str:
        return self._live.ns

    @property
    def id(self) -> str:
        return self._live.id

    @property
    def epoch(self) -> str:
        return self._live.epoch

    @property
    def storage(self) -> EpochStorage:
        return self._live.storage

    def is_current(self) -> bool:
        """False once the activation was retired or the worker's lease lapsed."""
        return self._live.is_current()

    def set_alarm(self, at: Union[float, datetime.datetime, None]) -> "asyncio.Future[None]":
        """A storage write like any other (ms since the epoch, a datetime, or None to clear)."""
        due = at.timestamp() * 1000 if isinstance(at, datetime.datetime) else at
        return self._live.gates.write(lambda: self._live.alarm.set(due))

    async def get_alarm(self) -> Optional[int]:
        return self._live.alarm.get()

    def delete_alarm(self) -> "asyncio.Future[None]":
        return self.set_alarm(None)

    def accept_websocket(self, request: web.Request, tags: Optional[list[str]] = None) -> PinnedWebSocket:
        """Accepts the upgrade; return `socket.response` from fetch."""
        socket = PinnedWebSocket(request, tags or [], self._live.socket_sink)
        self._live.adopt(socket)
        return socket

    def get_websockets(self, tag: Optional[str] = None) -> list[PinnedWebSocket]:
        sockets = [s for s in self._live.sockets if s.ready_state <= 1]
        return sockets if tag is None else [s for s in sockets if tag in s.tags]

    def block_concurrency_while(self, fn: Callable[[], Awaitable[T]]) -> "asyncio.Future[T]":
        return self._live.block(fn)


class RequestContext(InstanceContext):
    def __init__(self, live: "LiveInstance", path: str, attestation: AttestationClaims) -> None:
        super().__init__(live)
        self.path = path
        """The rest after /{ns}/{id}: "" or "/…"."""
        self.attestation = attestation
