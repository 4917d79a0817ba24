"""The example Counter with DURABLE_REDIS_URL (RedisDurabilityStore) through a real Pinboard: killed
with kill -9 and replaced, the other worker carries on from the stored count at a higher epoch."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import aiohttp
import pytest
import redis.asyncio as aioredis

from tests.support.pinboard_calls import call, call_placed, until_served
from tests.support.processes import PinboardServer, RedisServer
from tests.support.worker_process import WorkerProcess, start_worker_process, stop_worker_process
from tests.test_worker_processes import owner_of


@pytest.fixture
def durable_workers(pinboard: PinboardServer, worker_token: str, durable_redis: RedisServer, tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    env = {"DURABLE_REDIS_URL": durable_redis.url}
    workers = [start_worker_process(pinboard.url, worker_token, f"durable-{i}", tmp_path, "/durable", env) for i in range(2)]
    yield workers
    for w in workers:
        stop_worker_process(w)


async def test_kill_9_of_a_durable_counter_keeps_its_count(
    durable_workers: list[WorkerProcess], pinboard: PinboardServer, durable_redis: RedisServer, operator_token: str, http: aiohttp.ClientSession
) -> None:
    url = f"{pinboard.url}/durable/kept"
    first = await call_placed(http, "POST", f"{url}/increment")
    assert first.status == 200, first.text
    for expected in (2, 3):
        answer = await call(http, "POST", f"{url}/increment")
        assert (answer.status, answer.json()["count"]) == (200, expected)
    raw = aioredis.Redis.from_url(durable_redis.url, decode_responses=True)
    assert await raw.hget("pinned:{/durable/kept}:data", "count") == "3"
    assert await raw.hget("pinned:{/durable/kept}:meta", "epoch") == first.json()["epoch"]
    assert await raw.hexists("pinned:{pinned-index}:instances", "/durable/kept")
    owner_session = await owner_of(http, pinboard, operator_token, "/durable", "kept")
    owner = next(w for w in durable_workers if w.session_id() == owner_session)
    owner.proc.kill()
    owner.proc.wait()
    answer = await until_served(http, url, pinboard.lease_ttl_ms / 1000 * 3)
    assert answer.status == 200, answer.text
    assert answer.json()["count"] == 3
    assert int(answer.json()["epoch"]) > int(first.json()["epoch"])
    after = await call(http, "POST", f"{url}/increment")
    assert (after.status, after.json()["count"]) == (200, 4)
    assert await raw.hget("pinned:{/durable/kept}:meta", "epoch") == answer.json()["epoch"]
    await raw.close()
