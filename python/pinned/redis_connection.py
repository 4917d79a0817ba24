"""The library's own Redis connection and its URL checks (mirrors src/pinned/redis-connection.ts and
the option checks of redis-durability.ts), on Debian's python3-redis (`redis.asyncio`).

- A command is never sent twice: one whose connection died may have run, so it fails instead
  (redis-py retries only timeouts, and only with retry_on_timeout, which stays off).
- A command gets `command_timeout_ms` to be answered, then fails (socket_timeout).
- A connection idle longer than `command_timeout_ms` is PINGed before it is used again.
"""

from __future__ import annotations

import errno
import re
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis

DEFAULT_COMMAND_TIMEOUT_MS = 5000

NO_REDIS = (
    "RedisDurabilityStore: no Redis given: set the redis option to a redis:// URL "
    "(DURABLE_REDIS_URL in .pinboard/dev.env after npm start) or a redis.asyncio client"
)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_PASSWORD = re.compile(r":[^:@/]*@")


def check_redis_url(url: object, who: str = "RedisDurabilityStore") -> str:
    """A redis:// or rediss:// URL, else a TypeError saying what is wrong (as checkRedisOption)."""
    if url is None or url == "":
        raise TypeError(NO_REDIS.replace("RedisDurabilityStore", who))
    if not isinstance(url, str):
        raise TypeError(f"{NO_REDIS.replace('RedisDurabilityStore', who)}, not a {type(url).__name__}")
    redacted = _PASSWORD.sub(":***@", url, count=1)
    shown = '"' + redacted.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if not _SCHEME.match(url):
        raise TypeError(f'{who}: the redis option {shown} has no scheme; write "redis://{redacted}"')
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise TypeError(f"{who}: the redis option {shown} is not a valid URL, e.g. redis://127.0.0.1:6379") from None
    if parts.scheme.lower() not in ("redis", "rediss"):
        raise TypeError(f"{who}: the redis option must be a redis:// or rediss:// URL, not {shown}")
    return url


def redact_redis_url(url: str) -> str:
    """The URL with its password replaced by *** (as redactRedisUrl: no trailing slash)."""
    try:
        parts = urlsplit(url)
        if parts.password:
            userinfo, host = parts.netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0]
            parts = parts._replace(netloc=f"{user}:***@{host}")
        return urlunsplit(parts).rstrip("/")
    except ValueError:
        return "(an unparsable Redis URL)"


def own_redis_connection(url: str, command_timeout_ms: Optional[float] = None) -> aioredis.Redis:
    seconds = (command_timeout_ms or DEFAULT_COMMAND_TIMEOUT_MS) / 1000
    return aioredis.Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=seconds,
        socket_connect_timeout=seconds,
        retry_on_timeout=False,
        health_check_interval=seconds,
    )


def connection_cause(err: BaseException) -> str:
    """A connection error in a few words: the system code (ECONNREFUSED, …) or the message."""
    seen: Optional[BaseException] = err
    while seen is not None:
        code = getattr(seen, "errno", None)
        if isinstance(code, int) and code in errno.errorcode:
            return errno.errorcode[code]
        seen = seen.__cause__ or seen.__context__
    text = str(err)
    match = re.search(r"Error (\d+) connecting", text)
    if match and int(match.group(1)) in errno.errorcode:
        return errno.errorcode[int(match.group(1))]
    return text or type(err).__name__


def describe_client(client: aioredis.Redis) -> str:
    """Where a given client connects, for messages (as describeClient)."""
    kwargs = client.connection_pool.connection_kwargs
    if kwargs.get("path"):
        return f"redis+unix://{kwargs['path']}"
    scheme = "rediss" if kwargs.get("ssl") or "ssl" in client.connection_pool.connection_class.__name__.lower() else "redis"
    db = kwargs.get("db") or 0
    return f"{scheme}://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}" + (f"/{db}" if db else "")
