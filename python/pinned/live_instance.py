"""One activation: an instance object at one placement epoch (mirrors src/pinned/live-instance.ts)."""

from __future__ import annotations

import asyncio
import inspect
import time
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal, Optional, TypeVar, Union

from .alarms import AlarmInfo, InstanceAlarm
from .context import InstanceContext
from .durability import ActivateInfo, DurabilityStore, DurabilityUnavailableError, InstanceRef, StaleEpochError
from .input_gate import DeliveryCancelledError, EventKind, InputGate, InstanceEvent, QueueFullError, current_event
from .output_gate import OutputGate
from .storage import EpochStorage, StorageGates
from .instance_types import InstanceClass
from .websocket import PinnedWebSocket

log = logging.getLogger("pinned")
T = TypeVar("T")

LEASE_LAPSED_CLOSE = "lease lapsed"
DEFAULT_ACTIVATION_TIMEOUT_MS = 5000
DEFAULT_MAX_QUEUED_EVENTS = 1000


def wall_ms() -> float:
    return time.time() * 1000


@dataclass(frozen=True)
class GateSettings:
    allow_concurrency: bool = False
    allow_unconfirmed: bool = False
    max_queued_events: int = DEFAULT_MAX_QUEUED_EVENTS


@dataclass
class LiveDeps:
    ns: str
    id: str
    epoch: str
    cls: InstanceClass
    store: DurabilityStore
    hostname: Optional[str]
    activation_timeout_ms: float
    now_ms: Callable[[], float]
    lapsed: Callable[[], bool]
    on_stale: Callable[["LiveInstance", StaleEpochError], None]
    on_broken: Callable[["LiveInstance", BaseException], None]
    gates: GateSettings


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class LiveInstance:
    def __init__(self, deps: LiveDeps) -> None:
        self._deps = deps
        self.ns, self.id, self.epoch = deps.ns, deps.id, deps.epoch
        self.epoch_value = int(deps.epoch)
        self.activated_at = round(time.time() * 1000)
        self.instance: Any = None
        self.state: Literal["activating", "active", "retired"] = "activating"
        self.closing = False
        self.inflight = 0
        self.sockets: set[PinnedWebSocket] = set()
        self._idle_waiters: list["asyncio.Future[None]"] = []
        self._blocks: list["asyncio.Future[Any]"] = []
        ref = InstanceRef(deps.ns, deps.id)
        on_stale = lambda err: deps.on_stale(self, err)  # noqa: E731
        self.input = InputGate(not deps.gates.allow_concurrency, deps.gates.max_queued_events)
        self.output = OutputGate(lambda err: deps.on_broken(self, err), not deps.gates.allow_unconfirmed)
        self.gates = StorageGates(
            read=self.input.read,
            write=lambda op: self.output.track(self.input.write(op)),
            hold=self.input.hold,
        )
        self.storage = EpochStorage(deps.store, ref, deps.epoch, on_stale, lambda: self.alarm.forget(), self.gates)
        # Alarms are wall-clock times (ms since the epoch), as stored and as the sweeper reads them.
        self.alarm = InstanceAlarm(deps.store, ref, deps.epoch, self._run_alarm, on_stale, deps.lapsed, wall_ms)
        self.ctx = InstanceContext(self)
        self.socket_sink = _SocketSink(self)
        self.ready: asyncio.Future[None] = asyncio.ensure_future(self._activate())
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def _activate(self) -> None:
        store = self._deps.store
        ms = self._deps.activation_timeout_ms
        try:
            result = await asyncio.wait_for(
                store.activate(InstanceRef(self.ns, self.id), self.epoch, ActivateInfo(self._deps.hostname)), ms / 1000
            )
        except asyncio.TimeoutError:
            name = getattr(store, "name", None) or type(store).__name__
            last = getattr(store, "last_error", None)
            raise DurabilityUnavailableError(
                name, f"no answer within {ms:g} ms (activationTimeoutMs)" + (f"; last error: {last}" if last else "")
            ) from None
        if self.state == "retired":
            return
        token = current_event.set(InstanceEvent("activation"))
        try:
            self.instance = self._deps.cls(self.ctx)
        finally:
            current_event.reset(token)
        await self.when_open()
        if self.state == "retired":
            return
        self.state = "active"
        self.alarm.start(result.alarm)

    async def when_open(self) -> None:
        while self._blocks:
            blocks = list(self._blocks)
            await asyncio.gather(*blocks, return_exceptions=True)
            self._blocks = [b for b in self._blocks if b not in blocks]

    def block(self, fn: Callable[[], Awaitable[T]]) -> "asyncio.Future[T]":
        """blockConcurrencyWhile: holds the input gate for fn's run, whatever allow_concurrency says."""
        task = self.input.hold(fn)
        self._blocks.append(task)
        return task

    async def answer(self, run: Callable[[], Any]) -> Any:
        """One request: through the input gate, its answer held until the writes before it are durable."""
        result = await self.deliver("request", run)
        await self.output.confirmed()
        return result

    async def deliver(self, kind: EventKind, run: Callable[[], Any], bounded: bool = True) -> Any:
        event = InstanceEvent(kind)
        waiting = self.input.admit(event, bounded)
        if waiting is not None:
            await waiting
            if not self.is_current():
                raise DeliveryCancelledError("retired" if self.state == "retired" else "lease-lapsed")
        token = current_event.set(event)
        try:
            return await _maybe_await(run())
        finally:
            current_event.reset(token)

    def is_current(self) -> bool:
        return self.state != "retired" and not self._deps.lapsed()

    def enter(self) -> None:
        self.inflight += 1

    def leave(self) -> None:
        self.inflight -= 1
        if self.inflight == 0:
            waiters, self._idle_waiters = self._idle_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def idle(self, timeout_ms: float) -> bool:
        if self.inflight == 0:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout_ms / 1000)
            return True
        except asyncio.TimeoutError:
            return False

    def retire(self, code: int, reason: str) -> None:
        if self.state == "retired":
            return
        self.state = "retired"
        self.alarm.stop()
        self.input.cancel_all()
        for socket in list(self.sockets):
            socket.close(code, reason)

    def adopt(self, socket: PinnedWebSocket) -> None:
        self.sockets.add(socket)
        if self.state == "retired":
            socket.close(1012, "instance moved")

    async def _run_alarm(self, info: AlarmInfo) -> None:
        self.enter()
        try:
            await self.ready
            handler = getattr(self.instance, "alarm", None)
            if handler is not None:
                await self.deliver("alarm", lambda: handler(self.ctx, info), bounded=False)
            await self.output.confirmed()
        finally:
            self.leave()

    def hook(self, name: str, socket: PinnedWebSocket, bounded: bool, call: Callable[[], Any]) -> None:
        """Delivers a WebSocket event through the input gate; a full queue closes the socket (1013)."""

        async def run() -> None:
            try:
                await self.deliver("websocket", call, bounded)
            except QueueFullError:
                socket.close(1013, "instance overloaded")
            except DeliveryCancelledError as err:
                if err.reason == "lease-lapsed":
                    socket.close(1012, LEASE_LAPSED_CLOSE)
            except Exception as err:  # the instance's hook failed: logged, the socket stays
                log.error("%s failed ns=%s id=%s error=%s", name, self.ns, self.id, err)

        asyncio.ensure_future(run())


class _SocketSink:
    def __init__(self, live: LiveInstance) -> None:
        self._live = live

    def message(self, socket: PinnedWebSocket, data: Union[str, bytes]) -> None:
        live = self._live
        # No acquire checks the lease for a message: one after a lapse may have another owner by now.
        if not live.is_current():
            socket.close(1012, LEASE_LAPSED_CLOSE)
            return
        handler = getattr(live.instance, "web_socket_message", None)
        if handler is not None:
            live.hook("web_socket_message", socket, True, lambda: handler(socket, data, live.ctx))

    def close(self, socket: PinnedWebSocket, code: int, reason: str) -> None:
        live = self._live
        live.sockets.discard(socket)
        handler = getattr(live.instance, "web_socket_close", None)
        if handler is not None:
            live.hook("web_socket_close", socket, False, lambda: handler(socket, code, reason, live.ctx))

    async def confirmed(self) -> None:
        await self._live.output.confirmed()
