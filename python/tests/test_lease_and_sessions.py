"""The lease as a real Pinboard renews it: lapse refusals, renewal after a lapse, session loss, heartbeat 403."""

from __future__ import annotations

import asyncio

from typing import Callable

import aiohttp

from pinned import Worker
from tests.conftest import MakeWorker
from tests.support.instances import Echo
from tests.support.pinboard_calls import call
from tests.support.processes import PinboardServer, mint_credential
from tests.support.tokens import forward_headers
from tests.test_worker_calls import forward, refused


async def wait_for(predicate: Callable[[], bool], timeout_s: float = 10) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_a_lapsed_lease_refuses_everything_and_its_renewal_retires_every_activation(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/lapse": Echo})
    assert (await forward(http, worker, "GET", "/lapse/served", "50")).status == 200
    assert (await forward(http, worker, "GET", "/lapse/idle", "50")).status == 200
    headers = forward_headers(worker.secret, worker.session_id, "GET", "/lapse/sock", "50")
    async with http.ws_connect(f"{worker.advertise_url}/lapse/sock", headers=headers) as ws:
        worker.registration.paused = True  # no heartbeat leaves: a process paused past its lease
        await wait_for(worker.registration.lease.lapsed)
        assert refused(await forward(http, worker, "GET", "/lapse/served", "50"), "lease lapsed")
        assert worker.table.get("/lapse", "served") is None
        assert refused(await forward(http, worker, "GET", "/lapse/new", "50"), "lease unhealthy")
        await ws.send_str("after the lapse")
        closed = await ws.receive(timeout=5)
        assert (closed.type, closed.data, closed.extra) == (aiohttp.WSMsgType.CLOSE, 1012, "lease lapsed")
    assert worker.table.get("/lapse", "idle") is not None
    worker.registration.paused = False
    await worker.registration.heartbeat_now()
    assert not worker.registration.lease.lapsed() and worker.registration.lease.healthy()
    assert worker.instances() == []
    assert worker.registration.reregistrations == 0
    # The retired activations' epochs ended here; a higher one is served afresh.
    assert refused(await forward(http, worker, "GET", "/lapse/idle", "50"), "placement epoch ended here")
    assert (await forward(http, worker, "GET", "/lapse/idle", "51")).status == 200


async def test_a_lost_session_re_registers_from_the_heartbeat_path(make_worker: MakeWorker, pinboard: PinboardServer, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/lost": Echo})
    old = worker.session_id
    worker.registration.paused = True
    await asyncio.sleep(pinboard.lease_ttl_ms / 1000 + 0.5)  # Pinboard counts the session dead
    assert worker.session_id == old  # nothing but a heartbeat re-registers
    worker.registration.paused = False
    await worker.registration.heartbeat_now()
    assert worker.session_id not in (None, old)
    assert worker.registration.reregistrations == 1
    # Forwards signed for the lost session are still accepted for 5 s.
    old_aud = forward_headers(worker.secret, old, "GET", "/lost/x", "60")
    answer = await call(http, "GET", f"{worker.advertise_url}/lost/x", headers=old_aud)
    assert answer.status == 200, answer.text


async def test_a_heartbeat_403_is_retried_with_the_same_session(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker: Worker = await make_worker({"/forbid": Echo})
    session = worker.session_id
    calls = worker.registration._calls
    good = calls._credential
    calls._credential = mint_credential("pinboard:worker", sub="another-account")
    await worker.registration.heartbeat_now()  # 403 forbidden: logged, retried later
    assert worker.registration.failures == 1
    assert worker.session_id == session and worker.registration.reregistrations == 0
    calls._credential = good
    await worker.registration.heartbeat_now()
    assert worker.registration.failures == 0
    assert worker.session_id == session and worker.registration.reregistrations == 0
    assert worker.registration.lease.healthy()
