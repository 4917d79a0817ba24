"""An operator's drain reaching the worker through the heartbeat answer, and targets as Pinboard forwards them."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from yarl import URL

from tests.conftest import MakeWorker
from tests.support.instances import Counter, Echo
from tests.support.pinboard_calls import call_placed, registry
from tests.support.processes import PinboardServer
from tests.test_worker_calls import forward, refused


async def test_an_operator_cordon_refuses_new_activations_and_keeps_residents(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/cordon": Counter}, client_id="py-cordon")
    assert (await forward(http, worker, "POST", "/cordon/resident/increment", "70")).status == 200
    drained = await registry(http, pinboard.url, operator_token, "POST", "drain", {"clientId": "py-cordon", "deadline": None})
    assert (drained.status, drained.json()) == (200, {"drained": True})
    await worker.registration.heartbeat_now()
    assert worker.draining and worker.registration.operator_draining
    assert refused(await forward(http, worker, "GET", "/cordon/new", "70"), "worker draining")
    assert (await forward(http, worker, "GET", "/cordon/resident", "70")).json() == {"count": 1, "epoch": "70"}
    stats = worker.stats()
    assert stats["draining"] is True
    undrained = await registry(http, pinboard.url, operator_token, "POST", "undrain", {"clientId": "py-cordon"})
    assert (undrained.status, undrained.json()) == (200, {"revoked": True})
    await worker.registration.heartbeat_now()
    assert not worker.draining
    assert (await forward(http, worker, "GET", "/cordon/new", "71")).status == 200


async def test_own_drain_is_told_to_pinboard_at_once(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/owndrain": Counter}, client_id="py-own-drain")
    await worker.drain_self()
    workers = (await registry(http, pinboard.url, operator_token, "GET", "workers")).json()["workers"]
    assert [w["draining"] for w in workers if w["sessionId"] == worker.session_id] == [True]
    assert worker.draining and not worker.registration.operator_draining
    placed = await call_placed(http, "GET", f"{pinboard.url}/owndrain/x", no_backends_too=False)
    assert (placed.status, placed.json()) == (503, {"error": "no live backends for namespace"})


async def test_a_quote_in_the_query_passes_through_pinboard_either_way(make_worker: MakeWorker, pinboard: PinboardServer, http: aiohttp.ClientSession) -> None:
    await make_worker({"/quotes": Echo})
    for target in ("/quotes/q/x?a='b'", "/quotes/q/x?a=%27b%27"):
        answer = await call_placed(http, "GET", URL(f"{pinboard.url}{target}", encoded=True))
        assert answer.status == 200, (target, answer.text)
        assert answer.json()["path"] == "/x"


async def test_a_timed_drain_ends_the_worker_at_its_deadline(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession, caplog: "pytest.LogCaptureFixture") -> None:
    worker = await make_worker({"/timed": Counter}, client_id="py-timed-drain")
    first = await call_placed(http, "POST", f"{pinboard.url}/timed/t1/increment")
    assert first.status == 200, first.text
    drained = await registry(http, pinboard.url, operator_token, "POST", "drain", {"clientId": "py-timed-drain", "deadline": 1})
    assert drained.status == 200
    await worker.registration.heartbeat_now()
    assert worker.registration.drain_deadline is not None
    await asyncio.wait_for(asyncio.shield(worker.drained), 10)
    assert worker.instances() == [] and worker.session_id is None
    assert 'drained by the operator (clientId "py-timed-drain")' in caplog.text
    overview = (await registry(http, pinboard.url, operator_token, "GET", "overview?ns=/timed")).json()
    assert [e for n in overview["namespaces"] for e in n["entries"]] == []


async def test_two_processes_with_one_clientid_back_off(make_worker: MakeWorker, pinboard: PinboardServer, caplog: "pytest.LogCaptureFixture") -> None:
    pair = [await make_worker({"/clash": Counter}, client_id="py-clash") for _ in range(2)]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 4 * pinboard.lease_ttl_ms / 1000
    while "session replaced, re-registering later" not in caplog.text:
        assert loop.time() < deadline, caplog.text[-2000:]
        await asyncio.sleep(0.01)
    assert 'clientId "py-clash" is held by another live process' in caplog.text
    waiting = [w for w in pair if w.session_id is None]
    assert len(waiting) == 1
    # It waits a heartbeat interval (1 s with a 3 s lease) before registering again.
    await asyncio.sleep(0.5)
    assert waiting[0].session_id is None
