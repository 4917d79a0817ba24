"""ctx.storage: JSON values over a DurabilityStore, every write quoting the activation's epoch.

Mirrors src/pinned/storage.ts. Every call is started when it is made (a Future is returned): a
`put` nobody awaits is still written, in call order, and the answer waits for it (output gate).
Reads are fenced too: the stored epoch is read with the values, and a higher one is a
StaleEpochError.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Optional, TypeVar, Union

from .durability import DurabilityStore, InstanceRef, ListOptions, StaleEpochError, apply_list_options, compare_epochs, key_in_range

T = TypeVar("T")

MAX_KEYS_PER_CALL = 128
MAX_KEY_BYTES = 2048
MAX_VALUE_BYTES = 1024 * 1024


@dataclass
class StorageGates:
    read: Callable[[Callable[[], Awaitable[Any]]], "asyncio.Future[Any]"]
    write: Callable[[Callable[[], Awaitable[Any]]], "asyncio.Future[Any]"]
    hold: Callable[[Callable[[], Awaitable[Any]]], "asyncio.Future[Any]"]


def _check_key(call: str, key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{call}: key is a {type(key).__name__}; keys are strings")
    size = len(key.encode("utf-8"))
    if size == 0:
        raise ValueError(f"{call}: key is empty; keys are 1 to {MAX_KEY_BYTES} bytes (UTF-8)")
    if size > MAX_KEY_BYTES:
        raise ValueError(f"{call}: key is {size} bytes; keys are at most {MAX_KEY_BYTES} bytes (UTF-8)")
    return key


def _check_keys(call: str, keys: list[str]) -> list[str]:
    if len(keys) > MAX_KEYS_PER_CALL:
        raise ValueError(f"{call}: {len(keys)} keys in one call; at most {MAX_KEYS_PER_CALL} keys per call")
    return [_check_key(call, k) for k in keys]


def _serialise(call: str, key: str, value: object) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{call}({json.dumps(key)}): the value is not JSON-serialisable") from err
    size = len(text.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise ValueError(f"{call}({json.dumps(key)}): value is {size} bytes as JSON; values are at most {MAX_VALUE_BYTES} bytes (1 MiB)")
    return text


def _failed(err: BaseException) -> "asyncio.Future[Any]":
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_exception(err)
    future.exception()  # marked retrieved: a refused put nobody awaits does not warn
    return future


class EpochStorage:
    def __init__(
        self,
        store: DurabilityStore,
        ref: InstanceRef,
        epoch: str,
        on_stale: Callable[[StaleEpochError], None],
        after_delete_all: Callable[[], None],
        gates: StorageGates,
    ) -> None:
        self._store = store
        self._ref = ref
        self._epoch = epoch
        self._on_stale = on_stale
        self._after_delete_all = after_delete_all
        self._gates = gates

    def _read(self, op: Callable[[], Awaitable[T]]) -> "asyncio.Future[T]":
        async def fenced() -> T:
            value, stored = await asyncio.gather(op(), self._store.epoch_of(self._ref))
            if stored is not None and compare_epochs(stored, self._epoch) > 0:
                err = StaleEpochError(self._epoch, stored)
                self._on_stale(err)
                raise err
            return value

        return self._gates.read(fenced)

    def _write(self, op: Callable[[], Awaitable[T]]) -> "asyncio.Future[T]":
        async def fenced() -> T:
            try:
                return await op()
            except StaleEpochError as err:
                self._on_stale(err)
                raise

        return self._gates.write(fenced)

    def get(self, key_or_keys: Union[str, list[str]]) -> "asyncio.Future[Any]":
        """One key: its value or None. A list: a dict of the keys that exist."""
        many = isinstance(key_or_keys, list)
        try:
            keys = _check_keys("storage.get", key_or_keys) if many else [_check_key("storage.get", key_or_keys)]
        except (TypeError, ValueError) as err:
            return _failed(err)

        async def op() -> Any:
            values = await self._store.get(self._ref, keys)
            if not many:
                return None if values[0] is None else json.loads(values[0])
            return {k: json.loads(v) for k, v in zip(keys, values) if v is not None}

        return self._read(op)

    def put(self, key_or_entries: Union[str, Mapping[str, Any]], value: Any = None) -> "asyncio.Future[None]":
        try:
            items = list(key_or_entries.items()) if isinstance(key_or_entries, Mapping) else [(key_or_entries, value)]
            _check_keys("storage.put", [k for k, _ in items])
            entries = [(k, _serialise("storage.put", k, v)) for k, v in items]
        except (TypeError, ValueError) as err:
            return _failed(err)
        return self._write(lambda: self._store.put(self._ref, self._epoch, entries))

    def delete(self, key_or_keys: Union[str, list[str]]) -> "asyncio.Future[Any]":
        many = isinstance(key_or_keys, list)
        try:
            keys = _check_keys("storage.delete", key_or_keys) if many else [_check_key("storage.delete", key_or_keys)]
        except (TypeError, ValueError) as err:
            return _failed(err)

        async def op() -> Any:
            count = await self._store.delete(self._ref, self._epoch, keys) if keys else 0
            return count if many else count > 0

        return self._write(op)

    def list(self, options: Optional[ListOptions] = None, **kwargs: Any) -> "asyncio.Future[dict[str, Any]]":
        opts = options or ListOptions(**kwargs)
        if opts.limit is not None and (not isinstance(opts.limit, int) or opts.limit < 0):
            return _failed(ValueError(f"storage.list: limit is {opts.limit}; limit must be a non-negative integer"))

        async def op() -> dict[str, Any]:
            return {k: json.loads(v) for k, v in await self._store.list(self._ref, opts)}

        return self._read(op)

    def delete_all(self) -> "asyncio.Future[None]":
        async def op() -> None:
            await self._store.delete_all(self._ref, self._epoch)
            self._after_delete_all()

        return self._write(op)

    def transaction(self, closure: Callable[["Transaction"], Awaitable[T]]) -> "asyncio.Future[T]":
        """Runs `closure` with the input gate held, then applies its writes in one commit, all or nothing."""

        async def run() -> T:
            txn = Transaction(self)
            try:
                result = await closure(txn)
            finally:
                txn.ended = True
            writes = list(txn.buffer.items())
            if txn.rolled_back or not writes:
                return result
            await self._write(lambda: self._store.commit(self._ref, self._epoch, writes))
            return result

        return self._gates.hold(run)

    async def _raw_get(self, keys: list[str]) -> list[Optional[str]]:
        return await self._read(lambda: self._store.get(self._ref, keys))

    async def _raw_list(self, options: ListOptions) -> list[tuple[str, str]]:
        return await self._read(lambda: self._store.list(self._ref, ListOptions(options.prefix, options.start, options.end)))


class Transaction:
    """Buffered writes (the last write of a key wins); reads see them over the stored state."""

    def __init__(self, storage: EpochStorage) -> None:
        self._storage = storage
        self.buffer: dict[str, Optional[str]] = {}
        self.rolled_back = False
        self.ended = False

    def _live(self, call: str) -> None:
        if self.ended or self.rolled_back:
            raise RuntimeError(f"transaction.{call}: the transaction has ended (its closure settled); use ctx.storage or a new transaction")

    async def get(self, key_or_keys: Union[str, list[str]]) -> Any:
        self._live("get")
        many = isinstance(key_or_keys, list)
        keys = _check_keys("transaction.get", key_or_keys) if many else [_check_key("transaction.get", key_or_keys)]
        missing = [k for k in keys if k not in self.buffer]
        stored = dict(zip(missing, await self._storage._raw_get(missing))) if missing else {}
        raw = {k: self.buffer[k] if k in self.buffer else stored.get(k) for k in keys}
        if not many:
            value = raw[keys[0]]
            return None if value is None else json.loads(value)
        return {k: json.loads(v) for k, v in raw.items() if v is not None}

    async def put(self, key_or_entries: Union[str, Mapping[str, Any]], value: Any = None) -> None:
        self._live("put")
        items = list(key_or_entries.items()) if isinstance(key_or_entries, Mapping) else [(key_or_entries, value)]
        _check_keys("transaction.put", [k for k, _ in items])
        for k, v in items:
            self.buffer[k] = _serialise("transaction.put", k, v)
        if len(self.buffer) > MAX_KEYS_PER_CALL:
            raise ValueError(f"transaction.put: the transaction would write {len(self.buffer)} keys; a transaction writes at most {MAX_KEYS_PER_CALL} keys")

    async def delete(self, key_or_keys: Union[str, list[str]]) -> Any:
        self._live("delete")
        many = isinstance(key_or_keys, list)
        keys = _check_keys("transaction.delete", key_or_keys) if many else [_check_key("transaction.delete", key_or_keys)]
        existing = await self.get(keys)
        for k in keys:
            self.buffer[k] = None
        return len(existing) if many else bool(existing)

    async def list(self, options: Optional[ListOptions] = None, **kwargs: Any) -> dict[str, Any]:
        self._live("list")
        opts = options or ListOptions(**kwargs)
        merged = dict(await self._storage._raw_list(opts))
        for k, v in self.buffer.items():
            if not key_in_range(k, opts):
                continue
            if v is None:
                merged.pop(k, None)
            else:
                merged[k] = v
        return {k: json.loads(v) for k, v in apply_list_options(list(merged.items()), opts)}

    def rollback(self) -> None:
        self._live("rollback")
        self.rolled_back = True
