"""wind_down messages, timed operator drains and a graceful stop's hand-over (src/pinned/wind-down.ts).

The deadline counts from when the heartbeat that brought the message was sent (Pinboard rounds
its seconds down), so the instance winds down no later than Pinboard counts the row as free.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Optional

from .control_messages import ControlMessage
from .instance_table import InstanceTable
from .live_instance import LiveInstance

log = logging.getLogger("pinned")

RELEASE_BATCH = 500


class WindDowns:
    def __init__(
        self,
        table: InstanceTable,
        release: Callable[[list[LiveInstance]], Awaitable[bool]],
        drain_deadline_passed: Callable[[], None],
        now_ms: Callable[[], float],
        grace_ms: float,
    ) -> None:
        self._table = table
        self._release = release
        self._drain_deadline_passed = drain_deadline_passed
        self._now = now_ms
        self._grace_ms = grace_ms
        self._pending: dict[str, tuple[asyncio.TimerHandle, LiveInstance]] = {}
        self._drain_timer: Optional[tuple[asyncio.TimerHandle, float]] = None

    def handle(self, message: ControlMessage, since_sent_ms: float = 0) -> None:
        if message.type != "wind_down":
            log.warning("unknown control message acked type=%s", message.type)
            return
        key = f"{message.ns}/{message.id}"
        existing = self._pending.pop(key, None)
        if existing is not None:
            existing[0].cancel()
        if message.deadline is None:
            if existing is not None:
                log.info("wind-down revoked ns=%s id=%s", message.ns, message.id)
            return
        live = self._table.get(message.ns, message.id)
        if live is None:
            return
        delay_ms = max(0.0, message.deadline * 1000 - since_sent_ms)

        def fire() -> None:
            if key in self._pending and self._pending[key][1] is live:
                del self._pending[key]
            asyncio.ensure_future(self.wind_down(live))

        self._pending[key] = (asyncio.get_running_loop().call_later(delay_ms / 1000, fire), live)

    def drain(self, draining: bool, deadline_s: Optional[float]) -> None:
        if not draining or deadline_s is None:
            if self._drain_timer is not None:
                self._drain_timer[0].cancel()
            self._drain_timer = None
            return
        at = self._now() + deadline_s * 1000
        if self._drain_timer is not None and abs(self._drain_timer[1] - at) <= 1500:
            return
        if self._drain_timer is not None:
            self._drain_timer[0].cancel()
        handle = asyncio.get_running_loop().call_later(max(0.0, at - self._now()) / 1000, self._drain_deadline_passed)
        self._drain_timer = (handle, at)

    async def wind_down_all(self) -> None:
        await asyncio.gather(*(self.wind_down(live) for live in self._table.all()))

    async def wind_down(self, live: LiveInstance) -> None:
        try:
            if not await self._table.wind_down(live, self._grace_ms):
                return
            released = await self._release([live])
            log.info("instance wound down ns=%s id=%s epoch=%s released=%s", live.ns, live.id, live.epoch, released)
        except Exception as err:
            log.error("wind-down failed ns=%s id=%s error=%s", live.ns, live.id, err)

    async def hand_over(self, grace_ms: float) -> None:
        """Every instance refuses new requests at once and is released once its requests are done."""
        everything = self._table.all()
        for live in everything:
            live.closing = True
        idle = [live for live in everything if live.inflight == 0]
        busy = [live for live in everything if live.inflight > 0]
        await asyncio.gather(self._release_when_done(idle, grace_ms), *(self._release_when_done([b], grace_ms) for b in busy))

    async def _release_when_done(self, lives: list[LiveInstance], grace_ms: float) -> None:
        try:
            done = await asyncio.gather(*(self._table.wind_down(live, grace_ms) for live in lives))
            current = [live for live, ok in zip(lives, done) if ok]
            for i in range(0, len(current), RELEASE_BATCH):
                batch = current[i : i + RELEASE_BATCH]
                released = await self._release(batch)
                log.info("instances handed over count=%d released=%s", len(batch), released)
        except Exception as err:
            log.error("hand-over failed count=%d error=%s", len(lives), err)

    def cancel_all(self) -> None:
        for handle, _ in self._pending.values():
            handle.cancel()
        self._pending.clear()
        if self._drain_timer is not None:
            self._drain_timer[0].cancel()
        self._drain_timer = None
