"""Checks what Pinboard proves on each call (mirrors src/pinned/attestation-guard.ts).

An attestation signed with the worker's secret, in time, whose aud is an accepted audience (the
live sessionId, the one just lost for 5 s, the local audience) and which names this very request
(htm, htu, epoch); on the probe and _alarm, the secret itself in Pinboard-Proxy-Secret. An
unknown audience waits for the register under way, if any, and is judged against its answer.
Each jti is accepted once.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable, Optional, Sequence

from .attestation import Acceptance, AttestationClaims, accepted_until, verify_attestation
from .durability import is_epoch
from .seen_attestations import SeenAttestations
from .whatwg_target import same_target

log = logging.getLogger("pinned")


@dataclass(frozen=True)
class CallFacts:
    """What the guard needs of an inbound call."""

    method: str
    raw_target: str
    attestation: Optional[str]
    epoch: Optional[str]
    proxy_secret: Optional[str]


@dataclass
class GuardOptions:
    secret: str
    audiences: Callable[[], Sequence[Optional[str]]]
    registering: Callable[[], Optional[Awaitable[None]]]
    base_path: str
    require_binding: bool
    acceptance: Acceptance
    seen: SeenAttestations
    now_seconds: Callable[[], float]


class AttestationGuard:
    def __init__(self, options: GuardOptions) -> None:
        self._o = options
        self._warned_unidentified = False

    def has_proxy_secret(self, call: CallFacts) -> bool:
        if call.proxy_secret is None:
            return False
        return hmac.compare_digest(call.proxy_secret.encode(), self._o.secret.encode())

    async def verify(self, call: CallFacts) -> Optional[AttestationClaims]:
        """The claims, or None when missing, invalid, for another audience or another request."""
        token = call.attestation
        if not token:
            return None
        if not self._accepted() and self._o.registering() is None:
            return None
        claims = verify_attestation(token, self._o.secret, self._o.now_seconds(), self._o.acceptance)
        if claims is None or not self._names_request(claims, call):
            return None
        if claims.aud not in self._accepted() and not await self._accepted_once_registered(claims.aud):
            return None
        return claims if self._first_use(claims) else None

    def _accepted(self) -> list[str]:
        return [aud for aud in self._o.audiences() if aud]

    async def _accepted_once_registered(self, aud: str) -> bool:
        if aud in self._accepted():
            return True
        registering = self._o.registering()
        if registering is None:
            return False
        log.info("attestation names a session not known yet: waiting for the register answer aud=%s", aud)
        await asyncio.shield(registering)
        return aud in self._accepted()

    def _first_use(self, claims: AttestationClaims) -> bool:
        if claims.jti is None:
            if self._o.require_binding:
                return False
            if not self._warned_unidentified:
                self._warned_unidentified = True
                log.warning("attestation without jti accepted: a Pinboard in front predates single-use attestations")
            return True
        deadline = accepted_until(claims.iat, claims.exp, self._o.acceptance)
        return self._o.seen.admit(claims.jti, deadline, self._o.now_seconds())

    def _names_request(self, claims: AttestationClaims, call: CallFacts) -> bool:
        # A malformed Pinboard-Epoch is let through here to be answered 400 malformed placement epoch.
        if claims.epoch is None and is_epoch(call.epoch):
            return False
        if not claims.is_bound():
            return not self._o.require_binding
        if claims.htm != call.method:
            return False
        if claims.epoch != call.epoch:
            return False
        return claims.htu is not None and same_target(claims.htu, self._o.base_path, call.raw_target)
