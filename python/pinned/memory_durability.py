"""A DurabilityStore in process memory with the same fencing (mirrors src/pinned/memory-durability.ts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .durability import (
    ActivateInfo,
    ActivateResult,
    InstanceRef,
    ListOptions,
    StaleEpochError,
    StorageWrite,
    apply_list_options,
    compare_epochs,
)


@dataclass
class _Stored:
    epoch: Optional[str] = None
    alarm: Optional[int] = None
    hostname: str = ""
    data: dict[str, str] = field(default_factory=dict)


class MemoryDurabilityStore:
    """The default store of a worker configured without one: ctx.storage works, nothing survives the process."""

    name = "memory"

    def __init__(self) -> None:
        self._records: dict[InstanceRef, _Stored] = {}

    def _record(self, ref: InstanceRef) -> _Stored:
        return self._records.setdefault(ref, _Stored())

    def _fenced(self, ref: InstanceRef, epoch: str) -> _Stored:
        record = self._record(ref)
        if record.epoch is not None:
            order = compare_epochs(epoch, record.epoch)
            if order < 0:
                raise StaleEpochError(epoch, record.epoch)
            if order == 0:
                return record
        record.epoch = epoch
        return record

    async def activate(self, ref: InstanceRef, epoch: str, info: Optional[ActivateInfo] = None) -> ActivateResult:
        record = self._fenced(ref, epoch)
        if info is not None and info.hostname:
            record.hostname = info.hostname
        return ActivateResult(alarm=record.alarm)

    async def get(self, ref: InstanceRef, keys: list[str]) -> list[Optional[str]]:
        record = self._records.get(ref)
        return [record.data.get(k) if record else None for k in keys]

    async def list(self, ref: InstanceRef, options: Optional[ListOptions] = None) -> list[tuple[str, str]]:
        record = self._records.get(ref)
        return apply_list_options(list(record.data.items()), options) if record else []

    async def put(self, ref: InstanceRef, epoch: str, entries: list[tuple[str, str]]) -> None:
        record = self._fenced(ref, epoch)
        for key, value in entries:
            record.data[key] = value

    async def commit(self, ref: InstanceRef, epoch: str, writes: list[StorageWrite]) -> None:
        record = self._fenced(ref, epoch)
        for key, value in writes:
            if value is None:
                record.data.pop(key, None)
            else:
                record.data[key] = value

    async def delete(self, ref: InstanceRef, epoch: str, keys: list[str]) -> int:
        record = self._fenced(ref, epoch)
        return sum(1 for key in set(keys) if record.data.pop(key, None) is not None)

    async def delete_all(self, ref: InstanceRef, epoch: str) -> None:
        record = self._fenced(ref, epoch)
        record.data.clear()
        record.alarm = None

    async def set_alarm(self, ref: InstanceRef, epoch: str, at_ms: Optional[int]) -> None:
        self._fenced(ref, epoch).alarm = None if at_ms is None else int(at_ms)

    async def get_alarm(self, ref: InstanceRef) -> Optional[int]:
        record = self._records.get(ref)
        return record.alarm if record else None

    async def clear_alarm(self, ref: InstanceRef, epoch: str, expected_at_ms: int) -> bool:
        record = self._fenced(ref, epoch)
        if record.alarm != int(expected_at_ms):
            return False
        record.alarm = None
        return True

    async def epoch_of(self, ref: InstanceRef) -> Optional[str]:
        record = self._records.get(ref)
        return record.epoch if record else None

    async def close(self) -> None:
        return None
