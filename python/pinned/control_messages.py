"""Control messages a heartbeat delivers (src/pinned/control-messages.ts): handled once, acked until Pinboard stops re-delivering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

SEEN_TTL_MS = 10 * 60_000

MsgId = Union[str, int]


@dataclass(frozen=True)
class ControlMessage:
    msg_id: MsgId
    type: str
    ns: str
    id: str
    deadline: Optional[float]
    """Seconds from delivery; None revokes."""


def _parse(value: object) -> Optional[ControlMessage]:
    if not isinstance(value, dict):
        return None
    msg_id, kind, ns, id_, deadline = (value.get(k) for k in ("msgId", "type", "ns", "id", "deadline"))
    if not isinstance(ns, str) or not isinstance(id_, str) or not isinstance(kind, str):
        return None
    if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int)):
        return None
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))):
        return None
    return ControlMessage(msg_id, kind, ns, id_, deadline)


class MessageLedger:
    def __init__(self) -> None:
        self._pending: dict[str, MsgId] = {}
        self._seen: dict[str, float] = {}

    def acks(self) -> list[MsgId]:
        return list(self._pending.values())

    def acked(self, acks: list[MsgId]) -> None:
        for ack in acks:
            self._pending.pop(str(ack), None)

    def receive(self, delivered: object, now_ms: float) -> list[ControlMessage]:
        fresh: list[ControlMessage] = []
        for raw in delivered if isinstance(delivered, list) else []:
            message = _parse(raw)
            if message is None:
                continue
            key = str(message.msg_id)
            self._pending[key] = message.msg_id
            if key in self._seen:
                continue
            self._seen[key] = now_ms
            fresh.append(message)
        for key, at in list(self._seen.items()):
            if now_ms - at > SEEN_TTL_MS and key not in self._pending:
                del self._seen[key]
        return fresh

    def clear(self) -> None:
        self._pending.clear()
        self._seen.clear()
