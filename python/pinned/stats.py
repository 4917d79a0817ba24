"""GET /_pinned/stats (src/pinned/stats.ts), plus process.cpuPercent when psutil is installed."""

from __future__ import annotations

import os
import resource
import time
from typing import Any, Callable, Optional

from .instance_table import InstanceTable
from .registration import Registration

VERSION = "0.1.0"

try:
    import psutil

    _PROCESS: Optional[Any] = psutil.Process(os.getpid())
    _PROCESS.cpu_percent(None)
except ImportError:  # psutil is optional: stats then have no cpuPercent
    _PROCESS = None


def process_stats(started_at_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {"uptimeMs": round((time.monotonic() - started_at_s) * 1000)}
    if _PROCESS is not None:
        out["rssBytes"] = _PROCESS.memory_info().rss
        out["cpuPercent"] = _PROCESS.cpu_percent(None)
    else:
        out["rssBytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out


def build_stats(
    table: InstanceTable,
    registration: Registration,
    namespaces: list[str],
    draining: Callable[[], bool],
    headroom: Callable[[], int],
    started_at_s: float,
) -> dict[str, Any]:
    per_ns = {ns: {"instances": 0, "inflight": 0, "sockets": 0} for ns in namespaces}
    instances = []
    for live in table.all():
        entry = per_ns.get(live.ns)
        if entry is not None:
            entry["instances"] += 1
            entry["inflight"] += live.inflight
            entry["sockets"] += len(live.sockets)
        instances.append(
            {
                "ns": live.ns,
                "id": live.id,
                "epoch": live.epoch,
                "state": "closing" if live.closing else live.state,
                "inflight": live.inflight,
                "queued": live.input.queued,
                "sockets": len(live.sockets),
                "alarm": live.alarm.get(),
                "activatedAt": live.activated_at,
            }
        )
    return {
        "version": VERSION,
        "draining": draining(),
        "leaseFlaps": registration.lease.flaps,
        "reregistrations": registration.reregistrations,
        "leaseHealthy": registration.lease.healthy(),
        "degraded": registration.degraded,
        "headroom": headroom(),
        "process": process_stats(started_at_s),
        "namespaces": per_ns,
        "instances": instances,
    }
