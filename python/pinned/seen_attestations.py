"""The attestation ids (jti) accepted so far, each once (mirrors src/pinned/seen-attestations.ts).

At most `capacity` ids, bucketed by the whole second their token stops being accepted. Everything
at or below `floor` is refused without a look-up; when the set overflows, the earliest bucket goes
whole and the floor rises to its key, so forgetting an id never reopens its replay.
"""

from __future__ import annotations

import bisect
import math
from typing import Callable, Optional


class SeenAttestations:
    def __init__(self, capacity: int, on_evict: Optional[Callable[[float], None]] = None) -> None:
        self._capacity = capacity
        self._on_evict = on_evict
        self._ids: set[str] = set()
        self._buckets: dict[int, list[str]] = {}
        self._keys: list[int] = []
        self._floor: float = -math.inf

    def __len__(self) -> int:
        return len(self._ids)

    def admit(self, jti: str, deadline: float, now_seconds: float) -> bool:
        """True when `jti` (accepted until `deadline`) is used for the first time now; it is remembered."""
        self._raise_floor(math.floor(now_seconds))
        key = math.ceil(deadline)
        if key <= self._floor or jti in self._ids:
            return False
        self._ids.add(jti)
        if key in self._buckets:
            self._buckets[key].append(jti)
        else:
            self._buckets[key] = [jti]
            bisect.insort(self._keys, key)
        if len(self._ids) > self._capacity:
            self._raise_floor(self._keys[0])
            if self._on_evict:
                self._on_evict(self._floor)
        return True

    def _raise_floor(self, floor: float) -> None:
        if floor <= self._floor:
            return
        self._floor = floor
        dropped = 0
        while dropped < len(self._keys) and self._keys[dropped] <= floor:
            for jti in self._buckets.pop(self._keys[dropped]):
                self._ids.discard(jti)
            dropped += 1
        if dropped:
            del self._keys[:dropped]
