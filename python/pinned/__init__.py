"""pinned for Python: the worker side of Pinboard's worker contract (mirrors the JS `pinboard/pinned`)."""

from .alarms import AlarmInfo
from .attestation import Acceptance, AttestationClaims
from .context import InstanceContext, RequestContext
from .durability import (
    ActivateInfo,
    ActivateResult,
    DurabilityStore,
    DurabilityUnavailableError,
    InstanceRef,
    ListOptions,
    StaleEpochError,
)
from .fenced_redis import FencedRedis
from .live_instance import GateSettings
from .memory_durability import MemoryDurabilityStore
from .redis_durability import RedisDurabilityStore
from .signals import serve_until_signal
from .websocket import PinnedWebSocket
from .worker import Worker, WorkerOptions, create_worker

__all__ = [
    "Acceptance",
    "ActivateInfo",
    "ActivateResult",
    "AlarmInfo",
    "AttestationClaims",
    "DurabilityStore",
    "DurabilityUnavailableError",
    "FencedRedis",
    "GateSettings",
    "InstanceContext",
    "InstanceRef",
    "ListOptions",
    "MemoryDurabilityStore",
    "PinnedWebSocket",
    "RedisDurabilityStore",
    "RequestContext",
    "StaleEpochError",
    "Worker",
    "WorkerOptions",
    "create_worker",
    "serve_until_signal",
]
