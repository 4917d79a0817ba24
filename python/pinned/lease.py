"""The worker's own view of its lease (mirrors src/pinned/lease.ts).

Pinboard sets the lease to its now + expiresInMs when it handles a register or heartbeat, never
earlier than the worker sent it, so by the worker's clock the lease holds until sent + TTL, less
5 % for clock rates. Unhealthy (refuse new activations) once 2/3 of the TTL passed since the last
renewal; lapsed (serve nothing) past sent + TTL − 5 %.
"""

from __future__ import annotations

import math
from typing import Callable, Optional


def margin_ms(ttl_ms: float) -> int:
    return math.ceil(ttl_ms / 20)


class Lease:
    def __init__(self, now_ms: Callable[[], float], unhealthy_after_ms: Optional[float] = None) -> None:
        self._now = now_ms
        self._unhealthy_after_ms = unhealthy_after_ms
        self.ttl_ms: float = 15_000
        self.last_renewal_at: Optional[float] = None
        self.flaps = 0
        self.held = False
        self._valid_until: Optional[float] = None
        self._unhealthy = False

    def renewed(self, sent_at: float, ttl_ms: object) -> bool:
        """A call sent at `sent_at` was answered 200; True when the lease had lapsed before it."""
        lapsed_before = self.lapsed()
        if isinstance(ttl_ms, (int, float)) and not isinstance(ttl_ms, bool) and ttl_ms > 0:
            self.ttl_ms = ttl_ms
        self.last_renewal_at = self._now()
        self._valid_until = sent_at + self.ttl_ms - margin_ms(self.ttl_ms)
        self.healthy()
        return lapsed_before

    def threshold_ms(self) -> float:
        if self._unhealthy_after_ms is not None:
            return self._unhealthy_after_ms
        return math.floor(self.ttl_ms * 2 / 3)

    def healthy(self) -> bool:
        """True while renewed recently enough to take new activations; counts healthy → unhealthy flaps."""
        if not self.held:
            return True
        last = self.last_renewal_at
        ok = last is not None and self._now() - last <= self.threshold_ms()
        if not ok and not self._unhealthy and last is not None:
            self.flaps += 1
        self._unhealthy = not ok
        return ok

    def lapsed(self) -> bool:
        """True once the lease may have expired at Pinboard: nothing may be served until renewed."""
        return self.held and self._valid_until is not None and self._now() >= self._valid_until
