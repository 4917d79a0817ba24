"""Graceful shutdown on SIGTERM/SIGINT (src/pinned/node-signals.ts).

The first signal drains (Pinboard stops placing here), hands the instances over (new requests get
the in-band refusal and are re-placed at once; each instance is released quoting its epoch once
its requests are done, or after grace_ms), deregisters, closes the server. A second signal exits 1.
Returns the exit code: 0 on SIGTERM or a timed drain's end, 130 on SIGINT.
"""

from __future__ import annotations

import asyncio
import os
import signal

from .worker import Worker


async def serve_until_signal(worker: Worker, grace_ms: float = 10_000) -> int:
    loop = asyncio.get_running_loop()
    received: asyncio.Future[int] = loop.create_future()

    def on_signal(signum: int) -> None:
        if received.done():
            os._exit(1)
        received.set_result(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    drained = asyncio.ensure_future(asyncio.shield(worker.drained))
    await asyncio.wait([received, drained], return_when=asyncio.FIRST_COMPLETED)
    if received.done():
        try:
            await worker.drain_self()
        except Exception:  # Pinboard unreachable: stop() still hands over what it can
            pass
        await worker.stop(grace_ms=grace_ms)
    await worker.close_server()
    drained.cancel()
    if received.done():
        return 0 if received.result() == signal.SIGTERM else 130
    return 0
