"""The example Counter worker (python/examples/counter.py) as a process of its own."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from tests.support.processes import REPO_ROOT, free_port

EXAMPLE = REPO_ROOT / "python" / "examples" / "counter.py"


@dataclass
class WorkerProcess:
    client_id: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def output(self) -> str:
        return self.log_path.read_text()

    def session_id(self) -> str:
        for line in self.output().splitlines():
            if line.startswith("serving "):
                return line.rsplit(" ", 1)[1]
        raise AssertionError("the worker did not say it registered")


def start_worker_process(
    pinboard_url: str, token: str, client_id: str, log_dir: Path, namespace: str, extra_env: Optional[dict[str, str]] = None
) -> WorkerProcess:
    log_path = log_dir / f"{client_id}.log"
    env = {
        **os.environ,
        "PINBOARD_URL": pinboard_url,
        "PINBOARD_WORKER_TOKEN": token,
        "CLIENT_ID": client_id,
        "NAMESPACE": namespace,
        "PORT": str(free_port()),
        "GRACE_MS": "2000",
        "LOG_LEVEL": "INFO",
        **(extra_env or {}),
    }
    proc = subprocess.Popen(["/usr/bin/python3", str(EXAMPLE)], env=env, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT)
    worker = WorkerProcess(client_id, proc, log_path)
    deadline = time.monotonic() + 30
    while "serving " not in worker.output():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"worker {client_id} did not register:\n{worker.output()}")
        time.sleep(0.05)
    return worker


def stop_worker_process(worker: WorkerProcess) -> None:
    """SIGTERM (it deregisters), SIGKILL if it has not exited within 15 s."""
    if worker.proc.poll() is not None:
        return
    worker.proc.terminate()
    try:
        worker.proc.wait(15)
    except subprocess.TimeoutExpired:
        worker.proc.kill()
        worker.proc.wait()
