"""Pinboard-Attestation tokens: HS256 JWS, typ pinboard+jwt (src/contract/attestation.ts), checked with PyJWT."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

import jwt

ATTESTATION_TYP = "pinboard+jwt"
ATTESTATION_TTL_S = 30
ATTESTATION_SKEW_S = 30

_JTI = re.compile(r"[A-Za-z0-9_-]{16,64}")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Acceptance:
    """How long a token is accepted: while now < min(exp, iat + max_age_s) + skew_s and iat <= now + skew_s."""

    max_age_s: float = ATTESTATION_TTL_S
    skew_s: float = ATTESTATION_SKEW_S


CONTRACT_ACCEPTANCE = Acceptance()


@dataclass(frozen=True)
class AttestationClaims:
    aud: str
    iat: float
    exp: float
    jti: Optional[str] = None
    htm: Optional[str] = None
    htu: Optional[str] = None
    epoch: Optional[str] = None
    caller: Optional[str] = None
    depth: Optional[int] = None
    acct: Optional[dict[str, Any]] = None

    def is_bound(self) -> bool:
        """Names a request: carries any of htm, htu, epoch."""
        return self.htm is not None or self.htu is not None or self.epoch is not None


def accepted_until(iat: float, exp: float, acceptance: Acceptance) -> float:
    return min(exp, iat + acceptance.max_age_s) + acceptance.skew_s


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf")


def verify_attestation(
    token: str, secret: str, now_seconds: float, acceptance: Acceptance = CONTRACT_ACCEPTANCE
) -> Optional[AttestationClaims]:
    """The claims of a genuine, timely token (any audience: the guard judges aud), or None."""
    if token.count(".") != 2:
        return None
    try:
        header = jwt.get_unverified_header(token)
        if header.get("alg") != "HS256" or header.get("typ") != ATTESTATION_TYP:
            return None
        if "crit" in header or "b64" in header:
            return None
        payload = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False, "verify_aud": False},
        )
    except (jwt.PyJWTError, ValueError, TypeError):
        return None
    if not isinstance(payload, dict):
        return None
    aud, iat, exp = payload.get("aud"), payload.get("iat"), payload.get("exp")
    if not isinstance(aud, str) or not _is_number(iat) or not _is_number(exp):
        return None
    if now_seconds >= accepted_until(iat, exp, acceptance) or iat > now_seconds + acceptance.skew_s:
        return None
    return _optional_claims(payload, aud, iat, exp)


def _optional_claims(payload: dict[str, Any], aud: str, iat: float, exp: float) -> Optional[AttestationClaims]:
    jti, htm, htu = payload.get("jti"), payload.get("htm"), payload.get("htu")
    epoch, caller, depth, acct = payload.get("epoch"), payload.get("caller"), payload.get("depth"), payload.get("acct")
    if jti is not None and not (isinstance(jti, str) and _JTI.fullmatch(jti)):
        return None
    if htm is not None and not (isinstance(htm, str) and htm != ""):
        return None
    if htu is not None and not (isinstance(htu, str) and htu.startswith("/")):
        return None
    if epoch is not None and not (isinstance(epoch, str) and _DIGITS.fullmatch(epoch)):
        return None
    if caller is not None and not isinstance(caller, str):
        return None
    if depth is not None and not (isinstance(depth, int) and not isinstance(depth, bool) and 0 <= depth < 2**53):
        return None
    if acct is not None and not isinstance(acct, dict):
        return None
    return AttestationClaims(aud, iat, exp, jti, htm, htu, epoch, caller, depth, acct)
