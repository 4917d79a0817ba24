"""Epochs whose activation ended on this worker (mirrors src/pinned/ended-epochs.ts)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

ENDED_EPOCH_MEMORY_MS = 300_000
ENDED_EPOCH_LIMIT = 100_000


class EndedEpochs:
    """A forward still on its way at an ended epoch must not create the activation afresh."""

    def __init__(
        self, now_ms: Callable[[], float], keep_ms: float = ENDED_EPOCH_MEMORY_MS, limit: int = ENDED_EPOCH_LIMIT
    ) -> None:
        self._now = now_ms
        self._keep_ms = keep_ms
        self._limit = limit
        self._ends: "OrderedDict[str, tuple[int, float]]" = OrderedDict()

    def __len__(self) -> int:
        return len(self._ends)

    def end(self, key: str, epoch: int) -> None:
        previous = self._ends.pop(key, None)
        highest = previous[0] if previous is not None and previous[0] > epoch else epoch
        self._ends[key] = (highest, self._now())
        self._forget_old()

    def ended(self, key: str, epoch: int) -> bool:
        entry = self._ends.get(key)
        return entry is not None and epoch <= entry[0] and self._now() - entry[1] < self._keep_ms

    def _forget_old(self) -> None:
        cutoff = self._now() - self._keep_ms
        while self._ends:
            key, (_, at) = next(iter(self._ends.items()))
            if len(self._ends) <= self._limit and at > cutoff:
                return
            del self._ends[key]
