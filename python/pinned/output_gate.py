"""The output gate of one activation (mirrors src/pinned/output-gate.ts).

An answer or WebSocket message that follows a storage write leaves only once the write is durable.
A failed write breaks the activation: every answer waiting fails and the activation is dropped.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional


class OutputGate:
    def __init__(self, on_broken: Callable[[BaseException], None], holds_output: bool = True) -> None:
        self._on_broken = on_broken
        self._holds_output = holds_output
        self._pending: set["asyncio.Future[Any]"] = set()
        self.broken: Optional[BaseException] = None

    @property
    def writes_in_flight(self) -> int:
        return len(self._pending)

    def track(self, write: "asyncio.Future[Any]") -> "asyncio.Future[Any]":
        self._pending.add(write)
        write.add_done_callback(self._settled)
        return write

    def _settled(self, write: "asyncio.Future[Any]") -> None:
        self._pending.discard(write)
        error = None if write.cancelled() else write.exception()
        if write.cancelled():
            error = asyncio.CancelledError()
        if error is not None and self.broken is None:
            self.broken = error
            self._on_broken(error)

    async def confirmed(self) -> None:
        """Returns once every write made so far is durable; raises the failure once broken."""
        if self.broken is not None:
            raise self.broken
        if not self._pending or not self._holds_output:
            return
        await asyncio.wait(list(self._pending))
        if self.broken is not None:
            raise self.broken
