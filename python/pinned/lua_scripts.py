"""The worker library's Lua scripts, as `npm run lua` writes them into lua_scripts.json (never by hand).

The same expanded text and SHA1 as src/pinned/lua/scripts.generated.ts; EVALSHA first, EVAL with
the source when the server's cache does not hold it (as src/contract/lua-script.ts's evalScript).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from redis.exceptions import NoScriptError


@dataclass(frozen=True)
class LuaScript:
    name: str
    source: str
    sha: str


def _load() -> dict[str, LuaScript]:
    data = json.loads((Path(__file__).parent / "lua_scripts.json").read_text(encoding="utf-8"))
    return {name: LuaScript(name, entry["source"], entry["sha"]) for name, entry in data["scripts"].items()}


SCRIPTS = _load()


def script(name: str) -> LuaScript:
    return SCRIPTS[name]


def is_no_script(err: BaseException) -> bool:
    """redis-py parses the NOSCRIPT reply into NoScriptError (its text drops the NOSCRIPT code)."""
    return isinstance(err, NoScriptError) or "NOSCRIPT" in str(err).upper()


async def eval_script(
    lua: LuaScript, evalsha: Callable[[str], Awaitable[Any]], eval_source: Callable[[str], Awaitable[Any]]
) -> Any:
    try:
        return await evalsha(lua.sha)
    except Exception as err:
        if not is_no_script(err):
            raise
        return await eval_source(lua.source)
