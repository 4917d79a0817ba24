"""MemoryDurabilityStore fencing, SeenAttestations, EndedEpochs, wind-down timing."""

from __future__ import annotations

import asyncio

import pytest

from pinned.control_messages import ControlMessage, MessageLedger
from pinned.durability import InstanceRef, ListOptions, StaleEpochError
from pinned.ended_epochs import EndedEpochs
from pinned.memory_durability import MemoryDurabilityStore
from pinned.seen_attestations import SeenAttestations
from pinned.wind_down import WindDowns

REF = InstanceRef("/ns", "a")


async def test_memory_store_fences_every_write_by_epoch() -> None:
    store = MemoryDurabilityStore()
    await store.activate(REF, "5")
    await store.put(REF, "5", [("k", "1")])
    await store.put(REF, "6", [("k", "2")])
    assert await store.epoch_of(REF) == "6"
    for write in (
        store.put(REF, "5", [("k", "3")]),
        store.delete(REF, "5", ["k"]),
        store.commit(REF, "5", [("k", None)]),
        store.delete_all(REF, "5"),
        store.set_alarm(REF, "5", 1),
        store.activate(REF, "5"),
    ):
        with pytest.raises(StaleEpochError):
            await write
    assert await store.get(REF, ["k"]) == ["2"]
    # Epochs compare as numbers of any length, not as text.
    await store.put(REF, "10", [("k", "4")])
    with pytest.raises(StaleEpochError):
        await store.put(REF, "9", [("k", "5")])
    assert await store.get(REF, ["k"]) == ["4"]


async def test_memory_store_list_and_alarms() -> None:
    store = MemoryDurabilityStore()
    await store.put(REF, "1", [("b", "2"), ("a", "1"), ("c", "3"), ("x", "9")])
    assert await store.list(REF, ListOptions(start="b", end="x")) == [("b", "2"), ("c", "3")]
    assert await store.list(REF, ListOptions(reverse=True, limit=2)) == [("x", "9"), ("c", "3")]
    await store.set_alarm(REF, "1", 1000)
    assert not await store.clear_alarm(REF, "1", 999)
    assert await store.clear_alarm(REF, "1", 1000)
    assert await store.get_alarm(REF) is None


def test_seen_attestations_admit_once_and_never_reopen() -> None:
    seen = SeenAttestations(2)
    assert seen.admit("a", 100, 50) and not seen.admit("a", 100, 50)
    assert seen.admit("b", 101, 50)
    assert seen.admit("c", 102, 50)  # over capacity: the bucket of 100 goes, the floor rises to it
    assert not seen.admit("a", 100, 50)  # forgotten, yet refused
    assert not seen.admit("d", 90, 95)  # past: at or below the floor


def test_ended_epochs_remember_the_highest_for_five_minutes() -> None:
    now = [0.0]
    ended = EndedEpochs(lambda: now[0], limit=2)
    ended.end("k", 5)
    ended.end("k", 3)
    assert ended.ended("k", 5) and ended.ended("k", 1) and not ended.ended("k", 6)
    ended.end("j", 1)
    ended.end("i", 1)  # over the limit: the oldest goes
    assert not ended.ended("k", 5)
    now[0] = 300_000
    assert not ended.ended("i", 1)


def test_the_ledger_hands_a_message_over_once_and_acks_until_acked() -> None:
    ledger = MessageLedger()
    raw = [{"msgId": "1", "type": "wind_down", "ns": "/ns", "id": "a", "deadline": 3}, {"bad": True}]
    assert ledger.receive(raw, 0) == [ControlMessage("1", "wind_down", "/ns", "a", 3)]
    assert ledger.receive(raw, 1) == []
    assert ledger.acks() == ["1"]
    ledger.acked(["1"])
    assert ledger.acks() == []


class FakeTable:
    def __init__(self) -> None:
        self.live = object()

    def get(self, ns: str, id_: str) -> object:
        return self.live


async def test_a_wind_down_deadline_counts_from_the_heartbeat_sending() -> None:
    loop = asyncio.get_running_loop()

    async def release(lives: list[object]) -> bool:
        return True

    wind = WindDowns(FakeTable(), release, lambda: None, lambda: 0.0, 1000)  # type: ignore[arg-type]
    wind.handle(ControlMessage("1", "wind_down", "/ns", "a", 2), since_sent_ms=500)
    handle, _ = wind._pending["/ns/a"]
    assert 1.4 < handle.when() - loop.time() <= 1.5
    wind.handle(ControlMessage("2", "wind_down", "/ns", "a", None))
    assert handle.cancelled() and "/ns/a" not in wind._pending
    wind.cancel_all()


def test_a_clientid_held_by_another_process_backs_off_after_the_second_loss() -> None:
    from pinned.client_id_clash import ClientIdClash

    clash = ClientIdClash("w")
    assert clash.lost(True, 1000, 3000) == (0, None)  # once: maybe Redis lost its data
    delay, message = clash.lost(True, 1000, 3000)
    assert delay == 1000 and message is not None and 'clientId "w" is held by another live process' in message
    assert clash.lost(True, 1000, 3000)[0] == 2000
    assert clash.lost(True, 1000, 3000)[0] == 4000
    assert clash.lost(True, 1000, 3000)[0] == 8000
    assert clash.lost(True, 1000, 3000)[0] == 12000  # capped at four leases
    clash.renewed()
    assert clash.lost(True, 1000, 3000) == (0, None)
    assert clash.lost(False, 1000, 3000) == (0, None)  # lost to expiry: at once
