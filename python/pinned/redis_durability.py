"""The DurabilityStore on Redis (mirrors src/pinned/redis-durability.ts): the same keys, hash tags,
Lua scripts (lua_scripts.json, written by `npm run lua`) and index, so Python and JS workers share
durable state and fencing, and Pinboard's sweeper finds Python instances' wakes and alarms.

Each fenced write is one Lua script over the instance's keys (one hash slot). The sweeper's index
is written by separate commands after a write succeeds, so it is advisory: the meta hash is the
truth, and every activation rewrites the instance's index entries from it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Optional, TypeVar, Union

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from .durability import (
    ActivateInfo,
    ActivateResult,
    DurabilityUnavailableError,
    InstanceRef,
    ListOptions,
    StaleEpochError,
    StorageWrite,
)
from .durable_keys import DEFAULT_DURABLE_PREFIX, DurableKeys, instance_member
from .lua_scripts import LuaScript, eval_script, script
from .redis_connection import check_redis_url, connection_cause, describe_client, own_redis_connection, redact_redis_url

T = TypeVar("T")
Arg = Union[str, int, bytes]


class RedisDurabilityStore:
    """`RedisDurabilityStore(url="redis://…")`, or `client=` a redis.asyncio.Redis made with decode_responses=True."""

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Optional[aioredis.Redis] = None,
        prefix: Optional[str] = None,
        command_timeout_ms: Optional[float] = None,
    ) -> None:
        self.keys = DurableKeys(DEFAULT_DURABLE_PREFIX if prefix is None else prefix)
        self._connection_error: Optional[str] = None
        if client is not None:
            self.client = client
            self.name = describe_client(client)
            self._owned = False
        else:
            self.client = own_redis_connection(check_redis_url(url), command_timeout_ms)
            self.name = redact_redis_url(url)  # type: ignore[arg-type]
            self._owned = True

    @property
    def last_error(self) -> Optional[str]:
        """The last connection error, until a command succeeds again ("ECONNREFUSED", …)."""
        return self._connection_error

    async def _guard(self, command: Awaitable[T]) -> T:
        """Redis's own answers and fences as they are; anything else as DurabilityUnavailableError."""
        try:
            result = await command
        except (StaleEpochError, DurabilityUnavailableError, ResponseError):
            raise
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._connection_error = connection_cause(err)
            raise DurabilityUnavailableError(self.name, f"unreachable ({self._connection_error})") from err
        self._connection_error = None
        return result

    async def _run(self, lua: LuaScript, keys: list[str], args: list[Arg]) -> Any:
        return await self._guard(
            eval_script(
                lua,
                lambda sha: self.client.evalsha(sha, len(keys), *keys, *args),
                lambda source: self.client.eval(source, len(keys), *keys, *args),
            )
        )

    async def _fenced(self, name: str, epoch: str, keys: list[str], args: list[Arg]) -> list[Any]:
        reply = await self._run(script(name), keys, [epoch, *args])
        if reply[0] == 0:
            raise StaleEpochError(epoch, str(reply[1]))
        return reply

    def _instance_keys(self, ref: InstanceRef) -> list[str]:
        return [self.keys.meta(ref.ns, ref.id), self.keys.data(ref.ns, ref.id), self.keys.keys(ref.ns, ref.id)]

    async def _index_alarm(self, member: str, at: Optional[int]) -> Any:
        if at is None:
            return await self.client.zrem(self.keys.alarms, member)
        return await self.client.zadd(self.keys.alarms, {member: at})

    async def activate(self, ref: InstanceRef, epoch: str, info: Optional[ActivateInfo] = None) -> ActivateResult:
        hostname = (info.hostname if info else None) or ""
        reply = await self._fenced("durable-activate", epoch, [self.keys.meta(ref.ns, ref.id)], [hostname])
        alarm = int(reply[1]) if len(reply) > 1 and reply[1] else None
        member = instance_member(ref.ns, ref.id)
        host_entry = (
            self.client.hset(self.keys.instances, member, hostname)
            if hostname
            else self.client.hsetnx(self.keys.instances, member, "")
        )
        await self._guard(asyncio.gather(host_entry, self._index_alarm(member, alarm)))
        return ActivateResult(alarm=alarm)

    async def get(self, ref: InstanceRef, keys: list[str]) -> list[Optional[str]]:
        if not keys:
            return []
        return await self._guard(self.client.hmget(self.keys.data(ref.ns, ref.id), keys))

    async def list(self, ref: InstanceRef, options: Optional[ListOptions] = None) -> list[tuple[str, str]]:
        opts = options or ListOptions()
        bounds = lex_range(opts)
        if bounds is None:
            return []
        count = -1 if opts.limit is None else max(0, int(opts.limit))
        if count == 0:
            return []
        keys = [self.keys.data(ref.ns, ref.id), self.keys.keys(ref.ns, ref.id)]
        flat = await self._run(script("durable-list"), keys, [bounds[0], bounds[1], count, "1" if opts.reverse else "0"])
        return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    async def put(self, ref: InstanceRef, epoch: str, entries: list[tuple[str, str]]) -> None:
        if entries:
            await self._fenced("durable-put", epoch, self._instance_keys(ref), [x for e in entries for x in e])

    async def commit(self, ref: InstanceRef, epoch: str, writes: list[StorageWrite]) -> None:
        if not writes:
            return
        puts: list[Arg] = []
        deletes: list[Arg] = []
        for key, value in writes:
            if value is None:
                deletes.append(key)
            else:
                puts += [key, value]
        await self._fenced("durable-commit", epoch, self._instance_keys(ref), [len(puts) // 2, *puts, *deletes])

    async def delete(self, ref: InstanceRef, epoch: str, keys: list[str]) -> int:
        unique = list(dict.fromkeys(keys))
        reply = await self._fenced("durable-delete", epoch, self._instance_keys(ref), unique)  # type: ignore[arg-type]
        return int(reply[1])

    async def delete_all(self, ref: InstanceRef, epoch: str) -> None:
        await self._fenced("durable-delete-all", epoch, self._instance_keys(ref), [])
        await self._guard(self.client.zrem(self.keys.alarms, instance_member(ref.ns, ref.id)))

    async def set_alarm(self, ref: InstanceRef, epoch: str, at_ms: Optional[int]) -> None:
        at = None if at_ms is None else int(at_ms // 1)
        await self._fenced("durable-set-alarm", epoch, [self.keys.meta(ref.ns, ref.id)], ["" if at is None else str(at)])
        await self._guard(self._index_alarm(instance_member(ref.ns, ref.id), at))

    async def get_alarm(self, ref: InstanceRef) -> Optional[int]:
        value = await self._guard(self.client.hget(self.keys.meta(ref.ns, ref.id), "alarm"))
        return int(value) if value else None

    async def clear_alarm(self, ref: InstanceRef, epoch: str, expected_at_ms: int) -> bool:
        at = str(int(expected_at_ms // 1))
        reply = await self._fenced("durable-clear-alarm", epoch, [self.keys.meta(ref.ns, ref.id)], [at])
        cleared = int(reply[1]) == 1
        if cleared:
            await self._run(script("durable-unindex-alarm"), [self.keys.alarms], [instance_member(ref.ns, ref.id), at])
        return cleared

    async def epoch_of(self, ref: InstanceRef) -> Optional[str]:
        return await self._guard(self.client.hget(self.keys.meta(ref.ns, ref.id), "epoch"))

    async def close(self) -> None:
        if self._owned:
            try:
                await self.client.close()
                await self.client.connection_pool.disconnect()
            except Exception:
                pass


def lex_range(options: ListOptions) -> Optional[tuple[bytes, bytes]]:
    """The BYLEX bounds: the tighter of start/prefix below and end/prefix above; None when empty.

    Bytes, so the prefix's upper bound can end in 0xFF, which no UTF-8 key holds (as lexRange).
    """
    low: Optional[bytes] = options.start.encode() if options.start is not None else None
    if options.prefix and (low is None or options.prefix.encode() > low):
        low = options.prefix.encode()
    high: Optional[bytes] = options.end.encode() if options.end is not None else None
    if options.prefix:
        prefix_high = options.prefix.encode() + b"\xff"
        if high is None or prefix_high < high:
            high = prefix_high
    if low is not None and high is not None and low >= high:
        return None
    return (b"[" + low if low is not None else b"-", b"(" + high if high is not None else b"+")
