"""The alarm of one activation (mirrors src/pinned/alarms.ts): at least once, retried 1 s, 2 s, 4 s … six attempts."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable, Literal, Optional

from .durability import DurabilityStore, InstanceRef, StaleEpochError

log = logging.getLogger("pinned")

ALARM_ATTEMPTS = 6
LAPSED_RECHECK_MS = 1000

SweepOutcome = Literal["fired", "not-due", "running"]


@dataclass(frozen=True)
class AlarmInfo:
    retry_count: int
    is_retry: bool


class InstanceAlarm:
    def __init__(
        self,
        store: DurabilityStore,
        ref: InstanceRef,
        epoch: str,
        run: Callable[[AlarmInfo], Awaitable[None]],
        on_stale: Callable[[StaleEpochError], None],
        lapsed: Callable[[], bool],
        now_ms: Callable[[], float],
    ) -> None:
        self._store, self._ref, self._epoch = store, ref, epoch
        self._run, self._on_stale, self._lapsed, self._now = run, on_stale, lapsed, now_ms
        self._at: Optional[int] = None
        self._version = 0
        self._retry_count = 0
        self._retry_at: Optional[float] = None
        self._timer: Optional[asyncio.TimerHandle] = None
        self._firing: Optional["asyncio.Future[bool]"] = None
        self._lock = asyncio.Lock()
        self._stopped = False

    def start(self, at: Optional[int]) -> None:
        self._at = at
        self._arm()

    def get(self) -> Optional[int]:
        return self._at

    async def set(self, at: Optional[float]) -> None:
        due = None if at is None else int(at)
        async with self._lock:
            await self._guard(self._store.set_alarm(self._ref, self._epoch, due))
            self._at = due
            self._version += 1
            self._retry_count = 0
            self._retry_at = None
            self._arm()

    def forget(self) -> None:
        self._at = None
        self._version += 1
        self._retry_at = None
        self._arm()

    def stop(self) -> None:
        self._stopped = True
        if self._timer:
            self._timer.cancel()
        self._timer = None

    async def sweep(self) -> SweepOutcome:
        """The sweeper's _alarm: fire now if due, or report that the owner's timer is on it."""
        if self._firing is not None:
            return "running"
        return "fired" if await self._fire_if_due() else "not-due"

    async def _guard(self, op: Awaitable[object]) -> object:
        try:
            return await op
        except StaleEpochError as err:
            self._on_stale(err)
            raise

    def _arm(self) -> None:
        if self._timer:
            self._timer.cancel()
        self._timer = None
        if self._stopped or self._firing is not None:
            return
        target = self._retry_at if self._retry_at is not None else self._at
        if target is None:
            return
        delay_s = max(0.0, target - self._now()) / 1000
        self._timer = asyncio.get_running_loop().call_later(min(delay_s, 2**31 / 1000), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._retry_at is not None and self._retry_at > self._now():
            return self._arm()
        self._retry_at = None
        if self._lapsed():
            self._retry_at = self._now() + LAPSED_RECHECK_MS
            return self._arm()
        task = asyncio.ensure_future(self._fire_if_due())
        task.add_done_callback(lambda t: None if t.cancelled() or t.exception() is not None or t.result() else self._arm())

    def _fire_if_due(self) -> "asyncio.Future[bool]":
        if self._firing is not None:
            return self._firing
        at = self._at
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._stopped or at is None or at > self._now():
            done.set_result(False)
            return done
        self._firing = asyncio.ensure_future(self._fire(at))

        def finished(_: "asyncio.Future[bool]") -> None:
            self._firing = None
            self._arm()

        self._firing.add_done_callback(finished)
        return self._firing

    async def _fire(self, at: int) -> bool:
        version, retry_count = self._version, self._retry_count
        try:
            await self._run(AlarmInfo(retry_count, retry_count > 0))
        except StaleEpochError as err:
            self._on_stale(err)
            raise
        except Exception as err:  # the instance's alarm() failed: retried with backoff
            log.error("alarm handler failed ns=%s id=%s attempt=%d error=%s", self._ref.ns, self._ref.id, retry_count + 1, err)
            if retry_count + 1 < ALARM_ATTEMPTS and self._version == version:
                self._retry_count = retry_count + 1
                self._retry_at = self._now() + 1000 * 2**retry_count
                return True
        self._retry_count = 0
        async with self._lock:
            if self._version != version or self._at != at:
                return True
            try:
                await self._guard(self._store.clear_alarm(self._ref, self._epoch, at))
                self._at = None
            except StaleEpochError:
                raise
            except Exception:
                log.warning("alarm clear failed ns=%s id=%s", self._ref.ns, self._ref.id)
                self._retry_at = self._now() + 1000
        return True
