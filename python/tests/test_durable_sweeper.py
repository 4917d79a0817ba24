"""Pinboard's sweeper finds a Python instance's alarm through the durability index the Python
RedisDurabilityStore writes: with its worker gone, the alarm fires on another worker, unasked."""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, Iterator

import aiohttp
import pytest
import redis.asyncio as aioredis
from aiohttp import web

from pinned import AlarmInfo, InstanceContext, RedisDurabilityStore, RequestContext, Worker, WorkerOptions, create_worker
from tests.support.pinboard_calls import call_placed
from tests.support.processes import PinboardServer, RedisServer, mint_credential, start_pinboard, start_redis


class Reminder:
    """POST /remind sets the alarm 1.5 s ahead; the alarm hook counts its firings in storage."""

    def __init__(self, ctx: InstanceContext) -> None:
        self.ctx = ctx

    async def fetch(self, request: web.Request, ctx: RequestContext) -> web.Response:
        if ctx.path == "/remind":
            ctx.set_alarm(time.time() * 1000 + 1500)
        return web.json_response({"epoch": ctx.epoch})

    async def alarm(self, ctx: InstanceContext, info: AlarmInfo) -> None:
        ctx.storage.put("fired", (await ctx.storage.get("fired") or 0) + 1)


@pytest.fixture(scope="module")
def sweeping_pinboard(durable_redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PinboardServer]:
    """A Pinboard of its own (own Redis) whose sweeper reads the durability index every second."""
    redis = start_redis()
    env = {"PINBOARD_DURABLE_REDIS_URL": durable_redis.url, "PINBOARD_DURABLE_PREFIX": "sweep:", "PINBOARD_SWEEP_INTERVAL_MS": "1000"}
    server = start_pinboard(redis.url, 3000, tmp_path_factory.mktemp("sweeping") / "pinboard.log", env)
    yield server
    server.stop()
    redis.stop()


@pytest.fixture
async def workers(sweeping_pinboard: PinboardServer, durable_redis: RedisServer) -> AsyncIterator[list[Worker]]:
    token = mint_credential("pinboard:worker")
    started: list[Worker] = []
    for i in range(2):
        store = RedisDurabilityStore(url=durable_redis.url, prefix="sweep:")
        worker = create_worker(
            WorkerOptions(pinboard_url=sweeping_pinboard.url, credential=token, namespaces={"/remind": Reminder}, durability=store, client_id=f"sweep-{i}")
        )
        await worker.listen()
        await worker.start()
        started.append(worker)
    yield started
    for worker in started:
        try:
            await asyncio.wait_for(worker.stop(), 10)
        except Exception:
            pass
        await worker.close_server()


async def test_the_sweeper_fires_a_python_alarm_found_in_the_index(workers: list[Worker], sweeping_pinboard: PinboardServer, durable_redis: RedisServer) -> None:
    raw = aioredis.Redis.from_url(durable_redis.url, decode_responses=True)
    async with aiohttp.ClientSession() as http:
        answer = await call_placed(http, "POST", f"{sweeping_pinboard.url}/remind/r1/remind")
    assert answer.status == 200, answer.text
    owner = next(w for w in workers if w.table.get("/remind", "r1") is not None)
    other = next(w for w in workers if w is not owner)
    await owner.stop()  # hands the instance back before its alarm is due; the alarm stays in Redis
    await owner.close_server()
    assert other.table.get("/remind", "r1") is None
    deadline = time.monotonic() + 20
    while await raw.hget("sweep:{/remind/r1}:data", "fired") is None:
        assert time.monotonic() < deadline, "the sweeper never fired the alarm"
        await asyncio.sleep(0.2)
    assert await raw.hget("sweep:{/remind/r1}:data", "fired") == "1"
    assert other.table.get("/remind", "r1") is not None  # activated by the sweeper's _alarm call
    assert await raw.zscore("sweep:{pinned-index}:alarms", "/remind/r1") is None
    assert await raw.hget("sweep:{/remind/r1}:meta", "alarm") is None
    await raw.close()
