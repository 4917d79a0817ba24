"""Input and output gates on the memory store, without a network."""

from __future__ import annotations

import asyncio
from typing import Optional

from pinned.durability import InstanceRef
from pinned.instance_table import InstanceTable, TableDeps
from pinned.live_instance import GateSettings
from pinned.memory_durability import MemoryDurabilityStore


class ReadModifyWrite:
    """Reads the stored value on every event and writes it back plus one: exact only with the input gate."""

    def __init__(self, ctx: object) -> None:
        self.ctx = ctx

    async def fetch(self, request: object, ctx: object) -> int:
        value = await self.ctx.storage.get("n") or 0  # type: ignore[attr-defined]
        self.ctx.storage.put("n", value + 1)  # type: ignore[attr-defined]
        return value + 1


class SlowPuts(MemoryDurabilityStore):
    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def put(self, ref: InstanceRef, epoch: str, entries: list[tuple[str, str]]) -> None:
        await self.release.wait()
        await super().put(ref, epoch, entries)


def table(store: MemoryDurabilityStore, gates: GateSettings) -> InstanceTable:
    return InstanceTable(
        TableDeps(
            classes={"/ns": ReadModifyWrite},
            store=store,
            max_instances=10,
            refusal=lambda: None,
            lapsed=lambda: False,
            now_ms=lambda: 0.0,
            gates=gates,
        )
    )


async def increments(gates: GateSettings, n: int = 200) -> tuple[list[int], Optional[str]]:
    store = MemoryDurabilityStore()
    t = table(store, gates)

    async def one() -> int:
        live = await t.acquire("/ns", "a", "1")
        try:
            return await live.answer(lambda: live.instance.fetch(None, live.ctx))
        finally:
            live.leave()

    answers = await asyncio.gather(*(one() for _ in range(n)))
    return sorted(answers), (await store.get(InstanceRef("/ns", "a"), ["n"]))[0]


async def test_the_input_gate_keeps_read_modify_write_exact() -> None:
    answers, stored = await increments(GateSettings())
    assert answers == list(range(1, 201)) and stored == "200"


async def test_without_the_input_gate_updates_are_lost() -> None:
    answers, stored = await increments(GateSettings(allow_concurrency=True))
    assert stored != "200"


async def test_the_output_gate_holds_the_answer_until_the_write_is_durable() -> None:
    store = SlowPuts()
    t = table(store, GateSettings())
    live = await t.acquire("/ns", "a", "1")
    answering = asyncio.ensure_future(live.answer(lambda: live.instance.fetch(None, live.ctx)))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not answering.done()
    store.release.set()
    assert await answering == 1
    live.leave()


async def test_without_the_output_gate_the_answer_leaves_first() -> None:
    store = SlowPuts()
    t = table(store, GateSettings(allow_unconfirmed=True))
    live = await t.acquire("/ns", "a", "1")
    answering = asyncio.ensure_future(live.answer(lambda: live.instance.fetch(None, live.ctx)))
    for _ in range(20):
        await asyncio.sleep(0)
    assert answering.done()
    store.release.set()
    live.leave()


class FailingPuts(MemoryDurabilityStore):
    async def put(self, ref: InstanceRef, epoch: str, entries: list[tuple[str, str]]) -> None:
        raise ConnectionError("store down")


async def test_a_failed_write_breaks_the_activation() -> None:
    t = table(FailingPuts(), GateSettings())
    live = await t.acquire("/ns", "a", "1")
    try:
        await live.answer(lambda: live.instance.fetch(None, live.ctx))
        raise AssertionError("the answer left although its write failed")
    except ConnectionError:
        pass
    live.leave()
    assert live.output.broken is not None and t.get("/ns", "a") is None
    # Dropped, not ended: the next request at the same epoch activates afresh.
    again = await t.acquire("/ns", "a", "1")
    assert again is not live
    again.leave()


class HangingActivation(MemoryDurabilityStore):
    name = "hanging-store"

    async def activate(self, ref: InstanceRef, epoch: str, info: object = None) -> object:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_an_activation_that_waits_too_long_for_the_store_fails_and_leaves_the_epoch_open() -> None:
    from pinned.durability import DurabilityUnavailableError
    from pinned.instance_table import ActivationError

    t = InstanceTable(
        TableDeps(
            classes={"/ns": ReadModifyWrite},
            store=HangingActivation(),
            max_instances=10,
            refusal=lambda: None,
            lapsed=lambda: False,
            now_ms=lambda: 0.0,
            activation_timeout_ms=50,
        )
    )
    try:
        await t.acquire("/ns", "a", "1")
        raise AssertionError("activated")
    except ActivationError as err:
        assert isinstance(err.cause, DurabilityUnavailableError)
        assert str(err.cause) == "durability store hanging-store: no answer within 50 ms (activationTimeoutMs)"
    assert t.get("/ns", "a") is None
    # Dropped, not ended: the next request tries again at the same epoch.
    again = asyncio.ensure_future(t.acquire("/ns", "a", "1"))
    await asyncio.sleep(0)
    retry = t.get("/ns", "a")
    assert retry is not None
    again.cancel()
    retry.ready.cancel()
    await asyncio.sleep(0)


async def test_a_full_input_queue_refuses_more_events() -> None:
    from pinned.input_gate import QueueFullError

    store = SlowPuts()
    t = table(store, GateSettings(max_queued_events=2))
    live = await t.acquire("/ns", "a", "1")
    first = asyncio.ensure_future(live.answer(lambda: live.instance.fetch(None, live.ctx)))
    await asyncio.sleep(0.01)  # the first holds the gate on its write
    waiting = [asyncio.ensure_future(live.answer(lambda: live.instance.fetch(None, live.ctx))) for _ in range(2)]
    await asyncio.sleep(0)
    try:
        await live.answer(lambda: live.instance.fetch(None, live.ctx))
        raise AssertionError("a third waiting event was admitted")
    except QueueFullError as err:
        assert err.limit == 2
    store.release.set()
    assert sorted([await first, *[await w for w in waiting]]) == [1, 2, 3]
    live.leave()
