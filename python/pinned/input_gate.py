"""The input gate of one activation (mirrors src/pinned/input-gate.ts), for asyncio.

While a storage call of one event is in flight, no other event is delivered and no other event's
storage call starts; the holder's own code after the call runs before anything else (the gate is
released by a callback scheduled with `call_soon`, which runs after the holder's task went on to
its next suspension). Awaiting anything else leaves the gate open. Which event made a storage
call is known through a ContextVar (tasks copy it, so an un-awaited put belongs to its event).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal, Optional, TypeVar

T = TypeVar("T")

EventKind = Literal["request", "websocket", "alarm", "activation", "detached"]


class InstanceEvent:
    def __init__(self, kind: EventKind) -> None:
        self.kind = kind


current_event: ContextVar[Optional[InstanceEvent]] = ContextVar("pinned_event", default=None)


class QueueFullError(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"instance queue full ({limit} events waiting)")
        self.limit = limit


class DeliveryCancelledError(Exception):
    def __init__(self, reason: Literal["aborted", "retired", "lease-lapsed"]) -> None:
        super().__init__(f"event not delivered: {reason}")
        self.reason = reason


@dataclass
class _Waiter:
    event: InstanceEvent
    kind: Literal["call", "delivery"]
    future: "asyncio.Future[None]"


class InputGate:
    def __init__(self, storage_holds: bool, limit: int) -> None:
        self._storage_holds = storage_holds
        self._limit = limit
        self._holder: Optional[InstanceEvent] = None
        self._holds = 0
        self._waiting: list[_Waiter] = []
        self._delivered: Optional[InstanceEvent] = None
        self._step_scheduled = False

    @property
    def queued(self) -> int:
        return len(self._waiting)

    def admit(self, event: InstanceEvent, bounded: bool = True) -> Optional["asyncio.Future[None]"]:
        """None when the event may run at once, else a future resolving at its turn."""
        if self._holder is None and not self._waiting:
            return None
        if bounded and len(self._waiting) >= self._limit:
            raise QueueFullError(self._limit)
        return self._enqueue(event, "delivery")

    def read(self, op: Callable[[], Awaitable[T]]) -> "asyncio.Future[T]":
        """A storage read of the current event, under the gate; the gate is decided now, in call order."""
        if not self._storage_holds:
            return asyncio.ensure_future(op())
        event = self._event()
        return self._guarded(event, self._take_or_queue(event), op)

    def write(self, op: Callable[[], Awaitable[T]]) -> "asyncio.Future[T]":
        """A write takes the gate when free; when another event holds it, it goes out at once, in order."""
        if not self._storage_holds:
            return asyncio.ensure_future(op())
        event = self._event()
        if not self._may_take(event):
            return asyncio.ensure_future(op())
        self._holder = event
        self._holds += 1
        return self._guarded(event, None, op)

    def hold(self, fn: Callable[[], Awaitable[T]]) -> "asyncio.Future[T]":
        """Holds the gate for fn's whole run (blockConcurrencyWhile, a transaction)."""
        event = self._event()
        return self._guarded(event, self._take_or_queue(event), fn)

    @staticmethod
    def _event() -> InstanceEvent:
        """The event making the call; a call outside any event is one of its own (detached)."""
        return current_event.get() or InstanceEvent("detached")

    def _guarded(
        self, event: InstanceEvent, turn: Optional["asyncio.Future[None]"], fn: Callable[[], Awaitable[T]]
    ) -> "asyncio.Future[T]":
        """The call as a task of `event` (its own calls inside pass the gate it holds); a task
        cancelled before it started gives back the hold taken for it."""
        started = [False]

        async def run() -> T:
            started[0] = True
            current_event.set(event)  # the task's own context copy
            return await self._held_when(turn, fn)

        task = asyncio.ensure_future(run())
        if turn is None:
            task.add_done_callback(lambda _t: None if started[0] else self._unhold_resumed())
        return task

    def _take_or_queue(self, event: InstanceEvent) -> Optional["asyncio.Future[None]"]:
        """Takes the gate for `event` (holds + 1) or queues it; the future resolves at its turn."""
        if self._may_take(event):
            self._holder = event
            self._holds += 1
            return None
        return self._enqueue(event, "call")

    async def _held_when(self, turn: Optional["asyncio.Future[None]"], fn: Callable[[], Awaitable[T]]) -> T:
        if turn is not None:
            await turn
            self._holds += 1
        return await self._release_after(fn)

    def cancel_all(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.future.done():
                waiter.future.set_exception(DeliveryCancelledError("retired"))

    def _may_take(self, event: InstanceEvent) -> bool:
        if self._holder is event:
            return True
        return self._holder is None and (not self._waiting or self._delivered is event)

    async def _release_after(self, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            return await fn()
        finally:
            self._holds -= 1
            if self._holds == 0:
                self._schedule_step()

    def _enqueue(self, event: InstanceEvent, kind: Literal["call", "delivery"]) -> "asyncio.Future[None]":
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter = _Waiter(event, kind, future)
        self._waiting.append(waiter)

        def on_done(f: "asyncio.Future[None]") -> None:
            # A waiter whose task went away (client disconnected) leaves the queue.
            if f.cancelled() and waiter in self._waiting:
                self._waiting.remove(waiter)

        future.add_done_callback(on_done)
        if self._holder is None:
            self._schedule_step()
        return future

    def _schedule_step(self) -> None:
        if self._step_scheduled:
            return
        self._step_scheduled = True
        asyncio.get_running_loop().call_soon(self._step)

    def _step(self) -> None:
        self._step_scheduled = False
        self._delivered = None
        if self._holds == 0:
            self._holder = None
        self._serve_next()

    def _serve_next(self) -> None:
        if self._holder is not None:
            return
        while self._waiting and self._waiting[0].future.done():
            self._waiting.pop(0)
        if not self._waiting:
            return
        nxt = self._waiting.pop(0)
        if nxt.kind == "delivery":
            self._delivered = nxt.event
            nxt.future.set_result(None)
            self._schedule_step()
            return
        self._holder = nxt.event
        own = [w for w in self._waiting if w.kind == "call" and w.event is nxt.event]
        if own:
            self._waiting = [w for w in self._waiting if w not in own]
        # Keep the gate taken until the resumed calls' tasks ran (they are scheduled before this).
        self._holds += 1
        for waiter in [nxt, *own]:
            if not waiter.future.done():
                waiter.future.set_result(None)
        asyncio.get_running_loop().call_soon(self._unhold_resumed)

    def _unhold_resumed(self) -> None:
        self._holds -= 1
        if self._holds == 0:
            self._schedule_step()


def run_as(event: InstanceEvent) -> Any:
    """Sets the current event; returns the token to reset."""
    return current_event.set(event)
