"""A JS worker (examples/worker.ts) and a Python worker (python/examples/counter.py) serving
/counter on one durability Redis through a real Pinboard: each carries on the other's count after
a kill -9, at a higher epoch."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from typing import Iterator

import aiohttp
import pytest

from tests.support.pinboard_calls import call, call_placed, until_served
from tests.support.processes import REPO_ROOT, PinboardServer, RedisServer, free_port
from tests.support.worker_process import WorkerProcess, start_worker_process, stop_worker_process
from tests.test_worker_processes import owner_of


def start_js_worker(pinboard_url: str, token: str, client_id: str, log_dir: Path, durable_url: str) -> WorkerProcess:
    log_path = log_dir / f"{client_id}.log"
    env = {**os.environ, "PINBOARD_URL": pinboard_url, "PINBOARD_WORKER_TOKEN": token, "CLIENT_ID": client_id, "PORT": str(free_port()), "DURABLE_REDIS_URL": durable_url}
    proc = subprocess.Popen(["node", "--import", "tsx", "examples/worker.ts"], cwd=REPO_ROOT, env=env, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT)
    worker = WorkerProcess(client_id, proc, log_path)
    deadline = time.monotonic() + 60
    while " session " not in worker.output():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"JS worker {client_id} did not register:\n{worker.output()}")
        time.sleep(0.05)
    return worker


def session_of(worker: WorkerProcess) -> str:
    for line in worker.output().splitlines():
        if " session " in line:
            return line.rsplit(" ", 1)[1]
    raise AssertionError("no session line")


@pytest.fixture
def fleet(pinboard: PinboardServer, worker_token: str, durable_redis: RedisServer, tmp_path: Path) -> Iterator[dict[str, list[WorkerProcess]]]:
    env = {"DURABLE_REDIS_URL": durable_redis.url}
    started: dict[str, list[WorkerProcess]] = {"js": [], "py": []}

    def start(kind: str) -> WorkerProcess:
        n = len(started[kind])
        if kind == "js":
            w = start_js_worker(pinboard.url, worker_token, f"mixed-js-{n}", tmp_path, durable_redis.url)
        else:
            w = start_worker_process(pinboard.url, worker_token, f"mixed-py-{n}", tmp_path, "/counter", env)
        started[kind].append(w)
        return w

    start("js")
    start("py")
    started["start"] = start  # type: ignore[assignment]
    yield started
    for kind in ("js", "py"):
        for w in started[kind]:
            stop_worker_process(w)


async def survive_kill(http: aiohttp.ClientSession, pinboard: PinboardServer, operator_token: str, fleet: dict, url: str, count: int) -> str:
    """Kills the owner with kill -9; the survivor answers `count` at a higher epoch. The killed one's kind."""
    before = (await call(http, "GET", url)).json()
    session = await owner_of(http, pinboard, operator_token, "/counter", url.rsplit("/", 1)[1])
    kind, owner = next((k, w) for k in ("js", "py") for w in fleet[k] if w.proc.poll() is None and session_of(w) == session)
    owner.proc.kill()
    owner.proc.wait()
    answer = await until_served(http, url, pinboard.lease_ttl_ms / 1000 * 3)
    assert answer.status == 200, answer.text
    assert answer.json()["count"] == count
    assert int(answer.json()["epoch"]) > int(before["epoch"])
    return kind


async def test_js_and_python_workers_carry_on_each_others_count(fleet: dict, pinboard: PinboardServer, operator_token: str, http: aiohttp.ClientSession) -> None:
    url = f"{pinboard.url}/counter/mixed-{os.getpid()}"
    first = await call_placed(http, "POST", f"{url}/increment")
    assert (first.status, first.json()["count"]) == (200, 1), first.text
    assert (await call(http, "POST", f"{url}/increment")).json()["count"] == 2
    killed = await survive_kill(http, pinboard, operator_token, fleet, url, 2)
    assert (await call(http, "POST", f"{url}/increment")).json()["count"] == 3
    # A new worker of the killed kind; then the survivor dies: the count crosses back.
    await asyncio.get_running_loop().run_in_executor(None, fleet["start"], killed)
    again = await survive_kill(http, pinboard, operator_token, fleet, url, 3)
    assert {killed, again} == {"js", "py"}
    after = await call(http, "POST", f"{url}/increment")
    assert (after.status, after.json()["count"]) == (200, 4)
