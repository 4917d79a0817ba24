"""The placement epoch as a fencing token for a Redis of your own (mirrors src/pinned/fenced-redis.ts).

`await fenced.write(key, ctx.epoch, ("SET", value))` runs the command when no newer epoch has
written `key`, and records the epoch as the key's fence, in one script (fenced-write): the fence
sits beside the key in its hash slot, so it works on Redis Cluster. A newer epoch raises
StaleEpochError and changes nothing: the caller has lost the instance.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Union

import redis.asyncio as aioredis

from .durability import StaleEpochError
from .lua_scripts import eval_script, script
from .redis_connection import check_redis_url, own_redis_connection

COMMANDS = frozenset({"SET", "RPUSH", "HSET", "INCRBY", "DEL"})
_DIGITS = re.compile(r"[0-9]+")

FencedCommand = tuple[Union[str, int], ...]
"""("SET", value), ("RPUSH", v, …), ("HSET", field, value, …), ("INCRBY", n) or ("DEL",)."""


def fence_key_of(key: str) -> str:
    """Where the fence of `key` lives: a hash beside it, in the key's hash slot."""
    open_ = key.find("{")
    close = -1 if open_ < 0 else key.find("}", open_ + 1)
    if close > open_ + 1:  # Redis hashes the first {…} with something in it
        return f"pinned-fence:{key}"
    if "}" in key:
        raise TypeError(f"FencedRedis: cannot keep the fence of {json.dumps(key)} in its slot")
    return f"pinned-fence:{{{key}}}"


class FencedRedis:
    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Optional[aioredis.Redis] = None,
        command_timeout_ms: Optional[float] = None,
    ) -> None:
        self._owned = client is None
        self.client = client if client is not None else own_redis_connection(check_redis_url(url, "FencedRedis"), command_timeout_ms)

    async def write(self, key: str, epoch: str, command: FencedCommand) -> Any:
        """The command's reply; StaleEpochError (`stored` is the fence) when a newer epoch wrote `key`."""
        if not isinstance(epoch, str) or not _DIGITS.fullmatch(epoch):
            raise TypeError(f"FencedRedis: epoch must be a decimal string, got {epoch}")
        if not command or command[0] not in COMMANDS:
            raise TypeError(f"FencedRedis: unsupported command {command[0] if command else None}")
        keys = [fence_key_of(key), key]
        args = [epoch, *command]
        reply = await eval_script(
            script("fenced-write"),
            lambda sha: self.client.evalsha(sha, len(keys), *keys, *args),
            lambda source: self.client.eval(source, len(keys), *keys, *args),
        )
        if reply[0] == 0:
            raise StaleEpochError(epoch, str(reply[1]))
        return reply[1]

    async def fence(self, key: str) -> Optional[str]:
        """The highest epoch that wrote `key` through a fence, or None."""
        return await self.client.hget(fence_key_of(key), "epoch")

    async def close(self) -> None:
        if self._owned:
            try:
                await self.client.close()
                await self.client.connection_pool.disconnect()
            except Exception:
                pass
