"""RedisDurabilityStore and FencedRedis against a real redis-server: fencing, storage, transactions,
alarms and the durability index, delete_all, EVALSHA/EVAL, errors and the activation timeout."""

from __future__ import annotations

import asyncio
import itertools
from typing import AsyncIterator

import pytest
import redis.asyncio as aioredis

from pinned import DurabilityStore, DurabilityUnavailableError, FencedRedis, InstanceRef, ListOptions, RedisDurabilityStore, StaleEpochError
from pinned.durability import ActivateInfo
from pinned.fenced_redis import fence_key_of
from pinned.instance_table import ActivationError, InstanceTable, TableDeps
from tests.support.processes import RedisServer, free_port, start_redis

_prefixes = itertools.count()
REF = InstanceRef("/counter", "abc")


@pytest.fixture
async def store(durable_redis: RedisServer) -> AsyncIterator[RedisDurabilityStore]:
    s = RedisDurabilityStore(url=durable_redis.url, prefix=f"t{next(_prefixes)}:")
    yield s
    await s.close()


@pytest.fixture
async def raw(durable_redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(durable_redis.url, decode_responses=True)
    yield client
    await client.close()


async def stale(coro: object) -> StaleEpochError:
    try:
        await coro  # type: ignore[misc]
    except StaleEpochError as err:
        return err
    raise AssertionError("the write was not fenced")


async def test_a_lower_epoch_is_refused_and_changes_nothing_a_higher_one_raises_the_stored_epoch(store: RedisDurabilityStore, raw: aioredis.Redis) -> None:
    assert isinstance(store, DurabilityStore)
    assert await store.activate(REF, "5", ActivateInfo("host-a")) is not None
    await store.put(REF, "5", [("count", "1")])
    for write in (
        store.put(REF, "4", [("count", "99")]),
        store.commit(REF, "4", [("count", "99"), ("other", "1")]),
        store.delete(REF, "4", ["count"]),
        store.delete_all(REF, "4"),
        store.set_alarm(REF, "4", 123),
        store.activate(REF, "4"),
    ):
        err = await stale(write)
        assert (err.quoted, err.stored) == ("4", "5")
        assert str(err) == "stale placement epoch 4: the instance is held at epoch 5"
    assert await store.get(REF, ["count", "other"]) == ["1", None]
    assert await store.get_alarm(REF) is None
    assert await store.epoch_of(REF) == "5"
    await store.put(REF, "12", [("count", "2")])  # numeric, not string, order: 12 > 5
    assert await store.epoch_of(REF) == "12"
    assert (await stale(store.put(REF, "9", [("count", "3")]))).stored == "12"
    assert await store.get(REF, ["count"]) == ["2"]
    assert await raw.hget(store.keys.meta(REF.ns, REF.id), "epoch") == "12"


async def test_get_put_delete_and_list_with_options(store: RedisDurabilityStore) -> None:
    await store.activate(REF, "1")
    keys = ["a", "b", "ba", "bb", "b\u00ff", "b\U0001f600", "c"]
    await store.put(REF, "1", [(k, f'"{k}"') for k in keys])
    assert await store.get(REF, ["b", "missing", "c"]) == ['"b"', None, '"c"']
    assert await store.get(REF, []) == []

    async def names(**options: object) -> list[str]:
        return [k for k, _ in await store.list(REF, ListOptions(**options))]  # type: ignore[arg-type]

    assert await names() == keys  # code point order = UTF-8 byte order
    assert await names(prefix="b") == ["b", "ba", "bb", "b\u00ff", "b\U0001f600"]
    assert await names(prefix="b", start="bb") == ["bb", "b\u00ff", "b\U0001f600"]
    assert await names(prefix="b", end="bb") == ["b", "ba"]
    assert await names(start="b", end="c", reverse=True, limit=2) == ["b\U0001f600", "b\u00ff"]
    assert await names(start="ba", end="ba") == []
    assert await names(prefix="b", start="c") == []
    assert await names(limit=0) == []
    assert (await store.list(REF, ListOptions(prefix="ba")))[0] == ("ba", '"ba"')
    assert await store.delete(REF, "1", ["a", "a", "missing", "c"]) == 2
    assert await names() == ["b", "ba", "bb", "b\u00ff", "b\U0001f600"]


async def test_a_transaction_commits_all_or_nothing(store: RedisDurabilityStore) -> None:
    await store.activate(REF, "3")
    await store.put(REF, "3", [("x", "1"), ("y", "1")])
    await store.commit(REF, "3", [("x", "2"), ("y", None), ("z", "3")])
    assert await store.list(REF) == [("x", "2"), ("z", "3")]
    await store.activate(REF, "4")
    await stale(store.commit(REF, "3", [("x", "9"), ("z", None), ("w", "9")]))
    assert await store.list(REF) == [("x", "2"), ("z", "3")]


async def test_alarms_and_the_durability_index(store: RedisDurabilityStore, raw: aioredis.Redis) -> None:
    member = "/counter/abc"
    assert (await store.activate(REF, "2", ActivateInfo("host-a"))).alarm is None
    assert await raw.hgetall(store.keys.instances) == {member: "host-a"}
    assert await raw.zrange(store.keys.alarms, 0, -1) == []
    await store.set_alarm(REF, "2", 1_700_000_000_123.9)  # type: ignore[arg-type]
    assert await store.get_alarm(REF) == 1_700_000_000_123
    assert await raw.zrange(store.keys.alarms, 0, -1, withscores=True) == [(member, 1_700_000_000_123.0)]
    assert await store.clear_alarm(REF, "2", 1_700_000_000_000) is False
    assert await store.get_alarm(REF) == 1_700_000_000_123
    assert await raw.zscore(store.keys.alarms, member) == 1_700_000_000_123.0
    # The index is advisory: a later activation (no hostname) reads the alarm back from the meta
    # hash, writes the lost index entry again and keeps the hostname entry.
    await raw.zrem(store.keys.alarms, member)
    assert (await store.activate(REF, "3")).alarm == 1_700_000_000_123
    assert await raw.zscore(store.keys.alarms, member) == 1_700_000_000_123.0
    assert await raw.hgetall(store.keys.instances) == {member: "host-a"}
    assert await store.clear_alarm(REF, "3", 1_700_000_000_123) is True
    assert await store.get_alarm(REF) is None
    assert await raw.zscore(store.keys.alarms, member) is None
    await store.set_alarm(REF, "3", 5000)
    await store.set_alarm(REF, "3", None)
    assert (await store.get_alarm(REF), await raw.zscore(store.keys.alarms, member)) == (None, None)
    other = InstanceRef("/counter", "new")
    await store.activate(other, "1")
    assert (await raw.hgetall(store.keys.instances))["/counter/new"] == ""
    await store.activate(REF, "4", ActivateInfo("host-b"))  # another worker's hostname replaces it
    assert await raw.hget(store.keys.instances, member) == "host-b"


async def test_delete_all_drops_the_data_the_alarm_and_its_index_entry(store: RedisDurabilityStore, raw: aioredis.Redis) -> None:
    await store.activate(REF, "1")
    await store.put(REF, "1", [("a", "1"), ("b", "2")])
    await store.set_alarm(REF, "1", 9000)
    await store.delete_all(REF, "1")
    assert await store.list(REF) == []
    assert await store.get_alarm(REF) is None
    assert await raw.exists(store.keys.data(REF.ns, REF.id), store.keys.keys(REF.ns, REF.id)) == 0
    assert await raw.zscore(store.keys.alarms, "/counter/abc") is None
    assert await store.epoch_of(REF) == "1"  # the fence stays


async def test_keys_carry_the_prefix_and_hash_tags(store: RedisDurabilityStore, raw: aioredis.Redis) -> None:
    await store.activate(REF, "1")
    await store.put(REF, "1", [("k", "v")])
    await store.set_alarm(REF, "1", 7)
    p = store.keys.prefix
    assert sorted(await raw.keys(f"{p}*")) == sorted(
        [f"{p}{{/counter/abc}}:meta", f"{p}{{/counter/abc}}:data", f"{p}{{/counter/abc}}:keys", f"{p}{{pinned-index}}:instances", f"{p}{{pinned-index}}:alarms"]
    )
    default = RedisDurabilityStore(url="redis://127.0.0.1:1")
    assert default.keys.meta("/n", "i") == "pinned:{/n/i}:meta"
    with pytest.raises(ValueError):
        RedisDurabilityStore(url="redis://127.0.0.1:1", prefix="a{b}")


async def test_a_flushed_script_cache_falls_back_to_eval(store: RedisDurabilityStore, raw: aioredis.Redis) -> None:
    await raw.script_flush()
    await store.activate(REF, "1")
    await store.put(REF, "1", [("k", "v")])
    assert await store.get(REF, ["k"]) == ["v"]


async def test_an_unreachable_store_is_named_with_the_password_redacted() -> None:
    port = free_port()
    s = RedisDurabilityStore(url=f"redis://user:s3cret@127.0.0.1:{port}/2")
    assert s.name == f"redis://user:***@127.0.0.1:{port}/2"
    with pytest.raises(DurabilityUnavailableError) as caught:
        await s.activate(REF, "1")
    assert str(caught.value) == f"durability store redis://user:***@127.0.0.1:{port}/2: unreachable (ECONNREFUSED)"
    assert s.last_error == "ECONNREFUSED"
    assert "s3cret" not in repr(caught.value)
    await s.close()


def test_the_redis_option_is_checked() -> None:
    for bad, message in [
        (None, "RedisDurabilityStore: no Redis given: set the redis option to a redis:// URL"),
        ("127.0.0.1:6379", 'RedisDurabilityStore: the redis option "127.0.0.1:6379" has no scheme; write "redis://127.0.0.1:6379"'),
        ("http://x:pw@h", 'RedisDurabilityStore: the redis option must be a redis:// or rediss:// URL, not "http://x:***@h"'),
    ]:
        with pytest.raises(TypeError) as caught:
            RedisDurabilityStore(url=bad)
        assert str(caught.value).startswith(message)


async def test_an_activation_on_a_silent_redis_fails_after_the_activation_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1 << 20)  # accepts, never answers

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    s = RedisDurabilityStore(url=f"redis://:pw@127.0.0.1:{port}")
    t = InstanceTable(
        TableDeps(classes={"/counter": object}, store=s, max_instances=10, refusal=lambda: None, lapsed=lambda: False, now_ms=lambda: 0.0, activation_timeout_ms=200)
    )
    with pytest.raises(ActivationError) as caught:
        await t.acquire("/counter", "abc", "1")
    assert isinstance(caught.value.cause, DurabilityUnavailableError)
    assert str(caught.value.cause) == f"durability store redis://:***@127.0.0.1:{port}: no answer within 200 ms (activationTimeoutMs)"
    assert t.get("/counter", "abc") is None
    server.close()
    await s.close()


async def test_fenced_redis_refuses_an_older_epoch_and_keeps_the_fence_in_the_slot(durable_redis: RedisServer, raw: aioredis.Redis) -> None:
    fenced = FencedRedis(url=durable_redis.url)
    assert await fenced.write("acct:{7}:balance", "5", ("SET", "100")) == "OK"
    err = await stale(fenced.write("acct:{7}:balance", "4", ("SET", "0")))
    assert (err.quoted, err.stored) == ("4", "5")
    assert await raw.get("acct:{7}:balance") == "100"
    assert await fenced.write("acct:{7}:balance", "6", ("INCRBY", 5)) == 105
    assert await fenced.fence("acct:{7}:balance") == "6"
    assert fence_key_of("acct:{7}:balance") == "pinned-fence:acct:{7}:balance"
    assert fence_key_of("plain") == "pinned-fence:{plain}"
    with pytest.raises(TypeError):
        fence_key_of("odd}")
    with pytest.raises(TypeError):
        await fenced.write("plain", "1", ("EVAL", "x"))
    with pytest.raises(TypeError):
        await fenced.write("plain", "1e3", ("SET", "x"))
    await fenced.close()


async def test_the_scripts_shas_are_what_script_load_answers(raw: aioredis.Redis) -> None:
    from pinned.lua_scripts import SCRIPTS

    assert sorted(SCRIPTS) == [
        "durable-activate", "durable-clear-alarm", "durable-commit", "durable-delete", "durable-delete-all",
        "durable-list", "durable-put", "durable-set-alarm", "durable-unindex-alarm", "fenced-write",
    ]  # fmt: skip
    for lua in SCRIPTS.values():
        assert await raw.script_load(lua.source) == lua.sha, lua.name


async def test_a_restarted_redis_is_used_again_without_resending_the_failed_write() -> None:
    server = start_redis()
    s = RedisDurabilityStore(url=server.url, prefix="restart:")
    await s.activate(REF, "1")
    await s.put(REF, "1", [("k", "1")])
    server.stop()
    with pytest.raises(DurabilityUnavailableError) as caught:
        await s.put(REF, "1", [("k", "2")])
    assert str(caught.value).startswith(f"durability store {server.url}: unreachable (")
    server = start_redis(server.port)  # empty: nothing was stored, nothing resent
    try:
        for _ in range(3):  # a pooled connection that saw the restart may fail once more
            try:
                await s.activate(REF, "2")
                break
            except DurabilityUnavailableError:
                await asyncio.sleep(0.1)
        assert await s.get(REF, ["k"]) == [None]
        await s.put(REF, "2", [("k", "3")])
        assert await s.get(REF, ["k"]) == ["3"]
        assert s.last_error is None
    finally:
        await s.close()
        server.stop()
