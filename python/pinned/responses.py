"""Header names of the worker contract and the fixed answers pinned gives (mirrors src/pinned/responses.ts)."""

from __future__ import annotations

import json
from typing import Literal, Mapping

from aiohttp import web

ATTESTATION_HEADER = "Pinboard-Attestation"
EPOCH_HEADER = "Pinboard-Epoch"
PROXY_SECRET_HEADER = "Pinboard-Proxy-Secret"
REFUSAL_HEADER = "Pinned-Refusal"
LEASE_UNHEALTHY = "lease-unhealthy"

RefusalReason = Literal[
    "draining", "lease-unhealthy", "lease-lapsed", "capacity", "winding-down", "evicted", "epoch-ended"
]

REFUSAL_DETAIL: dict[str, str] = {
    "draining": "worker draining",
    "lease-unhealthy": "lease unhealthy",
    "lease-lapsed": "lease lapsed",
    "capacity": "instance limit reached",
    "winding-down": "instance winding down",
    "evicted": "instance evicted",
    "epoch-ended": "placement epoch ended here",
}


def json_response(status: int, body: object, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        text=json.dumps(body, separators=(",", ":")),
        content_type="application/json",
        headers=dict(headers or {}),
    )


def detail(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return json_response(status, {"detail": message}, headers)


def invalid_attestation() -> web.Response:
    return detail(403, "invalid attestation")


def invalid_proxy_secret() -> web.Response:
    return detail(403, "invalid proxy secret")


def malformed_epoch() -> web.Response:
    return detail(400, "malformed placement epoch")


def stale_epoch() -> web.Response:
    return detail(409, "stale placement epoch")


def unknown_namespace() -> web.Response:
    return detail(404, "unknown namespace")


def not_found() -> web.Response:
    return detail(404, "not found")


def internal_error() -> web.Response:
    return detail(500, "internal error")


def refusal(reason: RefusalReason) -> web.Response:
    """The in-band refusal: every reason carries `Pinned-Refusal: lease-unhealthy`, the value Pinboard acts on."""
    return detail(503, REFUSAL_DETAIL[reason], {"Retry-After": "1", REFUSAL_HEADER: LEASE_UNHEALTHY})


def activation_failed() -> web.Response:
    return detail(503, "activation failed", {"Retry-After": "1"})


def instance_overloaded() -> web.Response:
    return detail(503, "instance overloaded", {"Retry-After": "1"})


def storage_write_failed() -> web.Response:
    return detail(500, "storage write failed")
