"""The request target as the WHATWG URL parser reads it, for comparing htu with the received target.

The JS library compares `new URL(base + htu)` with `new URL(request.url)`: both through the WHATWG
parser. aiohttp hands us the target as received (`request.raw_path`), and yarl normalises it
differently (it decodes and re-encodes), so this module applies the WHATWG steps that matter for an
http(s) origin-form target, to both sides:

- the fragment is cut at the first `#` (none arrives at a server; kept for the htu side);
- the path: `\\` counts as `/` (special scheme); code points in the path percent-encode set
  (C0 controls, space, `"`, `#`, `<`, `>`, `?`, `` ` ``, `{`, `}`, DEL and non-ASCII, as UTF-8) are
  percent-encoded; existing `%XX` stay as written (`/a` is not `/%61`); the single-dot segments `.`
  and `%2e`, and the double-dot ones (`..`, `.%2e`, `%2e.`, `%2e%2e`, any case) are resolved;
- the query: the special-query percent-encode set (C0, space, `"`, `#`, `<`, `>`, `'`, DEL,
  non-ASCII) is encoded. So a `'` Pinboard's Node entry passes as written and a `%27` that fetch
  sent compare equal, as in the JS library.
"""

from __future__ import annotations

from typing import NamedTuple

_PATH_SET = frozenset(' "#<>?`{}')
_QUERY_SET = frozenset(" \"#<>'")
_SINGLE_DOT = {".", "%2e"}
_DOUBLE_DOT = {"..", ".%2e", "%2e.", "%2e%2e"}


class Target(NamedTuple):
    path: str
    query: str
    fragment: str


def _encode(text: str, encode_set: frozenset[str]) -> str:
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if code < 0x20 or code >= 0x7F or ch in encode_set:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            out.append(ch)
    return "".join(out)


def _resolve_dots(path: str) -> str:
    segments = path.split("/")[1:]
    out: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            if out:
                out.pop()
            if last:
                out.append("")
        elif lowered in _SINGLE_DOT:
            if last:
                out.append("")
        else:
            out.append(segment)
    return "/" + "/".join(out)


def parse_target(raw: str) -> Target:
    """Path, query (with its `?`, or "") and fragment (with its `#`, or "") of an origin-form target."""
    text = raw.strip("\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    fragment = ""
    if "#" in text:
        text, frag = text.split("#", 1)
        fragment = "#" + _encode(frag, frozenset(' "<>`')) if frag else ""
    query = ""
    if "?" in text:
        text, q = text.split("?", 1)
        query = "?" + _encode(q, _QUERY_SET) if q else ""
    path = text.replace("\\", "/")
    if not path.startswith("/"):
        path = "/" + path
    return Target(_resolve_dots(_encode(path, _PATH_SET)), query, fragment)


def same_target(htu: str, base_path: str, raw_target: str) -> bool:
    """Whether a call Pinboard sent to `{advertiseUrl}{htu}` is the one that arrived as `raw_target`."""
    expected = parse_target(f"{base_path}{htu}")
    received = parse_target(raw_target)
    return expected == received
