"""Fixtures: a real redis-server and a real Pinboard Node entry (session-wide), in-process workers per test."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable, Iterator

import aiohttp
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pinned import Worker, WorkerOptions, create_worker  # noqa: E402
from tests.support.processes import PinboardServer, RedisServer, mint_credential, start_pinboard, start_redis  # noqa: E402

LEASE_TTL_MS = 3000


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def durable_redis() -> Iterator[RedisServer]:
    """A redis-server of its own for the durability stores (as DURABLE_REDIS_URL beside Pinboard's REDIS_URL)."""
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pinboard(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PinboardServer]:
    server = start_pinboard(redis_server.url, LEASE_TTL_MS, tmp_path_factory.mktemp("pinboard") / "pinboard.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def worker_token(pinboard: PinboardServer) -> str:
    return mint_credential("pinboard:worker")


@pytest.fixture(scope="session")
def operator_token(pinboard: PinboardServer) -> str:
    return mint_credential("pinboard:operator")


MakeWorker = Callable[..., Awaitable[Worker]]


@pytest.fixture
async def make_worker(pinboard: PinboardServer, worker_token: str) -> AsyncIterator[MakeWorker]:
    """Starts in-process workers (listening on free ports, registered); stops them after the test."""
    workers: list[Worker] = []

    async def make(namespaces: dict[str, object], start: bool = True, **options: object) -> Worker:
        worker = create_worker(
            WorkerOptions(pinboard_url=pinboard.url, credential=worker_token, namespaces=namespaces, **options)  # type: ignore[arg-type]
        )
        workers.append(worker)
        await worker.listen()
        if start:
            await worker.start()
        return worker

    yield make
    for worker in workers:
        try:
            await asyncio.wait_for(worker.stop(), 10)
        except Exception:
            pass
        await worker.close_server()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session
