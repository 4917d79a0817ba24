"""The durability store protocol (mirrors src/pinned/durability.ts method by method).

Values are opaque strings (ctx.storage serialises them as JSON). Every write quotes the writer's
placement epoch and is fenced: a write at an epoch lower than the stored one raises
StaleEpochError and changes nothing; a higher one raises the stored epoch first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Protocol, runtime_checkable


@dataclass(frozen=True)
class InstanceRef:
    ns: str
    id: str


@dataclass(frozen=True)
class ListOptions:
    prefix: Optional[str] = None
    start: Optional[str] = None
    """First key (inclusive)."""
    end: Optional[str] = None
    """Key to stop before (exclusive)."""
    reverse: bool = False
    limit: Optional[int] = None


@dataclass(frozen=True)
class ActivateInfo:
    hostname: Optional[str] = None


@dataclass(frozen=True)
class ActivateResult:
    alarm: Optional[int]
    """The stored alarm's due time in ms, or None."""


StorageWrite = tuple[str, Optional[str]]
"""One write of a committed transaction: (key, value) or (key, None) to delete."""


@runtime_checkable
class DurabilityStore(Protocol):
    """What a store implements (the Redis store is another module's; MemoryDurabilityStore is here)."""

    async def activate(self, ref: InstanceRef, epoch: str, info: Optional[ActivateInfo] = None) -> ActivateResult:
        """Claims the instance at `epoch` (raise a lower stored epoch, accept equal, StaleEpochError when higher)."""
        ...

    async def get(self, ref: InstanceRef, keys: list[str]) -> list[Optional[str]]: ...

    async def list(self, ref: InstanceRef, options: Optional[ListOptions] = None) -> list[tuple[str, str]]:
        """Entries in ascending key order (descending with reverse)."""
        ...

    async def put(self, ref: InstanceRef, epoch: str, entries: list[tuple[str, str]]) -> None: ...

    async def delete(self, ref: InstanceRef, epoch: str, keys: list[str]) -> int:
        """How many of the keys existed."""
        ...

    async def commit(self, ref: InstanceRef, epoch: str, writes: list[StorageWrite]) -> None:
        """A transaction's writes, all or nothing, fenced like put."""
        ...

    async def delete_all(self, ref: InstanceRef, epoch: str) -> None:
        """Drops every key, the alarm and the instance's index entries."""
        ...

    async def set_alarm(self, ref: InstanceRef, epoch: str, at_ms: Optional[int]) -> None: ...

    async def get_alarm(self, ref: InstanceRef) -> Optional[int]: ...

    async def clear_alarm(self, ref: InstanceRef, epoch: str, expected_at_ms: int) -> bool:
        """Clears the alarm only while it is still `expected_at_ms`; True when it did."""
        ...

    async def epoch_of(self, ref: InstanceRef) -> Optional[str]:
        """The stored epoch, or None for an instance never activated."""
        ...

    async def close(self) -> None: ...


class DurabilityUnavailableError(Exception):
    def __init__(self, store: str, reason: str) -> None:
        super().__init__(f"durability store {store}: {reason}")
        self.store = store
        self.reason = reason


class StaleEpochError(Exception):
    """A write or activation quoted an epoch lower than the instance's stored epoch."""

    def __init__(self, quoted: str, stored: str) -> None:
        super().__init__(f"stale placement epoch {quoted}: the instance is held at epoch {stored}")
        self.quoted = quoted
        self.stored = stored


_DIGITS = re.compile(r"[0-9]+")


def is_epoch(value: Optional[str]) -> bool:
    """Digits only (ASCII; `str.isdigit` would take other scripts' digits too)."""
    return isinstance(value, str) and _DIGITS.fullmatch(value) is not None


def compare_epochs(a: str, b: str) -> int:
    x, y = int(a), int(b)
    return -1 if x < y else 1 if x > y else 0


def key_in_range(key: str, options: ListOptions) -> bool:
    # Python compares str by code point: UTF-8 byte order, the order Redis BYLEX uses.
    if options.prefix is not None and not key.startswith(options.prefix):
        return False
    if options.start is not None and key < options.start:
        return False
    if options.end is not None and key >= options.end:
        return False
    return True


def apply_list_options(entries: list[tuple[str, str]], options: Optional[ListOptions] = None) -> list[tuple[str, str]]:
    opts = options or ListOptions()
    out = sorted((e for e in entries if key_in_range(e[0], opts)), key=lambda e: e[0], reverse=opts.reverse)
    if opts.limit is not None:
        out = out[: max(0, opts.limit)]
    return out
