"""ctx.storage over the memory store: the calls, transactions, limits, is_current."""

from __future__ import annotations

from typing import Any

import pytest

from pinned.durability import InstanceRef
from pinned.instance_table import InstanceTable, TableDeps
from pinned.live_instance import LiveInstance
from pinned.memory_durability import MemoryDurabilityStore
from pinned.storage import Transaction


class Plain:
    def __init__(self, ctx: object) -> None:
        self.ctx = ctx


class CountingStore(MemoryDurabilityStore):
    def __init__(self) -> None:
        super().__init__()
        self.commits = 0

    async def commit(self, ref: InstanceRef, epoch: str, writes: list[tuple[str, Any]]) -> None:
        self.commits += 1
        await super().commit(ref, epoch, writes)


async def activation(store: MemoryDurabilityStore, lapsed: list[bool] | None = None) -> tuple[InstanceTable, LiveInstance]:
    flag = lapsed if lapsed is not None else [False]
    table = InstanceTable(
        TableDeps(classes={"/ns": Plain}, store=store, max_instances=5, refusal=lambda: None, lapsed=lambda: flag[0], now_ms=lambda: 0.0)
    )
    live = await table.acquire("/ns", "a", "1")
    live.leave()
    return table, live


async def test_get_put_delete_list() -> None:
    _, live = await activation(MemoryDurabilityStore())
    storage = live.ctx.storage
    await storage.put("a", {"x": [1, 2]})
    await storage.put({"b": 2, "c": "three"})
    assert await storage.get("a") == {"x": [1, 2]}
    assert await storage.get("missing") is None
    assert await storage.get(["a", "b", "missing"]) == {"a": {"x": [1, 2]}, "b": 2}
    assert await storage.list() == {"a": {"x": [1, 2]}, "b": 2, "c": "three"}
    assert list(await storage.list(reverse=True, limit=2)) == ["c", "b"]
    assert await storage.delete("a") is True
    assert await storage.delete("a") is False
    assert await storage.delete(["b", "c", "z"]) == 2
    assert await storage.list() == {}


async def test_limits_refuse_before_the_store() -> None:
    _, live = await activation(MemoryDurabilityStore())
    storage = live.ctx.storage
    with pytest.raises(ValueError, match="storage.get: 129 keys in one call; at most 128 keys per call"):
        await storage.get([str(i) for i in range(129)])
    with pytest.raises(ValueError, match="storage.put: key is empty"):
        await storage.put("", 1)
    with pytest.raises(TypeError, match="storage.get: key is a int; keys are strings"):
        await storage.get(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match='storage.put\\("f"\\): the value is not JSON-serialisable'):
        await storage.put("f", object())
    with pytest.raises(ValueError, match="storage.list: limit is -1"):
        await storage.list(limit=-1)


async def test_a_transaction_commits_once_and_reads_its_own_writes() -> None:
    store = CountingStore()
    _, live = await activation(store)
    storage = live.ctx.storage
    await storage.put({"balance": 30, "pending": 1})

    async def debit(txn: Transaction) -> int:
        balance = await txn.get("balance")
        await txn.put({"balance": balance - 10, "debit:1": 10})
        await txn.delete("pending")
        assert await txn.get("pending") is None
        assert await txn.list(prefix="debit:") == {"debit:1": 10}
        return balance - 10

    assert await storage.transaction(debit) == 20
    assert store.commits == 1
    assert await storage.list() == {"balance": 20, "debit:1": 10}


async def test_a_rolled_back_or_throwing_transaction_writes_nothing() -> None:
    store = CountingStore()
    _, live = await activation(store)
    storage = live.ctx.storage

    async def rolled_back(txn: Transaction) -> str:
        await txn.put("x", 1)
        txn.rollback()
        return "kept"

    assert await storage.transaction(rolled_back) == "kept"

    async def throwing(txn: Transaction) -> None:
        await txn.put("x", 1)
        raise RuntimeError("no")

    with pytest.raises(RuntimeError, match="no"):
        await storage.transaction(throwing)
    assert store.commits == 0 and await storage.get("x") is None
    kept: list[Transaction] = []

    async def keep(txn: Transaction) -> None:
        kept.append(txn)

    await storage.transaction(keep)
    with pytest.raises(RuntimeError, match="transaction.put: the transaction has ended"):
        await kept[0].put("y", 1)


async def test_is_current_is_false_once_retired_or_lapsed() -> None:
    lapsed = [False]
    table, live = await activation(MemoryDurabilityStore(), lapsed)
    assert live.ctx.is_current()
    lapsed[0] = True
    assert not live.ctx.is_current()
    lapsed[0] = False
    table.retire(live)
    assert not live.ctx.is_current()


async def test_a_write_fenced_by_a_newer_epoch_retires_the_activation() -> None:
    store = MemoryDurabilityStore()
    table, live = await activation(store)
    await store.activate(InstanceRef("/ns", "a"), "2")  # a newer owner claimed it
    from pinned.durability import StaleEpochError

    with pytest.raises(StaleEpochError):
        await live.ctx.storage.put("k", 1)
    assert table.get("/ns", "a") is None and live.state == "retired"
    with pytest.raises(StaleEpochError):
        await live.ctx.storage.get("k")  # reads are fenced too
