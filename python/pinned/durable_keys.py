"""Key names and index members of the Redis durability store (mirrors src/contract/durable-index.ts).

Every key of one instance carries the hash tag `{ns/id}`, so one Lua script can fence a write
across them on Redis Cluster; the two index keys share the `{pinned-index}` tag and are written by
separate commands. Pinboard's sweeper reads the index: the format must stay byte-identical to JS.
"""

from __future__ import annotations

import re

DEFAULT_DURABLE_PREFIX = "pinned:"

_BAD_PREFIX = re.compile(r"[{}\s]")


def instance_member(ns: str, id: str) -> str:
    """`{ns}/{id}`, e.g. `/counter/abc` (the shape of the Pinboard-From header)."""
    return f"{ns}/{id}"


class DurableKeys:
    def __init__(self, prefix: str = DEFAULT_DURABLE_PREFIX) -> None:
        if _BAD_PREFIX.search(prefix):
            raise ValueError("a durable key prefix may not contain braces or whitespace")
        self.prefix = prefix

    def _instance(self, ns: str, id: str, name: str) -> str:
        return f"{self.prefix}{{{instance_member(ns, id)}}}:{name}"

    def meta(self, ns: str, id: str) -> str:
        """Hash: epoch, alarm (due ms, absent when unset), hostname."""
        return self._instance(ns, id, "meta")

    def data(self, ns: str, id: str) -> str:
        """Hash: storage key → JSON value."""
        return self._instance(ns, id, "data")

    def keys(self, ns: str, id: str) -> str:
        """Sorted set of the storage keys, all scored 0 (ZRANGE BYLEX)."""
        return self._instance(ns, id, "keys")

    @property
    def instances(self) -> str:
        """Hash: instance member → hostname of the worker that last activated it ("" when unknown)."""
        return f"{self.prefix}{{pinned-index}}:instances"

    @property
    def alarms(self) -> str:
        """Sorted set: instance member scored by its alarm's due time in ms."""
        return f"{self.prefix}{{pinned-index}}:alarms"
