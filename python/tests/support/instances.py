"""Instance classes the tests serve."""

from __future__ import annotations

import asyncio
from typing import Optional

from aiohttp import web

from pinned import InstanceContext, RequestContext


class Counter:
    """The README's Counter."""

    def __init__(self, ctx: InstanceContext) -> None:
        self.count: Optional[int] = None

    async def fetch(self, request: web.Request, ctx: RequestContext) -> web.StreamResponse:
        if self.count is None:
            stored = await ctx.storage.get("count")
            if self.count is None:
                self.count = stored or 0
        if request.method == "POST" and ctx.path == "/increment":
            self.count += 1
            ctx.storage.put("count", self.count)
        if ctx.path == "/slow":
            await asyncio.sleep(float(request.query.get("s", "1")))
        return web.json_response({"count": self.count, "epoch": ctx.epoch})


class Echo:
    """Answers what it saw; accepts WebSockets and echoes their messages."""

    def __init__(self, ctx: InstanceContext) -> None:
        self.ctx = ctx

    async def fetch(self, request: web.Request, ctx: RequestContext) -> web.StreamResponse:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return ctx.accept_websocket(request).response
        return web.json_response({"path": ctx.path, "query": request.query_string, "epoch": ctx.epoch})

    async def web_socket_message(self, socket: object, message: object, ctx: InstanceContext) -> None:
        socket.send(f"echo:{message}")  # type: ignore[attr-defined]
