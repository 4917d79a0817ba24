"""Python's RedisDurabilityStore and FencedRedis against pinned-js's, on one real redis-server:
each reads what the other wrote, each is fenced by the other's epoch, and the keys, values and
durability index entries they write are byte-identical."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, AsyncIterator

import pytest
import redis.asyncio as aioredis

from pinned import FencedRedis, InstanceRef, RedisDurabilityStore, StaleEpochError
from pinned.durability import ActivateInfo
from tests.support.processes import REPO_ROOT, RedisServer

_prefixes = itertools.count()
REF = InstanceRef("/counter", "x1")
JS_REF = {"ns": "/counter", "id": "x1"}
DRIVER = REPO_ROOT / "python" / "tests" / "support" / "js_store.ts"


async def js(url: str, prefix: str, *ops: list[Any]) -> list[dict[str, Any]]:
    """Runs ops on pinned-js's RedisDurabilityStore in a Node process; one answer per op."""
    plan = json.dumps({"url": url, "prefix": prefix, "ops": ops})
    proc = await asyncio.create_subprocess_exec(
        "node", "--import", "tsx", str(DRIVER), plan, cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


@pytest.fixture
async def raw(durable_redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(durable_redis.url)  # bytes, to compare byte for byte
    yield client
    await client.close()


async def test_js_reads_and_is_fenced_by_what_python_wrote(durable_redis: RedisServer) -> None:
    prefix = f"x{next(_prefixes)}:"
    store = RedisDurabilityStore(url=durable_redis.url, prefix=prefix)
    await store.activate(REF, "7", ActivateInfo("py-host"))
    await store.put(REF, "7", [("count", "41"), ("name", '"caf\u00e9"')])
    await store.set_alarm(REF, "7", 1_800_000_000_000)
    answers = await js(
        durable_redis.url,
        prefix,
        ["get", JS_REF, ["count", "name", "missing"]],
        ["getAlarm", JS_REF],
        ["epochOf", JS_REF],
        ["list", JS_REF, {"prefix": "c"}],
        ["put", JS_REF, "6", [["count", "0"]]],
        ["activate", JS_REF, "8", {"hostname": "js-host"}],
        ["put", JS_REF, "8", [["count", "42"]]],
    )
    assert answers == [
        {"result": ["41", '"caf\u00e9"', None]},
        {"result": 1_800_000_000_000},
        {"result": "7"},
        {"result": [["count", "41"]]},
        {"error": "StaleEpochError", "message": "stale placement epoch 6: the instance is held at epoch 7"},
        {"result": {"alarm": 1_800_000_000_000}},
        {"result": None},
    ]
    # And back: JS's epoch 8 fences Python's 7.
    with pytest.raises(StaleEpochError) as caught:
        await store.put(REF, "7", [("count", "0")])
    assert (caught.value.quoted, caught.value.stored) == ("7", "8")
    assert await store.get(REF, ["count"]) == ["42"]
    await store.close()


async def test_python_reads_and_is_fenced_by_what_js_wrote(durable_redis: RedisServer) -> None:
    prefix = f"x{next(_prefixes)}:"
    answers = await js(
        durable_redis.url,
        prefix,
        ["activate", JS_REF, "3", {"hostname": "js-host"}],
        ["put", JS_REF, "3", [["a", "1"], ["b", "2"]]],
        ["setAlarm", JS_REF, "3", 1_900_000_000_000],
    )
    assert answers == [{"result": {"alarm": None}}, {"result": None}, {"result": None}]
    store = RedisDurabilityStore(url=durable_redis.url, prefix=prefix)
    assert await store.get(REF, ["a", "b"]) == ["1", "2"]
    assert await store.list(REF) == [("a", "1"), ("b", "2")]
    assert await store.get_alarm(REF) == 1_900_000_000_000
    assert await store.epoch_of(REF) == "3"
    with pytest.raises(StaleEpochError):
        await store.activate(REF, "2")
    assert (await store.activate(REF, "4")).alarm == 1_900_000_000_000
    assert await store.clear_alarm(REF, "4", 1_900_000_000_000) is True
    assert await js(durable_redis.url, prefix, ["getAlarm", JS_REF], ["put", JS_REF, "3", [["a", "9"]]]) == [
        {"result": None},
        {"error": "StaleEpochError", "message": "stale placement epoch 3: the instance is held at epoch 4"},
    ]
    await store.close()


async def dump(raw: aioredis.Redis, prefix: str) -> dict[bytes, Any]:
    """Every key under the prefix (the prefix cut off) with its contents, as bytes."""
    out: dict[bytes, Any] = {}
    for key in await raw.keys(prefix.encode() + b"*"):
        kind = (await raw.type(key)).decode()
        if kind == "hash":
            value: Any = await raw.hgetall(key)
        elif kind == "zset":
            value = await raw.zrange(key, 0, -1, withscores=True)
        else:
            value = await raw.get(key)
        out[key[len(prefix) :]] = (kind, value)
    return out


def same_writes(ref: Any) -> list[list[Any]]:
    return [
        ["activate", ref, "5", {"hostname": "host-1"}],
        ["put", ref, "5", [["k\u00e9y", '{"n":1}'], ["z", "[]"]]],
        ["commit", ref, "5", [["t", '"x"'], ["z", None]]],
        ["setAlarm", ref, "5", 1_750_000_000_001],
        ["activate", {"ns": "/other", "id": "o"}, "1", {}],
        ["setAlarm", {"ns": "/other", "id": "o"}, "1", 1_750_000_000_002],
        ["clearAlarm", {"ns": "/other", "id": "o"}, "1", 1_750_000_000_002],
    ]


async def test_both_stores_write_byte_identical_keys_values_and_index_entries(durable_redis: RedisServer, raw: aioredis.Redis) -> None:
    py_prefix, js_prefix = f"py{next(_prefixes)}:", f"js{next(_prefixes)}:"
    answers = await js(durable_redis.url, js_prefix, *same_writes(JS_REF))
    assert [a for a in answers if "error" in a] == [] and answers[-1] == {"result": True}
    store = RedisDurabilityStore(url=durable_redis.url, prefix=py_prefix)
    for method, ref, *args in same_writes(JS_REF):
        py_ref = InstanceRef(ref["ns"], ref["id"])
        if method == "activate":
            await store.activate(py_ref, args[0], ActivateInfo(args[1].get("hostname")))
        elif method == "commit":
            await store.commit(py_ref, args[0], [tuple(w) for w in args[1]])
        else:
            await getattr(store, {"setAlarm": "set_alarm", "clearAlarm": "clear_alarm"}.get(method, method))(py_ref, *args)
    await store.close()
    py, js_keys = await dump(raw, py_prefix), await dump(raw, js_prefix)
    assert py == js_keys
    assert py[b"{pinned-index}:instances"] == ("hash", {b"/counter/x1": b"host-1", b"/other/o": b""})
    assert py[b"{pinned-index}:alarms"] == ("zset", [(b"/counter/x1", 1_750_000_000_001.0)])
    assert py[b"{/counter/x1}:data"] == ("hash", {"k\u00e9y".encode(): b'{"n":1}', b"t": b'"x"'})


async def test_fenced_redis_fences_across_languages(durable_redis: RedisServer) -> None:
    fenced = FencedRedis(url=durable_redis.url)
    assert await fenced.write("shared:{1}", "10", ("SET", "py")) == "OK"
    assert await js(durable_redis.url, "unused:", ["fencedWrite", "shared:{1}", "9", ["SET", "js"]], ["fencedWrite", "shared:{1}", "11", ["SET", "js"]]) == [
        {"error": "StaleEpochError", "message": "stale placement epoch 9: the instance is held at epoch 10"},
        {"result": "OK"},
    ]
    with pytest.raises(StaleEpochError):
        await fenced.write("shared:{1}", "10", ("SET", "py-again"))
    assert await fenced.client.get("shared:{1}") == "js"
    await fenced.close()
