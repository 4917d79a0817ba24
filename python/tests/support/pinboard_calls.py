"""Calls through Pinboard's data plane and operator routes, as a client makes them."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Optional

import aiohttp


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


async def call(session: aiohttp.ClientSession, method: str, url: Any, **kwargs: Any) -> Answer:
    async with session.request(method, url, allow_redirects=False, **kwargs) as res:
        return Answer(res.status, dict(res.headers), await res.text())


async def call_placed(
    session: aiohttp.ClientSession, method: str, url: Any, timeout_s: float = 20, no_backends_too: bool = True, **kwargs: Any
) -> Answer:
    """A data-plane call, retried while Pinboard's cold start (or, unless told, a missing backend) refuses it (503)."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = await call(session, method, url, **kwargs)
        cold = answer.status == 503 and ("cold start" in answer.text or (no_backends_too and "no live backends" in answer.text))
        if not cold or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.2)


async def until_served(session: aiohttp.ClientSession, url: str, timeout_s: float) -> Answer:
    """GETs `url` until it answers 200 (an owner killed: once its lease ran out) or `timeout_s` passed; the last answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = await call(session, "GET", url)
        if answer.status == 200 or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.1)


async def registry(session: aiohttp.ClientSession, pinboard_url: str, token: str, method: str, route: str, body: Optional[Any] = None) -> Answer:
    headers = {"authorization": f"Bearer {token}"}
    kwargs: dict[str, Any] = {"headers": headers}
    if body is not None:
        kwargs["json"] = body
    return await call(session, method, f"{pinboard_url}/registry/{route}", **kwargs)
