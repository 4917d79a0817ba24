"""Real processes for the tests: a redis-server and a Pinboard Node entry on free ports."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

REPO_ROOT = Path(__file__).resolve().parents[3]
PASSPORT_SECRET = "test-passport-secret-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(check: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        if check():
            return
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{what} did not become ready")


@dataclass
class RedisServer:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def start_redis(port: Optional[int] = None) -> RedisServer:
    """On a free port, or on `port` (a restart)."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = port or free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def pong() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    _wait(pong, proc, "redis-server")
    return RedisServer(port, proc)


@dataclass
class PinboardServer:
    url: str
    proc: subprocess.Popen[bytes]
    lease_ttl_ms: int

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def start_pinboard(redis_url: str, lease_ttl_ms: int, log_path: Path, extra_env: Optional[dict[str, str]] = None) -> PinboardServer:
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", ""),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "REDIS_URL": redis_url,
        "PINBOARD_PASSPORT_SECRET": PASSPORT_SECRET,
        "PINBOARD_LOG_LEVEL": "warn",
        "PINBOARD_LEASE_TTL_MS": str(lease_ttl_ms),
        # One bucket: the cold-start quarantine (one lease, per bucket) is waited out once.
        "PINBOARD_SHARDS": "1",
        **(extra_env or {}),
    }
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        ["node", "--import", "tsx", "src/node.ts"], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as res:
                return res.status == 200
        except OSError:
            return False

    _wait(ready, proc, f"pinboard (log: {log_path})", timeout_s=60)
    return PinboardServer(url, proc, lease_ttl_ms)


def mint_credential(scope: str, sub: str = "tester") -> str:
    """A Passport credential, minted by the repository's own CLI (src/cli/mint-credential.ts)."""
    out = subprocess.run(
        ["node", "--import", "tsx", "src/cli/mint-credential.ts", "--scope", scope, "--sub", sub, "--ttl", "7200"],
        cwd=REPO_ROOT,
        env={**os.environ, "PINBOARD_PASSPORT_SECRET": PASSPORT_SECRET},
        check=True,
        capture_output=True,
    )
    return out.stdout.decode().strip()
