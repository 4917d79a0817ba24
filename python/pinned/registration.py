"""The registration loop (mirrors src/pinned/registration.ts).

Register with a fresh challenge, heartbeat every TTL / 3 (jittered exponential backoff after a
failure), and re-register only from the heartbeat path when Pinboard answers 409 reregister or
superseded, offering the resident instances and the previous session for reclaim. A heartbeat 403
is retried with the same session. Release and deregister give up after three tries.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Optional

from .challenge import ChallengeState
from .client_id_clash import ClientIdClash
from .control_messages import MessageLedger
from .lease import Lease
from .registration_hooks import RegistrationFields, RegistrationHooks, is_fatal
from .registry_calls import PinboardAnswer, RegistryCalls, backoff_ms

log = logging.getLogger("pinned")

RETIRED_SESSION_GRACE_MS = 5000


class Registration:
    def __init__(
        self,
        calls: RegistryCalls,
        challenge: ChallengeState,
        fields: RegistrationFields,
        hooks: RegistrationHooks,
        now_ms: Callable[[], float],
        lease_unhealthy_after_ms: Optional[float] = None,
    ) -> None:
        self._calls = calls
        self._challenge = challenge
        self._fields = fields
        self._hooks = hooks
        self._now = now_ms
        self.lease = Lease(now_ms, lease_unhealthy_after_ms)
        self.session_id: Optional[str] = None
        self.prev_session_id: Optional[str] = None
        self._retired: Optional[tuple[str, float]] = None
        self.operator_draining = False
        self.degraded = False
        self.drain_deadline: Optional[float] = None
        self.reregistrations = 0
        self.paused = False
        """Tests: while set, no heartbeat is sent (a stand-in for a process paused past its lease)."""
        self._drain_ends_at: Optional[float] = None
        self._started = False
        self._stopped = False
        self._halted = False
        self._failures = 0
        self._loop_task: Optional[asyncio.Task[None]] = None
        self._wake = asyncio.Event()
        self._beat_lock = asyncio.Lock()
        self._answering: Optional[asyncio.Future[None]] = None
        self._ledger = MessageLedger()
        self._clash = ClientIdClash(fields.client_id)
        self._backoff_until = 0.0
        """No re-register before this (ms): another live process holds the clientId."""

    @property
    def failures(self) -> int:
        """Heartbeats failed in a row (no answer, or one other than 200 and 409)."""
        return self._failures

    def interval_ms(self) -> float:
        return max(50, self.lease.ttl_ms // 3)

    def registering(self) -> Optional["asyncio.Future[None]"]:
        """The register under way, settling once its answer is applied, or None."""
        return self._answering

    def retired_session_id(self) -> Optional[str]:
        if self._retired is not None and self._now() < self._retired[1]:
            return self._retired[0]
        return None

    def _retire(self, session_id: str) -> None:
        self._retired = (session_id, self._now() + RETIRED_SESSION_GRACE_MS)

    async def start(self) -> None:
        if self._started:
            raise RuntimeError("the worker was already started")
        self._started = True
        self.lease.held = True
        attempt = 0
        while True:
            if self._stopped:
                raise RuntimeError("the worker was stopped before it registered")
            try:
                await self._register()
            except Exception as err:
                if is_fatal(err):
                    self._stopped = True
                    self.lease.held = False
                    raise
                delay = backoff_ms(attempt, 250, 5000)
                attempt += 1
                log.warning("register failed, retrying attempt=%d retryInMs=%d: %s", attempt, delay, err)
                await asyncio.sleep(delay / 1000)
                continue
            if self._stopped:
                # stop() ran while this register was in flight: do not leave the session behind.
                await self._deregister()
                await self._calls.close()
                raise RuntimeError("the worker was stopped before it registered")
            break
        self._loop_task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        delay = self.interval_ms()
        while not (self._stopped or self._halted):
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), delay / 1000)
            except asyncio.TimeoutError:
                pass
            if self._stopped or self._halted:
                return
            delay = await self._tick()

    async def _tick(self) -> float:
        async with self._beat_lock:
            try:
                next_ms = await self._beat()
                self._failures = 0
                return next_ms
            except Exception as err:
                delay = backoff_ms(self._failures, 250, self.interval_ms())
                self._failures += 1
                log.warning("heartbeat failed, retrying failures=%d retryInMs=%d: %s", self._failures, delay, err)
                self.lease.healthy()
                return delay

    async def heartbeat_now(self) -> None:
        if not self._started or self._stopped:
            return
        await self._tick()

    def halt(self) -> None:
        self._halted = True
        self._wake.set()

    def abandon(self) -> None:
        self.halt()
        self._stopped = True
        self.lease.held = False
        if self.session_id:
            self._retire(self.session_id)
        self.session_id = None

    async def stop(self) -> None:
        if self._stopped and self.session_id is None:
            return
        self._stopped = True
        self.lease.held = False
        self._wake.set()
        async with self._beat_lock:
            await self._deregister()
        if self._loop_task is not None:
            await asyncio.gather(self._loop_task, return_exceptions=True)
        if self._answering is not None:
            return  # start()'s register is in flight: start() deregisters its session and closes the client
        await self._calls.close()

    async def _deregister(self) -> None:
        session_id, self.session_id = self.session_id, None
        if session_id:
            self._retire(session_id)
            await self._calls.tries("deregister", {"sessionId": session_id})

    async def release(self, items: list[tuple[str, str, str]]) -> bool:
        """Releases (ns, id, epoch) placements; False when it gave up after three tries."""
        session_id = self.session_id
        if not session_id or not items:
            return False
        body = [{"sessionId": session_id, "namespace": ns, "id": id_, "epoch": epoch} for ns, id_, epoch in items]
        return await self._calls.tries("release", body) is not None

    async def _beat(self) -> float:
        if self._stopped or self._halted or self.paused:
            return self.interval_ms()
        if not self.session_id:
            if self._loop_task is None:
                return self.interval_ms()  # start() is still registering: only it registers now
            wait_ms = self._backoff_until - self._now()
            if wait_ms > 0:
                return wait_ms
            await self._reregister()
            return self.interval_ms()
        pair = self._challenge.current
        assert pair is not None
        acks = self._ledger.acks()
        sent_at = self._now()
        body: dict[str, Any] = {
            "sessionId": self.session_id,
            "headroom": self._headroom(),
            "draining": self._hooks.own_draining(),
            "challenge": pair.challenge,
            "challengeValue": pair.challenge_value,
        }
        if acks:
            body["acks"] = acks
        answer = await self._calls.post("heartbeat", body)
        if answer.status == 200:
            self._ledger.acked(acks)
            if self._renewed(answer.body, sent_at):
                self._hooks.lapsed_lease_renewed()
            self._clash.renewed()
            return self.interval_ms()
        if answer.status == 409 and self._drain_ends_at is not None and self._now() >= self._drain_ends_at - 1000:
            self._hooks.drain_deadline_passed()
            return self.interval_ms()
        if answer.status == 409 and (answer.body.get("reregister") is True or answer.body.get("superseded") is True):
            backoff = self._lost(answer.body.get("error"))
            self.prev_session_id = self.session_id
            self._retire(self.session_id)
            self.session_id = None
            if backoff > 0:
                return backoff
            await self._reregister()
            return self.interval_ms()
        raise self._calls.failure("heartbeat", answer)

    def _lost(self, error: object) -> float:
        """Logs a lost session; how long to wait before re-registering (0: at once)."""
        delay_ms, message = (
            self._clash.lost(not self.lease.lapsed(), self.interval_ms(), self.lease.ttl_ms)
            if error == "unknown session"
            else (0.0, None)
        )
        if message is None:
            log.warning("session lost, re-registering: %s", error)
            return 0
        self._backoff_until = self._now() + delay_ms
        log.warning("session replaced, re-registering later retryInMs=%d: %s", delay_ms, message)
        return delay_ms

    async def _reregister(self) -> None:
        await self._register()
        self.reregistrations += 1

    async def _register(self) -> None:
        loop = asyncio.get_running_loop()
        answering: asyncio.Future[None] = loop.create_future()
        self._answering = answering
        try:
            answer = await self._register_call()
        finally:
            if not answering.done():
                answering.set_result(None)
            if self._answering is answering:
                self._answering = None
        if answer.status == 200 and isinstance(answer.body.get("sessionId"), str):
            return
        raise self._calls.failure("register", answer)

    async def _register_call(self) -> PinboardAnswer:
        pair = self._challenge.rotate()
        prev = self.prev_session_id
        sent_at = self._now()
        body: dict[str, Any] = {
            "clientId": self._fields.client_id,
            "secret": self._fields.secret,
            "namespaces": self._fields.namespaces,
            "advertiseUrl": self._fields.advertise_url(),
            "headroom": self._headroom(),
            "draining": self._hooks.own_draining(),
            "challenge": pair.challenge,
            "challengeValue": pair.challenge_value,
        }
        if prev:
            body["prevSessionId"] = prev
            body["instances"] = self._hooks.instances()
        answer = await self._calls.post("register", body)
        session_id = answer.body.get("sessionId")
        if answer.status != 200 or not isinstance(session_id, str):
            return answer
        self.session_id = session_id
        self.prev_session_id = None
        self._ledger.clear()
        self._renewed(answer.body, sent_at)
        duplicates = answer.body.get("duplicates")
        if isinstance(duplicates, list) and duplicates:
            refs = [(d["ns"], d["id"]) for d in duplicates if isinstance(d, dict) and isinstance(d.get("ns"), str) and isinstance(d.get("id"), str)]
            self._hooks.duplicates(refs)
        return answer

    def _renewed(self, body: dict[str, Any], sent_at: float) -> bool:
        now = self._now()
        lapsed_before = self.lease.renewed(sent_at, body.get("expiresInMs"))
        self.degraded = body.get("degraded") is True
        deadline = body.get("drainDeadline")
        self.drain_deadline = deadline if isinstance(deadline, (int, float)) and not isinstance(deadline, bool) else None
        draining = body.get("draining") is True
        self._drain_ends_at = now + self.drain_deadline * 1000 if draining and self.drain_deadline is not None else None
        self.operator_draining = draining and not self._hooks.own_draining()
        self._hooks.drain(draining, self.drain_deadline)
        for message in self._ledger.receive(body.get("messages"), now):
            self._hooks.message(message, now - sent_at)
        return lapsed_before

    def _headroom(self) -> int:
        value = self._hooks.headroom()
        return max(0, int(value))
