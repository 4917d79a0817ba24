"""Attestations as Pinboard signs them (HS256, typ pinboard+jwt), for calls made straight to a worker."""

from __future__ import annotations

import secrets
import time
from typing import Any, Optional

import jwt


def attestation(
    secret: str,
    aud: Optional[str],
    htm: Optional[str] = None,
    htu: Optional[str] = None,
    epoch: Optional[str] = None,
    iat: Optional[float] = None,
    jti: Optional[str] = "fresh",
    typ: str = "pinboard+jwt",
    **extra: Any,
) -> str:
    now = int(time.time() if iat is None else iat)
    claims: dict[str, Any] = {"aud": aud, "iat": now, "exp": now + 30}
    if jti == "fresh":
        jti = secrets.token_urlsafe(16)
    for name, value in (("jti", jti), ("htm", htm), ("htu", htu), ("epoch", epoch)):
        if value is not None:
            claims[name] = value
    claims.update(extra)
    return jwt.encode(claims, secret, algorithm="HS256", headers={"typ": typ})


def forward_headers(secret: str, aud: Optional[str], method: str, htu: str, epoch: str, **kwargs: Any) -> dict[str, str]:
    """The headers of a forward: an attestation naming the call, and Pinboard-Epoch."""
    return {
        "Pinboard-Attestation": attestation(secret, aud, htm=method, htu=htu, epoch=epoch, **kwargs),
        "Pinboard-Epoch": epoch,
    }
