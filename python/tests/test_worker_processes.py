"""Worker processes (the example Counter) under SIGTERM and kill -9, and an operator's wind-down."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Iterator

import aiohttp
import pytest

from tests.conftest import MakeWorker
from tests.support.instances import Counter
from tests.support.pinboard_calls import Answer, call, call_placed, registry
from tests.support.processes import PinboardServer
from tests.support.worker_process import WorkerProcess, start_worker_process, stop_worker_process


async def owner_of(http: aiohttp.ClientSession, pinboard: PinboardServer, token: str, ns: str, id_: str) -> str:
    overview = (await registry(http, pinboard.url, token, "GET", f"overview?ns={ns}")).json()
    owners = [e["sessionId"] for n in overview["namespaces"] for e in n["entries"] if e["id"] == id_]
    assert len(owners) == 1, overview
    return owners[0]


@pytest.fixture
def two_workers(pinboard: PinboardServer, worker_token: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[list[WorkerProcess]]:
    """Two example workers serving a namespace of this test's own (a killed worker stays live at Pinboard for a lease)."""
    name = request.node.name[-20:]
    namespace = "/" + request.node.name.split("_")[1]
    workers = [start_worker_process(pinboard.url, worker_token, f"{name}-{i}", tmp_path, namespace) for i in range(2)]
    yield workers
    for w in workers:
        stop_worker_process(w)


async def test_sigterm_hands_the_instance_over_and_deregisters(two_workers: list[WorkerProcess], pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    url = f"{pinboard.url}/sigterm/handover"
    first = await call_placed(http, "POST", f"{url}/increment")
    assert first.status == 200, first.text
    owner_session = await owner_of(http, pinboard, operator_token, "/sigterm", "handover")
    owner = next(w for w in two_workers if w.session_id() == owner_session)
    other = next(w for w in two_workers if w is not owner)
    owner.proc.send_signal(signal.SIGTERM)
    assert await asyncio.get_running_loop().run_in_executor(None, owner.proc.wait, 20) == 0
    workers = (await registry(http, pinboard.url, operator_token, "GET", "workers")).json()["workers"]
    assert owner_session not in [w["sessionId"] for w in workers]
    second = await call(http, "GET", url)
    # Released at once, so placed on the other worker without waiting for the lease (memory store: count restarts).
    assert second.status == 200, second.text
    assert int(second.json()["epoch"]) > int(first.json()["epoch"])
    assert await owner_of(http, pinboard, operator_token, "/sigterm", "handover") == other.session_id()
    assert "instances handed over count=1 released=True" in owner.output()


async def test_kill_9_is_replaced_once_the_lease_runs_out(two_workers: list[WorkerProcess], pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    url = f"{pinboard.url}/kill/killed"
    first = await call_placed(http, "POST", f"{url}/increment")
    assert first.status == 200, first.text
    owner_session = await owner_of(http, pinboard, operator_token, "/kill", "killed")
    owner = next(w for w in two_workers if w.session_id() == owner_session)
    other = next(w for w in two_workers if w is not owner)
    owner.proc.kill()
    owner.proc.wait()
    statuses: list[int] = []
    answer: Answer
    loop = asyncio.get_running_loop()
    deadline = loop.time() + pinboard.lease_ttl_ms / 1000 * 3
    while True:
        answer = await call(http, "GET", url)
        statuses.append(answer.status)
        if answer.status == 200 or loop.time() > deadline:
            break
        await asyncio.sleep(0.1)
    assert answer.status == 200, (statuses, answer.text)
    assert set(statuses[:-1]) <= {502}
    assert int(answer.json()["epoch"]) > int(first.json()["epoch"])
    assert await owner_of(http, pinboard, operator_token, "/kill", "killed") == other.session_id()


async def test_an_operator_wind_down_retires_and_releases_at_its_deadline(make_worker: MakeWorker, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/wind": Counter}, client_id="py-wind")
    first = await call_placed(http, "POST", f"{pinboard.url}/wind/w1/increment")
    assert first.status == 200, first.text
    queued = await registry(http, pinboard.url, operator_token, "POST", "wind_down", {"namespace": "/wind", "id": "w1", "deadline": 1})
    assert (queued.status, queued.json()) == (200, {"queued": True})
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while worker.table.get("/wind", "w1") is not None:
        assert loop.time() < deadline, "the instance was never wound down"
        await asyncio.sleep(0.05)
    # Released quoting its epoch: the next request places it afresh at once, at a higher epoch.
    overview = (await registry(http, pinboard.url, operator_token, "GET", "overview?ns=/wind")).json()
    assert [e for n in overview["namespaces"] for e in n["entries"] if e["id"] == "w1"] == []
    second = await call(http, "GET", f"{pinboard.url}/wind/w1")
    assert second.status == 200 and int(second.json()["epoch"]) > int(first.json()["epoch"])
