"""The README's Counter, in Python: /usr/bin/python3 python/examples/counter.py

Environment: PINBOARD_URL, PINBOARD_WORKER_TOKEN (pinboard:worker scope), CLIENT_ID (one per
process), PORT (default 9001), HOST (default 127.0.0.1), ADVERTISE_URL (default the listener's), NAMESPACE
(default /counter), DURABLE_REDIS_URL (when set, the count is kept in that Redis with
RedisDurabilityStore, shared with JS workers; else in process memory).
SIGTERM/SIGINT drain, hand the instances over and deregister.

    GET  /counter/{id}            → {"count", "epoch"}
    POST /counter/{id}/increment  → adds one, answers the new count
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Optional

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pinned import (  # noqa: E402
    InstanceContext,
    RequestContext,
    WorkerOptions,
    create_worker,
    serve_until_signal,
)


class Counter:
    def __init__(self, ctx: InstanceContext) -> None:
        self.count: Optional[int] = None

    async def fetch(self, request: web.Request, ctx: RequestContext) -> web.Response:
        if self.count is None:
            stored = await ctx.storage.get("count")
            if self.count is None:  # in memory from here on; storage is written through
                self.count = stored or 0
        if request.method == "POST" and ctx.path == "/increment":
            self.count += 1
            ctx.storage.put("count", self.count)  # the answer waits for this write (output gate)
        return web.json_response({"count": self.count, "epoch": ctx.epoch})


async def main() -> int:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "WARNING"), format="[pinned] %(message)s")
    durable_url = os.environ.get("DURABLE_REDIS_URL")
    store = None
    if durable_url:  # python3-redis is needed only then
        from pinned import RedisDurabilityStore

        store = RedisDurabilityStore(url=durable_url)
    worker = create_worker(
        WorkerOptions(
            pinboard_url=os.environ["PINBOARD_URL"],
            credential=os.environ["PINBOARD_WORKER_TOKEN"],
            client_id=os.environ.get("CLIENT_ID"),
            advertise_url=os.environ.get("ADVERTISE_URL"),
            namespaces={os.environ.get("NAMESPACE", "/counter"): Counter},
            durability=store,
        )
    )
    url = await worker.listen(host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "9001")))
    await worker.start()
    print(f"serving {url} as {worker.client_id} session {worker.session_id}", flush=True)
    try:
        return await serve_until_signal(worker, grace_ms=float(os.environ.get("GRACE_MS", "10000")))
    finally:
        if store is not None:
            await store.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
