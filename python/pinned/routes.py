"""The worker contract's routes on aiohttp (mirrors src/pinned/routes.ts)."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

from aiohttp import web

from .attestation import AttestationClaims
from .attestation_guard import AttestationGuard, CallFacts
from .challenge import ChallengeState
from .context import RequestContext
from .durability import DurabilityUnavailableError, StaleEpochError, is_epoch
from .input_gate import DeliveryCancelledError, QueueFullError
from .instance_table import ActivationError, InstanceTable, RefusedError
from .live_instance import LiveInstance
from .responses import (
    ATTESTATION_HEADER,
    EPOCH_HEADER,
    PROXY_SECRET_HEADER,
    activation_failed,
    detail,
    instance_overloaded,
    internal_error,
    invalid_attestation,
    invalid_proxy_secret,
    json_response,
    malformed_epoch,
    not_found,
    refusal,
    stale_epoch,
    storage_write_failed,
    unknown_namespace,
)
from .websocket import PinnedWebSocket, accept_and_close, is_upgrade
from .whatwg_target import parse_target

log = logging.getLogger("pinned")

ID_PATTERN = re.compile(r"[A-Za-z0-9._~-]{1,256}")
_INSTANCE_PATH = re.compile(r"^/([^/]+)/([^/]+)(/.*)?$")


class InstancePath(NamedTuple):
    ns: str
    id: str
    rest: str


def parse_instance_path(pathname: str, base: str) -> Optional[InstancePath]:
    if base and not pathname.startswith(f"{base}/"):
        return None
    match = _INSTANCE_PATH.match(pathname[len(base):] if base else pathname)
    if match is None:
        return None
    return InstancePath(f"/{match.group(1)}", match.group(2), match.group(3) or "")


@dataclass
class RouteDeps:
    base_path: str
    guard: AttestationGuard
    challenge: ChallengeState
    table: InstanceTable
    namespaces: frozenset[str]
    durable: bool
    wake_wait_ms: float
    stats: Callable[[], dict[str, Any]]


def call_facts(request: web.Request) -> CallFacts:
    h = request.headers
    return CallFacts(request.method, request.raw_path, h.get(ATTESTATION_HEADER), h.get(EPOCH_HEADER), h.get(PROXY_SECRET_HEADER))


def build_app(d: RouteDeps) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            return await dispatch(d, request)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("unhandled error")
            return internal_error()

    app = web.Application(client_max_size=8 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def dispatch(d: RouteDeps, request: web.Request) -> web.StreamResponse:
    path = parse_target(request.raw_path).path
    if request.method == "GET" and path == f"{d.base_path}/_pinned/challenge":
        facts = call_facts(request)
        if not (d.guard.has_proxy_secret(facts) or await d.guard.verify(facts) is not None):
            return invalid_proxy_secret()
        value = d.challenge.answer(request.query.get("challenge"))
        return detail(404, "unknown challenge") if value is None else json_response(200, {"value": value})
    if request.method == "GET" and path == f"{d.base_path}/_pinned/stats":
        if await d.guard.verify(call_facts(request)) is None:
            return invalid_attestation()
        return json_response(200, d.stats())
    return await serve_instance_path(d, request, path)


async def serve_instance_path(d: RouteDeps, request: web.Request, path: str) -> web.StreamResponse:
    target = parse_instance_path(path, d.base_path)
    if target is None:
        return not_found()
    facts = call_facts(request)
    upgrade = is_upgrade(request)
    claims = await d.guard.verify(facts)
    if claims is None:
        return await accept_and_close(request, 1008, "invalid attestation") if upgrade else invalid_attestation()
    is_alarm = request.method == "POST" and target.rest == "/_alarm"
    if is_alarm and not d.guard.has_proxy_secret(facts):
        return invalid_proxy_secret()
    epoch = facts.epoch
    if epoch is None or not is_epoch(epoch):
        return malformed_epoch()
    if target.ns not in d.namespaces:
        return unknown_namespace()
    if not ID_PATTERN.fullmatch(target.id):
        return web.Response(status=400, text="invalid id", content_type="text/plain")
    if is_alarm:
        return await fire_alarm(d, target, epoch)
    if d.durable and request.method == "POST" and target.rest == "/_wake":
        return await wake(d, target, epoch)
    return await forward(d, request, target, epoch, claims, upgrade)


def failure(err: BaseException, context: str) -> web.Response:
    if isinstance(err, StaleEpochError):
        return stale_epoch()
    if isinstance(err, RefusedError):
        return refusal(err.reason)
    if isinstance(err, ActivationError):
        cause = err.cause
        if isinstance(cause, DurabilityUnavailableError):
            log.error("activation failed %s store=%s error=%s", context, cause.store, cause)
        else:
            log.error("activation failed %s error=%r", context, cause)
        return activation_failed()
    log.error("instance request failed %s error=%r", context, err, exc_info=err)
    return internal_error()


async def forward(
    d: RouteDeps, request: web.Request, target: InstancePath, epoch: str, claims: AttestationClaims, upgrade: bool
) -> web.StreamResponse:
    context = f"ns={target.ns} id={target.id} epoch={epoch}"
    try:
        live = await d.table.acquire(target.ns, target.id, epoch)
    except (StaleEpochError, RefusedError, ActivationError) as err:
        return failure(err, context)
    try:
        ctx = RequestContext(live, target.rest, claims)
        response = await live.answer(lambda: live.instance.fetch(request, ctx))
        if not isinstance(response, web.StreamResponse):
            raise TypeError(f"{target.ns} fetch() did not return a web.StreamResponse")
    except asyncio.CancelledError:
        raise
    except Exception as err:
        return gate_failure(live, err, context)
    finally:
        live.leave()
    socket = next((s for s in live.sockets if s.response is response), None)
    if upgrade and socket is not None:
        return await serve_socket(request, socket)
    return response


async def serve_socket(request: web.Request, socket: PinnedWebSocket) -> web.StreamResponse:
    await socket.response.prepare(request)
    await socket.serve()
    return socket.response


def gate_failure(live: LiveInstance, err: BaseException, context: str) -> web.Response:
    if isinstance(err, QueueFullError):
        log.warning("instance queue full: answered 503 instance overloaded %s maxQueuedEvents=%d", context, err.limit)
        return instance_overloaded()
    if isinstance(err, DeliveryCancelledError):
        return refusal("lease-lapsed" if err.reason == "lease-lapsed" else "evicted")
    broken = live.output.broken
    if broken is not None and not isinstance(broken, StaleEpochError):
        return storage_write_failed()
    return failure(err, context)


async def wake(d: RouteDeps, target: InstancePath, epoch: str) -> web.Response:
    acquiring = asyncio.ensure_future(d.table.acquire(target.ns, target.id, epoch))
    done, _ = await asyncio.wait([acquiring], timeout=d.wake_wait_ms / 1000)
    if not done:
        acquiring.add_done_callback(lambda f: None if f.cancelled() or f.exception() else f.result().leave())
        return json_response(202, {"activating": True})
    try:
        live = acquiring.result()
    except Exception as err:
        return failure(err, f"ns={target.ns} id={target.id} epoch={epoch} route=_wake")
    live.leave()
    return json_response(200, {"ok": True})


async def fire_alarm(d: RouteDeps, target: InstancePath, epoch: str) -> web.Response:
    context = f"ns={target.ns} id={target.id} epoch={epoch} route=_alarm"
    try:
        live = await d.table.acquire(target.ns, target.id, epoch)
    except Exception as err:
        return failure(err, context)
    try:
        outcome = await live.alarm.sweep()
        if outcome == "running":
            return json_response(202, {"fired": False, "running": True})
        return json_response(200, {"fired": outcome == "fired"})
    except Exception as err:
        return failure(err, context)
    finally:
        live.leave()
