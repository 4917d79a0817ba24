"""The registration challenge (mirrors src/pinned/challenge.ts)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ChallengePair:
    challenge: str
    challenge_value: str


def random_token(nbytes: int) -> str:
    return secrets.token_urlsafe(nbytes)


class ChallengeState:
    """Every register mints a fresh pair; GET /_pinned/challenge answers the current one only."""

    def __init__(self) -> None:
        self._pair: Optional[ChallengePair] = None

    def rotate(self) -> ChallengePair:
        self._pair = ChallengePair(random_token(16), random_token(24))
        return self._pair

    @property
    def current(self) -> Optional[ChallengePair]:
        return self._pair

    def answer(self, challenge: Optional[str]) -> Optional[str]:
        if self._pair is None or challenge is None or challenge != self._pair.challenge:
            return None
        return self._pair.challenge_value
