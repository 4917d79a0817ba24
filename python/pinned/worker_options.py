"""create_worker's options (the JS library's worker-options.ts), snake_case."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional
from urllib.parse import urlsplit

from .attestation import Acceptance
from .durability import DurabilityStore
from .instance_types import InstanceClass
from .live_instance import DEFAULT_ACTIVATION_TIMEOUT_MS, GateSettings


def monotonic_ms() -> float:
    return time.monotonic() * 1000


@dataclass
class WorkerOptions:
    pinboard_url: str
    credential: str
    namespaces: Mapping[str, InstanceClass]
    client_id: Optional[str] = None
    advertise_url: Optional[str] = None
    durability: Optional[DurabilityStore] = None
    max_instances: int = 1000
    headroom: Optional[Callable[[], int]] = None
    lease_unhealthy_after_ms: Optional[float] = None
    wind_down_grace_ms: float = 30_000
    wake_wait_ms: float = 5000
    activation_timeout_ms: float = DEFAULT_ACTIVATION_TIMEOUT_MS
    secret: Optional[str] = None
    require_bound_attestation: bool = False
    attestation: Acceptance = field(default_factory=Acceptance)
    max_remembered: int = 100_000
    local_audience: Optional[str] = None
    hostname: Optional[str] = None
    gates: GateSettings = field(default_factory=GateSettings)
    now_ms: Callable[[], float] = monotonic_ms


def check_url(name: str, url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise ValueError(f'create_worker: {name} "{url}" has no scheme; write "http://{url}" (or https://)')
    return url.rstrip("/")
