"""Calls made straight to a registered worker with attestations signed as Pinboard signs them."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from pinned import MemoryDurabilityStore, Worker
from tests.conftest import MakeWorker
from tests.support.instances import Counter, Echo
from tests.support.pinboard_calls import Answer, call
from tests.support.tokens import attestation, forward_headers

REFUSAL = {"Retry-After": "1", "Pinned-Refusal": "lease-unhealthy"}


async def forward(http: aiohttp.ClientSession, worker: Worker, method: str, htu: str, epoch: str, **kwargs: object) -> Answer:
    headers = forward_headers(worker.secret, worker.session_id, method, htu, epoch, **kwargs)
    return await call(http, method, f"{worker.advertise_url}{htu}", headers=headers)


def refused(answer: Answer, detail: str) -> bool:
    return (
        answer.status == 503
        and answer.json() == {"detail": detail}
        and all(answer.headers.get(k) == v for k, v in REFUSAL.items())
    )


async def test_epoch_guard_stale_higher_and_ended(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/direct": Counter})
    assert (await forward(http, worker, "POST", "/direct/e1/increment", "100")).json() == {"count": 1, "epoch": "100"}
    stale = await forward(http, worker, "GET", "/direct/e1", "99")
    assert (stale.status, stale.json()) == (409, {"detail": "stale placement epoch"})
    higher = await forward(http, worker, "GET", "/direct/e1", "101")
    # A fresh activation at 101, from the store (the memory store kept the count).
    assert (higher.status, higher.json()) == (200, {"count": 1, "epoch": "101"})
    assert worker.instances() == [("/direct", "e1", "101")]
    # 100 ended here: still lower than the resident 101, so stale.
    assert (await forward(http, worker, "GET", "/direct/e1", "100")).status == 409
    # Once the activation at 101 is retired, a forward at 101 (or lower) is refused in-band.
    live = worker.table.get("/direct", "e1")
    assert live is not None
    worker.table.retire(live)
    assert refused(await forward(http, worker, "GET", "/direct/e1", "101"), "placement epoch ended here")
    assert refused(await forward(http, worker, "GET", "/direct/e1", "100"), "placement epoch ended here")
    assert (await forward(http, worker, "GET", "/direct/e1", "102")).json() == {"count": 1, "epoch": "102"}


async def test_malformed_epoch_unknown_namespace_invalid_id(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/direct": Counter})
    # Only an unbound token (no htm, htu, epoch) passes the guard beside a malformed Pinboard-Epoch.
    token = attestation(worker.secret, worker.session_id)
    bad = await call(http, "GET", f"{worker.advertise_url}/direct/x", headers={"Pinboard-Attestation": token, "Pinboard-Epoch": "12a"})
    assert (bad.status, bad.json()) == (400, {"detail": "malformed placement epoch"})
    ns = await forward(http, worker, "GET", "/other/x", "5")
    assert (ns.status, ns.json()) == (404, {"detail": "unknown namespace"})
    bad_id = await forward(http, worker, "GET", "/direct/a%20b", "5")
    assert (bad_id.status, bad_id.text, bad_id.headers["Content-Type"].split(";")[0]) == (400, "invalid id", "text/plain")


async def test_attestation_refusals(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/direct": Echo})
    url = f"{worker.advertise_url}/direct/a1/p?q=1"
    htu = "/direct/a1/p?q=1"
    sid, secret = worker.session_id, worker.secret

    async def with_headers(headers: dict[str, str], method: str = "GET") -> Answer:
        return await call(http, method, url, headers=headers)

    good = forward_headers(secret, sid, "GET", htu, "7")
    assert (await with_headers(good)).status == 200
    cases = {
        "replayed jti": good,
        "no attestation": {"Pinboard-Epoch": "7"},
        "another secret": forward_headers(secret + "x", sid, "GET", htu, "7"),
        "another audience": forward_headers(secret, "someone-else", "GET", htu, "7"),
        "another method": forward_headers(secret, sid, "POST", htu, "7"),
        "another target": forward_headers(secret, sid, "GET", "/direct/a1/p?q=2", "7"),
        "another epoch claim": {**forward_headers(secret, sid, "GET", htu, "8"), "Pinboard-Epoch": "7"},
        "no epoch claim with Pinboard-Epoch": {
            "Pinboard-Attestation": attestation(secret, sid, htm="GET", htu=htu),
            "Pinboard-Epoch": "7",
        },
        "unbound with Pinboard-Epoch": {"Pinboard-Attestation": attestation(secret, sid), "Pinboard-Epoch": "7"},
        "htu without htm": {"Pinboard-Attestation": attestation(secret, sid, htu=htu, epoch="7"), "Pinboard-Epoch": "7"},
        "expired": forward_headers(secret, sid, "GET", htu, "7", iat=time.time() - 61),
        "from the future": forward_headers(secret, sid, "GET", htu, "7", iat=time.time() + 31),
        "another typ": forward_headers(secret, sid, "GET", htu, "7", typ="JWT"),
    }
    for name, headers in cases.items():
        answer = await with_headers(headers)
        assert (name, answer.status, answer.json()) == (name, 403, {"detail": "invalid attestation"})


async def test_quote_in_a_query_matches_as_the_whatwg_parser_reads_it(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/direct": Echo})
    sid, secret = worker.session_id, worker.secret
    # Pinboard's Node entry passes ' as written; fetch escapes it as %27: both are one target.
    for htu, sent in (("/direct/q/x?a='b'", "/direct/q/x?a=%27b%27"), ("/direct/q/x?a=%27b%27", "/direct/q/x?a='b'")):
        headers = forward_headers(secret, sid, "GET", htu, "3")
        answer = await call(http, "GET", f"{worker.advertise_url}{sent}", headers=headers)
        assert answer.status == 200, (htu, sent, answer.text)
    # Percent-encoding is compared as written in the path: /a is not /%61.
    headers = forward_headers(secret, sid, "GET", "/direct/q/a", "3")
    answer = await call(http, "GET", aiohttp.client.URL(f"{worker.advertise_url}/direct/q/%61", encoded=True), headers=headers)
    assert (answer.status, answer.json()) == (403, {"detail": "invalid attestation"})


async def test_stats_and_challenge_accept_an_attestation(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/direct": Echo})
    stats = await call(http, "GET", f"{worker.advertise_url}/_pinned/stats", headers={"Pinboard-Attestation": attestation(worker.secret, worker.session_id, htm="GET", htu="/_pinned/stats")})
    assert stats.status == 200 and stats.json()["draining"] is False
    pair = worker.challenge.current
    assert pair is not None
    htu = f"/_pinned/challenge?challenge={pair.challenge}"
    probe = await call(http, "GET", f"{worker.advertise_url}{htu}", headers={"Pinboard-Attestation": attestation(worker.secret, worker.session_id, htm="GET", htu=htu)})
    assert (probe.status, probe.json()) == (200, {"value": pair.challenge_value})


async def test_wake_is_mounted_only_with_a_durability_store(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    durable = await make_worker({"/direct": Echo}, durability=MemoryDurabilityStore())
    woken = await forward(http, durable, "POST", "/direct/w1/_wake", "9")
    assert (woken.status, woken.json()) == (200, {"ok": True})
    assert durable.instances() == [("/direct", "w1", "9")]
    plain = await make_worker({"/direct": Echo})
    forwarded = await forward(http, plain, "POST", "/direct/w1/_wake", "9")
    assert (forwarded.status, forwarded.json()) == (200, {"path": "/_wake", "query": "", "epoch": "9"})


class Alarmed:
    def __init__(self, ctx: object) -> None:
        self.fired = 0

    async def fetch(self, request: aiohttp.web.Request, ctx: object) -> aiohttp.web.Response:
        if ctx.path == "/arm":  # type: ignore[attr-defined]
            await ctx.set_alarm(time.time() * 1000 - 1)  # type: ignore[attr-defined]
        return aiohttp.web.json_response({"fired": self.fired})

    async def alarm(self, ctx: object, info: object) -> None:
        self.fired += 1


async def test_alarm_route_needs_the_proxy_secret(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/alarms": Alarmed})
    no_secret = await forward(http, worker, "POST", "/alarms/a/_alarm", "4")
    assert (no_secret.status, no_secret.json()) == (403, {"detail": "invalid proxy secret"})
    headers = {**forward_headers(worker.secret, worker.session_id, "POST", "/alarms/a/_alarm", "4"), "Pinboard-Proxy-Secret": worker.secret}
    nothing = await call(http, "POST", f"{worker.advertise_url}/alarms/a/_alarm", headers=headers)
    assert (nothing.status, nothing.json()) == (200, {"fired": False})
    armed = await forward(http, worker, "GET", "/alarms/a/arm", "4")
    assert armed.status == 200
    # The owner's own timer fires a due alarm at once.
    for _ in range(50):
        if (await forward(http, worker, "GET", "/alarms/a", "4")).json() == {"fired": 1}:
            break
        await asyncio.sleep(0.05)
    assert (await forward(http, worker, "GET", "/alarms/a", "4")).json() == {"fired": 1}
    stale = {**forward_headers(worker.secret, worker.session_id, "POST", "/alarms/a/_alarm", "3"), "Pinboard-Proxy-Secret": worker.secret}
    answer = await call(http, "POST", f"{worker.advertise_url}/alarms/a/_alarm", headers=stale)
    assert (answer.status, answer.json()) == (409, {"detail": "stale placement epoch"})


async def test_websocket_echo_and_bad_attestation_closes_1008(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/ws": Echo})
    headers = forward_headers(worker.secret, worker.session_id, "GET", "/ws/room", "6")
    async with http.ws_connect(f"{worker.advertise_url}/ws/room", headers=headers) as ws:
        await ws.send_str("hi")
        msg = await ws.receive(timeout=5)
        assert msg.data == "echo:hi"
        live = worker.table.get("/ws", "room")
        assert live is not None
        worker.table.retire(live)
        closed = await ws.receive(timeout=5)
        assert (closed.type, closed.data, closed.extra) == (aiohttp.WSMsgType.CLOSE, 1012, "instance moved")
    bad = forward_headers(worker.secret + "x", worker.session_id, "GET", "/ws/room", "7")
    async with http.ws_connect(f"{worker.advertise_url}/ws/room", headers=bad) as ws:
        msg = await ws.receive(timeout=5)
        assert (msg.type, msg.data, msg.extra) == (aiohttp.WSMsgType.CLOSE, 1008, "invalid attestation")


class NeverActivates(MemoryDurabilityStore):
    name = "never"

    async def activate(self, ref: object, epoch: str, info: object = None) -> object:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


async def test_an_activation_failure_answers_503_without_the_refusal_header(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    worker = await make_worker({"/slowstore": Counter}, durability=NeverActivates(), activation_timeout_ms=100)
    answer = await forward(http, worker, "GET", "/slowstore/x", "8")
    assert (answer.status, answer.json(), answer.headers.get("Retry-After")) == (503, {"detail": "activation failed"}, "1")
    assert "Pinned-Refusal" not in answer.headers


class HeldPuts(MemoryDurabilityStore):
    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def put(self, ref: object, epoch: str, entries: list[tuple[str, str]]) -> None:
        await self.release.wait()
        await super().put(ref, epoch, entries)  # type: ignore[arg-type]


class Journal(Echo):
    async def web_socket_message(self, socket: object, message: object, ctx: object) -> None:
        ctx.storage.put("last", message)  # type: ignore[attr-defined]
        socket.send(f"stored:{message}")  # type: ignore[attr-defined]


async def test_a_websocket_message_after_a_write_leaves_once_the_write_is_durable(make_worker: MakeWorker, http: aiohttp.ClientSession) -> None:
    store = HeldPuts()
    worker = await make_worker({"/journal": Journal}, durability=store)
    headers = forward_headers(worker.secret, worker.session_id, "GET", "/journal/j", "4")
    async with http.ws_connect(f"{worker.advertise_url}/journal/j", headers=headers) as ws:
        await ws.send_str("a")
        with pytest.raises(asyncio.TimeoutError):
            await ws.receive(timeout=0.3)
        store.release.set()
        assert (await ws.receive(timeout=5)).data == "stored:a"
