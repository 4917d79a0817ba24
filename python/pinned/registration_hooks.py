"""What the registration loop asks of the worker and tells it, the register fields, fatal register answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Protocol

from .control_messages import ControlMessage
from .registry_calls import PinboardCallError


class RegistrationHooks(Protocol):
    def headroom(self) -> int: ...
    def own_draining(self) -> bool: ...
    def instances(self) -> dict[str, list[str]]: ...
    def duplicates(self, refs: list[tuple[str, str]]) -> None: ...
    def message(self, message: ControlMessage, since_sent_ms: float) -> None: ...
    def drain(self, draining: bool, deadline_s: Optional[float]) -> None: ...
    def drain_deadline_passed(self) -> None: ...
    def lapsed_lease_renewed(self) -> None: ...


@dataclass(frozen=True)
class RegistrationFields:
    client_id: str
    secret: str
    namespaces: list[str]
    advertise_url: Callable[[], str]


def is_fatal(err: BaseException) -> bool:
    """Register failures retrying cannot fix (credential, scope, conflicts, bad body, wrong base path)."""
    if not isinstance(err, PinboardCallError) or err.status is None:
        return False
    s = err.status
    if s >= 500 or s in (408, 429):
        return False
    if s == 400 and err.body.get("error") == "registration probe failed":
        return False
    return s >= 400
