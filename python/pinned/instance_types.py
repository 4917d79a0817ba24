"""What an instance class looks like (the JS library's src/pinned/types.ts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from aiohttp import web

if TYPE_CHECKING:
    from .context import InstanceContext, RequestContext


class Instance(Protocol):
    """An instance object: one per (ns, id) in memory. Only `fetch` is required.

    Optional hooks: `alarm(ctx, info)`, `web_socket_message(socket, message, ctx)`,
    `web_socket_close(socket, code, reason, ctx)`.
    """

    async def fetch(self, request: web.Request, ctx: "RequestContext") -> web.StreamResponse: ...


InstanceClass = Callable[["InstanceContext"], Any]
"""An instance class: called with the InstanceContext; its object has `fetch` and optional hooks."""
