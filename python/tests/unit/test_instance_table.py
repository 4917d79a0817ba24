"""The instance table's rules: one activation per (ns, id), the epoch guard, ended epochs, refusals, capacity."""

from __future__ import annotations

from typing import Optional

import pytest

from pinned.durability import StaleEpochError
from pinned.instance_table import InstanceTable, RefusedError, TableDeps
from pinned.memory_durability import MemoryDurabilityStore
from pinned.responses import RefusalReason


class Plain:
    def __init__(self, ctx: object) -> None:
        self.ctx = ctx


class World:
    def __init__(self, max_instances: int = 10) -> None:
        self.now = 0.0
        self.reason: Optional[RefusalReason] = None
        self.is_lapsed = False
        self.store = MemoryDurabilityStore()
        self.table = InstanceTable(
            TableDeps(
                classes={"/ns": Plain},
                store=self.store,
                max_instances=max_instances,
                refusal=lambda: self.reason,
                lapsed=lambda: self.is_lapsed,
                now_ms=lambda: self.now,
            )
        )

    async def acquire(self, id_: str, epoch: str) -> object:
        live = await self.table.acquire("/ns", id_, epoch)
        live.leave()
        return live


async def refusal_of(world: World, id_: str, epoch: str) -> str:
    with pytest.raises(RefusedError) as err:
        await world.acquire(id_, epoch)
    return err.value.reason


async def test_one_activation_per_id_and_the_epoch_guard() -> None:
    w = World()
    first = await w.acquire("a", "10")
    assert await w.acquire("a", "10") is first
    with pytest.raises(StaleEpochError):
        await w.acquire("a", "9")
    higher = await w.acquire("a", "11")
    assert higher is not first and first.state == "retired" and higher.epoch == "11"
    assert len(w.table) == 1
    from pinned.durability import InstanceRef

    assert await w.store.epoch_of(InstanceRef("/ns", "a")) == "11"


async def test_an_ended_epoch_is_refused_in_band_and_a_higher_one_served() -> None:
    w = World()
    live = await w.acquire("a", "10")
    w.table.retire(live)
    assert await refusal_of(w, "a", "10") == "epoch-ended"
    assert await refusal_of(w, "a", "3") == "epoch-ended"
    assert (await w.acquire("a", "12")).epoch == "12"
    w.now += 300_000
    w.table.retire(w.table.get("/ns", "a"))
    w.now += 300_000  # remembered 5 minutes
    assert (await w.acquire("a", "12")).epoch == "12"


async def test_refusals_of_new_activations_keep_resident_ones_serving() -> None:
    w = World(max_instances=1)
    resident = await w.acquire("a", "10")
    assert await refusal_of(w, "b", "10") == "capacity"
    w.reason = "draining"
    assert await refusal_of(w, "c", "10") == "draining"
    assert await w.acquire("a", "10") is resident
    w.reason = "lease-unhealthy"
    assert await refusal_of(w, "a", "11") == "lease-unhealthy"
    assert resident.state == "retired"  # a higher epoch retires the old one even when refused


async def test_a_lapsed_lease_refuses_and_retires_resident_activations() -> None:
    w = World()
    resident = await w.acquire("a", "10")
    w.is_lapsed = True
    assert await refusal_of(w, "a", "10") == "lease-lapsed"
    assert resident.state == "retired" and w.table.get("/ns", "a") is None
    w.is_lapsed = False
    assert await refusal_of(w, "a", "10") == "epoch-ended"


async def test_a_closing_activation_refuses_new_requests() -> None:
    w = World()
    live = await w.acquire("a", "10")
    live.closing = True
    assert await refusal_of(w, "a", "10") == "winding-down"


async def test_a_store_holding_a_higher_epoch_refuses_the_activation() -> None:
    w = World()
    from pinned.durability import InstanceRef

    await w.store.activate(InstanceRef("/ns", "a"), "20")
    with pytest.raises(StaleEpochError):
        await w.acquire("a", "10")
    assert w.table.get("/ns", "a") is None
    assert await refusal_of(w, "a", "10") == "epoch-ended"
