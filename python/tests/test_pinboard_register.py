"""Register, the challenge probe and the Counter through a real Pinboard."""

from __future__ import annotations

import asyncio

import aiohttp

from tests.conftest import MakeWorker
from tests.support.instances import Counter
from tests.support.pinboard_calls import call, call_placed, registry
from tests.support.processes import PinboardServer


async def test_register_answers_the_challenge_probe(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/reg": Counter}, client_id="py-register")
    assert worker.session_id is not None
    workers = (await registry(http, pinboard.url, operator_token, "GET", "workers")).json()["workers"]
    mine = [w for w in workers if w["sessionId"] == worker.session_id]
    assert [(w["clientId"], w["advertiseUrl"], w["namespaces"]) for w in mine] == [("py-register", worker.advertise_url, ["/reg"])]

    pair = worker.challenge.current
    assert pair is not None
    url = f"{worker.advertise_url}/_pinned/challenge?challenge={pair.challenge}"
    ok = await call(http, "GET", url, headers={"Pinboard-Proxy-Secret": worker.secret})
    assert (ok.status, ok.json()) == (200, {"value": pair.challenge_value})
    stale = await call(http, "GET", f"{worker.advertise_url}/_pinned/challenge?challenge=other", headers={"Pinboard-Proxy-Secret": worker.secret})
    assert (stale.status, stale.json()) == (404, {"detail": "unknown challenge"})
    no_secret = await call(http, "GET", url)
    assert (no_secret.status, no_secret.json()) == (403, {"detail": "invalid proxy secret"})
    wrong = await call(http, "GET", url, headers={"Pinboard-Proxy-Secret": worker.secret + "x"})
    assert (wrong.status, wrong.json()) == (403, {"detail": "invalid proxy secret"})


async def test_heartbeats_keep_the_session_and_rotate_nothing(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/reg": Counter}, client_id="py-heartbeat")
    session = worker.session_id
    first_renewal = worker.registration.lease.last_renewal_at
    await asyncio.sleep(pinboard.lease_ttl_ms / 1000 * 1.5)
    assert worker.session_id == session
    assert worker.registration.lease.last_renewal_at is not None and first_renewal is not None
    assert worker.registration.lease.last_renewal_at > first_renewal
    assert worker.registration.lease.healthy() and not worker.registration.lease.lapsed()


async def test_counter_is_exact_under_200_concurrent_increments(make_worker: MakeWorker, pinboard: PinboardServer, http: aiohttp.ClientSession) -> None:
    await make_worker({"/counter200": Counter}, client_id="py-counter")
    base = f"{pinboard.url}/counter200/c200"
    warm = await call_placed(http, "GET", base)
    assert warm.status == 200, warm.text
    # Another id of the same bucket (one shard), never activated: all 200 race on its first load.
    answers = await asyncio.gather(*(call(http, "POST", f"{pinboard.url}/counter200/fresh/increment") for _ in range(200)))
    assert sorted(a.status for a in answers) == [200] * 200, [a.text for a in answers if a.status != 200][:3]
    counts = sorted(a.json()["count"] for a in answers)
    assert counts == list(range(1, 201))
    final = await call(http, "GET", f"{pinboard.url}/counter200/fresh")
    assert final.json()["count"] == 200


async def test_stats_need_an_attestation(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/statsns": Counter}, client_id="py-stats")
    assert (await call_placed(http, "GET", f"{pinboard.url}/statsns/s1")).status == 200
    stats = (await registry(http, pinboard.url, operator_token, "GET", "stats")).json()["workers"]
    mine = next(w for w in stats if w["sessionId"] == worker.session_id)["stats"]
    assert set(mine) >= {"version", "draining", "leaseFlaps", "reregistrations", "leaseHealthy", "degraded", "headroom", "process", "namespaces", "instances"}
    assert set(mine["process"]) == {"uptimeMs", "rssBytes", "cpuPercent"}
    assert mine["namespaces"] == {"/statsns": {"instances": 1, "inflight": 0, "sockets": 0}}
    assert [(i["ns"], i["id"], i["state"]) for i in mine["instances"]] == [("/statsns", "s1", "active")]
    direct = await call(http, "GET", f"{worker.advertise_url}/_pinned/stats")
    assert (direct.status, direct.json()) == (403, {"detail": "invalid attestation"})


async def test_stop_during_the_first_register_leaves_no_session(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/early": Counter}, start=False, client_id="py-stopped-early")
    starting = asyncio.ensure_future(worker.start())
    while worker.registration.registering() is None:
        await asyncio.sleep(0)
    await worker.stop()
    try:
        await starting
        raise AssertionError("start() resolved although the worker was stopped")
    except RuntimeError as err:
        assert str(err) == "the worker was stopped before it registered"
    workers = (await registry(http, pinboard.url, operator_token, "GET", "workers")).json()["workers"]
    assert [w for w in workers if w["clientId"] == "py-stopped-early"] == []
