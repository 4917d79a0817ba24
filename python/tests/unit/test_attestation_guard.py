"""The attestation rules of the JS AttestationGuard, checked without a network."""

from __future__ import annotations

import asyncio
import time
from typing import Callable, Optional

import pytest

from pinned.attestation import Acceptance
from pinned.attestation_guard import AttestationGuard, CallFacts, GuardOptions
from pinned.seen_attestations import SeenAttestations
from pinned.whatwg_target import parse_target, same_target
from tests.support.tokens import attestation

SECRET = "s" * 32


def guard(audiences: list[Optional[str]], registering: Optional["asyncio.Future[None]"] = None, require_binding: bool = False, base_path: str = "") -> AttestationGuard:
    return AttestationGuard(
        GuardOptions(
            secret=SECRET,
            audiences=lambda: audiences,
            registering=lambda: registering,
            base_path=base_path,
            require_binding=require_binding,
            acceptance=Acceptance(),
            seen=SeenAttestations(1000),
            now_seconds=time.time,
        )
    )


def facts(token: Optional[str], method: str = "GET", target: str = "/ns/id", epoch: Optional[str] = "5") -> CallFacts:
    return CallFacts(method, target, token, epoch, None)


def bound(aud: str = "sess", **kwargs: object) -> str:
    claims = {"htm": "GET", "htu": "/ns/id", "epoch": "5", **kwargs}
    return attestation(SECRET, aud, **claims)  # type: ignore[arg-type]


async def test_a_bound_token_for_the_session_is_accepted_once() -> None:
    g = guard(["sess"])
    token = bound()
    claims = await g.verify(facts(token))
    assert claims is not None and claims.aud == "sess" and claims.epoch == "5"
    assert await g.verify(facts(token)) is None  # replayed jti


@pytest.mark.parametrize(
    "name,token,call",
    [
        ("audience", lambda: bound(aud="other"), {}),
        ("method", lambda: bound(), {"method": "POST"}),
        ("target", lambda: bound(), {"target": "/ns/id2"}),
        ("epoch", lambda: bound(), {"epoch": "6"}),
        ("epoch missing from the claim", lambda: attestation(SECRET, "sess", htm="GET", htu="/ns/id"), {}),
        ("unbound beside Pinboard-Epoch", lambda: attestation(SECRET, "sess"), {}),
        ("htm without htu", lambda: attestation(SECRET, "sess", htm="GET", epoch="5"), {}),
        ("secret", lambda: attestation(SECRET + "x", "sess", htm="GET", htu="/ns/id", epoch="5"), {}),
        ("typ", lambda: bound(typ="JWT"), {}),
        ("expired", lambda: bound(iat=time.time() - 61), {}),
        ("future", lambda: bound(iat=time.time() + 31), {}),
        ("bad jti", lambda: bound(jti="short"), {}),
        ("non-digit epoch claim", lambda: bound(epoch="5a"), {"epoch": "5a"}),
    ],
)
async def test_refusals(name: str, token: Callable[[], str], call: dict[str, str]) -> None:
    assert await guard(["sess"]).verify(facts(token(), **call)) is None, name


async def test_unbound_tokens_without_an_epoch_unless_binding_is_required() -> None:
    token = attestation(SECRET, "sess", jti=None)
    assert await guard(["sess"]).verify(facts(token, epoch=None)) is not None
    assert await guard(["sess"]).verify(facts(token, epoch=None)) is not None  # no jti: accepted each time
    assert await guard(["sess"], require_binding=True).verify(facts(token, epoch=None)) is None


async def test_a_malformed_epoch_header_is_left_to_the_route() -> None:
    token = attestation(SECRET, "sess")
    assert await guard(["sess"]).verify(facts(token, epoch="12a")) is not None


async def test_an_unknown_audience_waits_for_the_register_under_way() -> None:
    audiences: list[Optional[str]] = [None]
    registering: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    g = guard(audiences, registering)
    verifying = asyncio.ensure_future(g.verify(facts(bound(aud="new"))))
    await asyncio.sleep(0.01)
    assert not verifying.done()
    audiences[0] = "new"
    registering.set_result(None)
    assert (await verifying) is not None
    other: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    g2 = guard([None], other)
    refused = asyncio.ensure_future(g2.verify(facts(bound(aud="else"))))
    other.set_result(None)
    assert (await refused) is None
    assert await guard([None]).verify(facts(bound(aud="new"))) is None  # no register under way


def test_targets_compare_as_the_whatwg_parser_reads_them() -> None:
    assert same_target("/ns/id?a='b'", "", "/ns/id?a=%27b%27")
    assert same_target("/ns/id?a=%27b%27", "", "/ns/id?a='b'")
    assert not same_target("/ns/a", "", "/ns/%61")
    assert same_target("/ns/id/x y", "", "/ns/id/x%20y")
    assert same_target("/ns/id/./x/../y", "", "/ns/id/y")
    assert same_target("/ns/id/%2e%2E/y", "", "/ns/y")
    assert not same_target("/ns/id?q=1", "", "/ns/id?q=2")
    assert same_target("/ns/id?", "", "/ns/id")
    assert same_target("/id", "/base", "/base/id")
    assert parse_target("/a\\b?x=\"1\"").path == "/a/b"
    assert parse_target("/é").path == "/%C3%A9"
    assert parse_target("/x?q=`{}").query == "?q=`{}"
    assert parse_target("/x`{}").path == "/x%60%7B%7D"
