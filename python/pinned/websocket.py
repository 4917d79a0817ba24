"""Accepted WebSockets of an instance, over aiohttp (the JS library's src/pinned/websocket.ts).

`ctx.accept_websocket(request)` gives a PinnedWebSocket whose `response` the instance returns from
fetch; the route completes the handshake and delivers messages through the instance's input gate.
Sends and closes wait at the output gate, in order.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Optional, Protocol, Union

from aiohttp import web


class SocketSink(Protocol):
    def message(self, socket: "PinnedWebSocket", data: Union[str, bytes]) -> None: ...
    def close(self, socket: "PinnedWebSocket", code: int, reason: str) -> None: ...
    def confirmed(self) -> Awaitable[None]: ...


class PinnedWebSocket:
    def __init__(self, request: web.Request, tags: list[str], sink: SocketSink) -> None:
        self.request = request
        self.tags = tags
        self.attachment: Any = None
        self.response = web.WebSocketResponse()
        self._sink = sink
        self.ready_state = 0  # 0 connecting, 1 open, 2 closing, 3 closed
        self._chain: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()
        self._chain.set_result(None)
        self._close_requested: Optional[tuple[int, str]] = None

    def send(self, data: Union[str, bytes]) -> None:
        """Sent once the writes before it are durable (output gate)."""
        if self.ready_state > 1:
            raise RuntimeError("WebSocket is closed")
        self._after_gate(lambda: self._send_now(data))

    def close(self, code: int = 1000, reason: str = "") -> None:
        if self.ready_state >= 2:
            return
        if self.ready_state == 0:
            self._close_requested = (code, reason)
            return
        self.ready_state = 2
        self._after_gate(lambda: self._close_now(code, reason))

    def _after_gate(self, action: Callable[[], Awaitable[None]]) -> None:
        previous = self._chain

        async def step() -> None:
            await asyncio.wait([previous])
            try:
                await self._sink.confirmed()
            except Exception:
                return  # a failed write: the instance closes its sockets 1011, nothing after the write leaves
            await action()

        self._chain = asyncio.ensure_future(step())

    async def _send_now(self, data: Union[str, bytes]) -> None:
        if self.response.closed:
            return
        if isinstance(data, str):
            await self.response.send_str(data)
        else:
            await self.response.send_bytes(data)

    async def _close_now(self, code: int, reason: str) -> None:
        await self.response.close(code=code, message=reason.encode())

    async def serve(self) -> None:
        """Completes the handshake (already prepared) and delivers messages until the socket closes."""
        self.ready_state = 1
        if self._close_requested is not None:
            code, reason = self._close_requested
            self.close(code, reason)
        async for msg in self.response:
            if msg.type == web.WSMsgType.TEXT:
                self._sink.message(self, msg.data)
            elif msg.type == web.WSMsgType.BINARY:
                self._sink.message(self, msg.data)
        # A close of ours (retire: 1012) may be on its way: let it finish before aiohttp's own
        # end-of-handler close would answer 1000 instead.
        await asyncio.wait([self._chain])
        self.ready_state = 3
        code = self.response.close_code or 1005
        self._sink.close(self, code, "")


async def accept_and_close(request: web.Request, code: int, reason: str) -> web.WebSocketResponse:
    """Accepts the handshake only to close it at once (1008 for a bad attestation)."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    await ws.close(code=code, message=reason.encode())
    return ws


def is_upgrade(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"
