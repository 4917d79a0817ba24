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
from .live_instance import GateSettings
from .memory_durability import MemoryDurabilityStore
from .signals import serve_until_signal
from .websocket import PinnedWebSocket
from .worker import Worker, WorkerOptions, create_worker


def __getattr__(name: str) -> object:
    """The Redis store and FencedRedis import python3-redis only when asked for."""
    if name == "RedisDurabilityStore":
        from .redis_durability import RedisDurabilityStore

        return RedisDurabilityStore
    if name == "FencedRedis":
        from .fenced_redis import FencedRedis

        return FencedRedis
    raise AttributeError(f"module 'pinned' has no attribute {name!r}")


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
