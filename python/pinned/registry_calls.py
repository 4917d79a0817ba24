"""Calls to Pinboard's /registry/* routes (the JS library's pinboard-client.ts and registry-calls.ts)."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from dataclasses import dataclass
from typing import Any, Optional

import aiohttp

log = logging.getLogger("pinned")

TRIES = 3


@dataclass(frozen=True)
class PinboardAnswer:
    status: int
    body: dict[str, Any]


class PinboardCallError(Exception):
    """A call that got no answer (status None) or an answer the caller refuses."""

    def __init__(self, route: str, url: str, status: Optional[int], body: dict[str, Any], cause: str = "") -> None:
        said = f"{status} {body.get('error', '')}".strip() if status is not None else f"no answer ({cause})"
        super().__init__(f"{route}: {said} from {url}")
        self.route = route
        self.status = status
        self.body = body


def backoff_ms(attempt: int, base_ms: float, cap_ms: float) -> float:
    ceiling = min(cap_ms, base_ms * 2 ** min(attempt, 30))
    return round(ceiling * (0.5 + random.random() / 2))


class RegistryCalls:
    def __init__(self, pinboard_url: str, credential: str, timeout_ms: float = 10_000) -> None:
        self.pinboard_url = pinboard_url.rstrip("/")
        self._credential = credential
        self._timeout = aiohttp.ClientTimeout(total=timeout_ms / 1000)
        self._session: Optional[aiohttp.ClientSession] = None

    def url(self, route: str) -> str:
        return f"{self.pinboard_url}/registry/{route}"

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, route: str, body: Any) -> PinboardAnswer:
        """POST /registry/{route}: any HTTP answer; raises PinboardCallError when none came."""
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        headers = {"authorization": f"Bearer {self._credential}", "content-type": "application/json"}
        try:
            async with self._session.post(self.url(route), data=json.dumps(body), headers=headers) as res:
                text = await res.text()
                try:
                    parsed = json.loads(text) if text else {}
                except ValueError:
                    parsed = {}
                return PinboardAnswer(res.status, parsed if isinstance(parsed, dict) else {})
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
            raise PinboardCallError(route, self.url(route), None, {}, repr(err)) from err

    def failure(self, route: str, answer: PinboardAnswer) -> PinboardCallError:
        return PinboardCallError(route, self.url(route), answer.status, answer.body)

    async def tries(self, route: str, body: Any) -> Optional[PinboardAnswer]:
        """Three tries for release and deregister: retried only when no answer or a 5xx came back."""
        for attempt in range(TRIES):
            if attempt > 0:
                await asyncio.sleep(backoff_ms(attempt - 1, 200, 2000) / 1000)
            try:
                answer = await self.post(route, body)
            except PinboardCallError as err:
                log.warning("%s failed attempt=%d: %s", route, attempt + 1, err)
                continue
            if answer.status == 200:
                return answer
            log.warning("%s refused attempt=%d: %s", route, attempt + 1, self.failure(route, answer))
            if answer.status < 500:
                return None
        log.warning("%s: gave up after %d tries url=%s", route, TRIES, self.url(route))
        return None
