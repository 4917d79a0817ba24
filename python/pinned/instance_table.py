"""The resident instances, one activation per (ns, id), and the epoch guard (src/pinned/instance-table.ts).

- a lower epoch than the activation's is stale (StaleEpochError → 409);
- an equal one is served by the activation;
- a higher one retires the activation (sockets close 1012) and activates afresh at the new epoch.
New activations are refused while `refusal()` says so or at max_instances, and every request while
the lease has lapsed. An activation retired here is not created again at its epoch (EndedEpochs).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from .durability import DurabilityStore, StaleEpochError
from .ended_epochs import EndedEpochs
from .live_instance import DEFAULT_ACTIVATION_TIMEOUT_MS, GateSettings, LiveDeps, LiveInstance
from .responses import RefusalReason
from .instance_types import InstanceClass

log = logging.getLogger("pinned")

CLOSE_MOVED = 1012
CLOSE_WRITE_FAILED = 1011


class RefusedError(Exception):
    def __init__(self, reason: RefusalReason) -> None:
        super().__init__(f"activation refused: {reason}")
        self.reason: RefusalReason = reason


class ActivationError(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"activation failed: {cause}")
        self.cause = cause


@dataclass
class TableDeps:
    classes: Mapping[str, InstanceClass]
    store: DurabilityStore
    max_instances: int
    refusal: Callable[[], Optional[RefusalReason]]
    lapsed: Callable[[], bool]
    now_ms: Callable[[], float]
    hostname: Optional[str] = None
    activation_timeout_ms: float = DEFAULT_ACTIVATION_TIMEOUT_MS
    gates: GateSettings = field(default_factory=GateSettings)


def _key(ns: str, id: str) -> str:
    return f"{ns}/{id}"


class InstanceTable:
    def __init__(self, deps: TableDeps) -> None:
        self._deps = deps
        self._live: dict[str, LiveInstance] = {}
        self._ended = EndedEpochs(deps.now_ms)

    def __len__(self) -> int:
        return len(self._live)

    def get(self, ns: str, id: str) -> Optional[LiveInstance]:
        return self._live.get(_key(ns, id))

    def all(self) -> list[LiveInstance]:
        return list(self._live.values())

    def inflight(self) -> int:
        return sum(live.inflight for live in self._live.values())

    async def acquire(self, ns: str, id: str, epoch: str) -> LiveInstance:
        """The activation at `epoch`, entered (the caller must leave()). Raises StaleEpochError, RefusedError, ActivationError."""
        key = _key(ns, id)
        value = int(epoch)
        live = self._live.get(key)
        if live is not None and value < live.epoch_value:
            raise StaleEpochError(epoch, live.epoch)
        if live is None or value > live.epoch_value:
            if self._ended.ended(key, value):
                raise RefusedError("epoch-ended")
            reason = self._deps.refusal()
            if reason is None and live is None and len(self._live) >= self._deps.max_instances:
                reason = "capacity"
            if live is not None:
                self.retire(live)
            if reason is not None:
                raise RefusedError(reason)
            live = self._create(ns, id, epoch)
        if live.closing:
            raise RefusedError("winding-down")
        live.enter()
        try:
            await asyncio.shield(live.ready)
        except StaleEpochError:
            live.leave()
            if self._live.get(key) is live:
                self.retire(live)
            raise
        except asyncio.CancelledError:
            live.leave()
            raise
        except Exception as err:
            live.leave()
            if self._live.get(key) is live:
                self._drop(live)
            raise ActivationError(err) from err
        return self._checked(key, live, epoch, value)

    def _checked(self, key: str, live: LiveInstance, epoch: str, value: int) -> LiveInstance:
        current = self._live.get(key)
        if current is not live:
            live.leave()
            if current is not None and current.epoch_value > value:
                raise StaleEpochError(epoch, current.epoch)
            raise RefusedError("evicted")
        if self._deps.lapsed():
            # Pinboard releases the placement on this refusal: this activation is done.
            live.leave()
            self.retire(live)
            raise RefusedError("lease-lapsed")
        return live

    def _create(self, ns: str, id: str, epoch: str) -> LiveInstance:
        cls = self._deps.classes.get(ns)
        if cls is None:
            raise RuntimeError(f"no instance class for namespace {ns}")
        live = LiveInstance(
            LiveDeps(
                ns=ns,
                id=id,
                epoch=epoch,
                cls=cls,
                store=self._deps.store,
                hostname=self._deps.hostname,
                activation_timeout_ms=self._deps.activation_timeout_ms,
                now_ms=self._deps.now_ms,
                lapsed=self._deps.lapsed,
                on_stale=self._on_stale,
                on_broken=self._on_broken,
                gates=self._deps.gates,
            )
        )
        self._live[_key(ns, id)] = live
        return live

    def _on_stale(self, stale: LiveInstance, err: StaleEpochError) -> None:
        if self._live.get(_key(stale.ns, stale.id)) is not stale:
            return
        log.warning("instance fenced by a newer epoch ns=%s id=%s epoch=%s stored=%s", stale.ns, stale.id, stale.epoch, err.stored)
        self.retire(stale)

    def _on_broken(self, broken: LiveInstance, error: BaseException) -> None:
        if isinstance(error, StaleEpochError):
            return
        log.error(
            "storage write failed: instance dropped, it re-activates from storage on its next request ns=%s id=%s error=%s",
            broken.ns, broken.id, error,
        )
        self._drop(broken, CLOSE_WRITE_FAILED, "storage write failed")

    def retire(self, live: LiveInstance, code: int = CLOSE_MOVED, reason: str = "instance moved") -> None:
        """Drops and retires the activation; its epoch ended here."""
        self._ended.end(_key(live.ns, live.id), live.epoch_value)
        self._drop(live, code, reason)

    def _drop(self, live: LiveInstance, code: int = CLOSE_MOVED, reason: str = "instance moved") -> None:
        key = _key(live.ns, live.id)
        if self._live.get(key) is live:
            del self._live[key]
        live.retire(code, reason)

    async def wind_down(self, live: LiveInstance, timeout_ms: float) -> bool:
        """New requests refused, in-flight ones get `timeout_ms`, then it retires. True when it was current."""
        if self._live.get(_key(live.ns, live.id)) is not live:
            return False
        live.closing = True
        if not await live.idle(timeout_ms):
            log.warning("wind-down deadline passed with requests in flight ns=%s id=%s", live.ns, live.id)
        current = self._live.get(_key(live.ns, live.id)) is live
        self.retire(live, CLOSE_MOVED, "instance wound down")
        return current

    async def idle(self, timeout_ms: float) -> bool:
        deadline = self._deps.now_ms() + timeout_ms
        for live in self.all():
            if not await live.idle(max(0.0, deadline - self._deps.now_ms())):
                return False
        return True

    def close_all(self, code: int, reason: str) -> None:
        for live in self.all():
            self.retire(live, code, reason)
