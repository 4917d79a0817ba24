"""Two live processes with one clientId replace each other (mirrors src/pinned/client-id-clash.ts).

A session lost while the worker's own lease still held was replaced (or Pinboard's Redis lost
its data, which happens once). A second such loss before a heartbeat of the new session
succeeded is a replacement: re-register only after a back-off (a heartbeat interval, doubling up
to four leases). A loss after the lease ran out is expiry: re-register at once.
"""

from __future__ import annotations

import json
from typing import Optional


def client_id_held_message(client_id: str) -> str:
    return (
        f"clientId {json.dumps(client_id)} is held by another live process (its registration replaced this one): "
        "give each process its own clientId (the clientId option or CLIENT_ID)"
    )


class ClientIdClash:
    def __init__(self, client_id: str) -> None:
        self._client_id = client_id
        self._streak = 0

    def renewed(self) -> None:
        self._streak = 0

    def lost(self, lease_held: bool, interval_ms: float, lease_ms: float) -> tuple[float, Optional[str]]:
        """How long to wait before re-registering (0: at once) and, when not 0, the line that says why."""
        if not lease_held:
            self._streak = 0
            return 0, None
        self._streak += 1
        if self._streak < 2:
            return 0, None
        delay_ms = min(4 * lease_ms, interval_ms * 2 ** min(self._streak - 2, 20))
        return delay_ms, client_id_held_message(self._client_id)
