"""create_worker: a worker process's handle (mirrors src/pinned/create-worker.ts).

    worker = create_worker(WorkerOptions(pinboard_url=..., credential=..., namespaces={"/counter": Counter}))
    await worker.listen(port=9001)   # before start(): Pinboard probes this URL
    await worker.start()             # register, then heartbeat
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from typing import Any, Optional
from urllib.parse import urlsplit

from aiohttp import web

from .attestation_guard import AttestationGuard, GuardOptions
from .challenge import ChallengeState
from .control_messages import ControlMessage
from .instance_table import InstanceTable, TableDeps
from .live_instance import LiveInstance
from .memory_durability import MemoryDurabilityStore
from .registration import Registration, RegistrationFields
from .registry_calls import RegistryCalls
from .responses import RefusalReason
from .routes import RouteDeps, build_app
from .seen_attestations import SeenAttestations
from .stats import build_stats
from .wind_down import WindDowns
from .worker_options import WorkerOptions, check_url

log = logging.getLogger("pinned")

NO_ADVERTISE_URL = (
    "start(): no URL to advertise: call listen() first, or set the advertise_url option (where Pinboard reaches this worker)"
)


class Worker:
    def __init__(self, options: WorkerOptions) -> None:
        if not options.credential:
            raise ValueError("create_worker: credential is empty")
        if options.max_instances < 0:
            raise ValueError("create_worker: max_instances must be >= 0")
        self._o = options
        check_url("pinboard_url", options.pinboard_url)
        self.advertise_url = check_url("advertise_url", options.advertise_url) if options.advertise_url else None
        self.base_path = urlsplit(self.advertise_url).path.rstrip("/") if self.advertise_url else ""
        self.client_id = options.client_id or os.environ.get("CLIENT_ID") or f"pinned-{secrets.token_hex(6)}"
        if not 1 <= len(self.client_id) <= 256:
            raise ValueError(f'create_worker: clientId must be a string of 1 to 256 characters, not "{self.client_id}"')
        self.secret = options.secret or secrets.token_urlsafe(32)
        self._own_draining = False
        self._started_at = time.monotonic()
        self._runner: Optional[web.AppRunner] = None
        self.challenge = ChallengeState()
        now = options.now_ms
        self.table = InstanceTable(
            TableDeps(
                classes=dict(options.namespaces),
                store=options.durability or MemoryDurabilityStore(),
                max_instances=options.max_instances,
                refusal=self._refusal,
                lapsed=lambda: self.registration.lease.lapsed(),
                now_ms=now,
                hostname=options.hostname,
                activation_timeout_ms=options.activation_timeout_ms,
                gates=options.gates,
            )
        )
        self.wind_downs = WindDowns(self.table, self._release, self._drain_deadline_passed, now, options.wind_down_grace_ms)
        self.registration = Registration(
            RegistryCalls(options.pinboard_url, options.credential),
            self.challenge,
            RegistrationFields(self.client_id, self.secret, list(options.namespaces), self._advertise),
            _Hooks(self),
            now,
            options.lease_unhealthy_after_ms,
        )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("create_worker: call it inside the event loop that runs the worker (in your async main)") from None
        self.drained: asyncio.Future[None] = loop.create_future()
        """Settles once a timed operator drain reached its deadline and the worker no longer serves."""
        self.app = build_app(
            RouteDeps(
                base_path=self.base_path,
                guard=self._guard(),
                challenge=self.challenge,
                table=self.table,
                namespaces=frozenset(options.namespaces),
                durable=options.durability is not None,
                wake_wait_ms=options.wake_wait_ms,
                stats=self.stats,
            )
        )

    def _guard(self) -> AttestationGuard:
        o = self._o

        def on_evict(floor: float) -> None:
            log.warning("attestation ids forgotten before their tokens expire: tokens expiring by then are refused")

        return AttestationGuard(
            GuardOptions(
                secret=self.secret,
                audiences=lambda: [self.registration.session_id, self.registration.retired_session_id(), o.local_audience],
                registering=self.registration.registering,
                base_path=self.base_path,
                require_binding=o.require_bound_attestation,
                acceptance=o.attestation,
                seen=SeenAttestations(o.max_remembered, on_evict),
                now_seconds=time.time,
            )
        )

    # --- state -------------------------------------------------------------------------------

    @property
    def session_id(self) -> Optional[str]:
        return self.registration.session_id

    @property
    def draining(self) -> bool:
        return self._own_draining or self.registration.operator_draining

    def _refusal(self) -> Optional[RefusalReason]:
        if self.draining:
            return "draining"
        return None if self.registration.lease.healthy() else "lease-unhealthy"

    def _advertise(self) -> str:
        if not self.advertise_url:
            raise RuntimeError(NO_ADVERTISE_URL)
        return self.advertise_url

    def stats(self) -> dict[str, Any]:
        return build_stats(self.table, self.registration, list(self._o.namespaces), lambda: self.draining, self.headroom, self._started_at)

    def instances(self) -> list[tuple[str, str, str]]:
        return [(live.ns, live.id, live.epoch) for live in self.table.all()]

    async def _release(self, lives: list[LiveInstance]) -> bool:
        return await self.registration.release([(live.ns, live.id, live.epoch) for live in lives])

    # --- RegistrationHooks -------------------------------------------------------------------

    def headroom(self) -> int:
        if self._o.headroom is not None:
            return self._o.headroom()
        return max(0, self._o.max_instances - len(self.table))

    def instances_by_ns(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for live in self.table.all():
            if not live.closing:
                out.setdefault(live.ns, []).append(live.id)
        return out

    def duplicates(self, refs: list[tuple[str, str]]) -> None:
        for ns, id_ in refs:
            live = self.table.get(ns, id_)
            if live is not None:
                self.table.retire(live, 1012, "instance placed elsewhere")
        log.info("evicted duplicates count=%d", len(refs))

    def message(self, message: ControlMessage, since_sent_ms: float) -> None:
        self.wind_downs.handle(message, since_sent_ms)

    def drain(self, draining: bool, deadline_s: Optional[float]) -> None:
        self.wind_downs.drain(draining, deadline_s)

    def drain_deadline_passed(self) -> None:
        asyncio.ensure_future(self._end_drained())

    def lapsed_lease_renewed(self) -> None:
        resident = self.table.all()
        for live in resident:
            self.table.retire(live, 1012, "lease lapsed")
        if resident:
            log.warning("lease lapsed before this renewal: instances retired count=%d", len(resident))

    def _drain_deadline_passed(self) -> None:
        self.drain_deadline_passed()

    async def _end_drained(self) -> None:
        if self.drained.done():
            return
        self.registration.halt()
        try:
            await self.wind_downs.wind_down_all()
        finally:
            self._own_draining = True
            self.wind_downs.cancel_all()
            self.registration.abandon()
            self.table.close_all(1001, "worker drained")
        log.warning(
            'drained by the operator (clientId "%s"): the drain deadline passed and this worker no longer serves; '
            'to serve again, start it under another clientId (Pinboard holds the drain of "%s" for 7 days past its deadline)',
            self.client_id, self.client_id,
        )
        if not self.drained.done():
            self.drained.set_result(None)

    # --- lifecycle ---------------------------------------------------------------------------

    async def listen(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serves the app; the advertise URL defaults to this listener's URL."""
        self._runner = web.AppRunner(self.app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError as err:
            await self._runner.cleanup()
            raise OSError(f"listen: port {port} is in use ({err.strerror}); pick another PORT or 0 for a free one") from err
        bound = site._server.sockets[0].getsockname()  # type: ignore[union-attr]
        url = f"http://{host}:{bound[1]}"
        if self.advertise_url is None:
            self.advertise_url = f"{url}{self.base_path}"
        return url

    async def close_server(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def start(self) -> None:
        if not self.advertise_url:
            raise RuntimeError(NO_ADVERTISE_URL)
        await self.registration.start()

    async def drain_self(self) -> None:
        """Sets the own draining flag and tells Pinboard at once."""
        self._own_draining = True
        await self.registration.heartbeat_now()

    async def stop(self, grace_ms: float = 0) -> None:
        """Refuses new work, hands every instance over (release quoting its epoch), then deregisters."""
        told = self.draining
        self._own_draining = True
        self.wind_downs.cancel_all()
        if not told:
            await self.registration.heartbeat_now()
        await self.wind_downs.hand_over(grace_ms)
        await self.registration.stop()
        self.table.close_all(1001, "worker stopping")

    async def idle(self, timeout_ms: float = 30_000) -> bool:
        return await self.table.idle(timeout_ms)


def create_worker(options: WorkerOptions) -> Worker:
    return Worker(options)


class _Hooks:
    """What the registration loop asks of the worker, and tells it."""

    def __init__(self, worker: Worker) -> None:
        self._w = worker

    def headroom(self) -> int:
        return self._w.headroom()

    def own_draining(self) -> bool:
        return self._w._own_draining

    def instances(self) -> dict[str, list[str]]:
        return self._w.instances_by_ns()

    def duplicates(self, refs: list[tuple[str, str]]) -> None:
        self._w.duplicates(refs)

    def message(self, message: ControlMessage, since_sent_ms: float) -> None:
        self._w.message(message, since_sent_ms)

    def drain(self, draining: bool, deadline_s: Optional[float]) -> None:
        self._w.drain(draining, deadline_s)

    def drain_deadline_passed(self) -> None:
        self._w.drain_deadline_passed()

    def lapsed_lease_renewed(self) -> None:
        self._w.lapsed_lease_renewed()
