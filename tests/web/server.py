"""Start the real labelling server (``prefrl label``) as a subprocess on loopback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.narrow import present


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``prefrl label --store STORE --port PORT`` in a subprocess; ``kill()`` is SIGKILL."""

    def __init__(
        self, store: Path | str, port: int | None = None, *extra: str, log: Path | None = None
    ) -> None:
        self.store = str(store)
        self.log = log  # the server's stderr goes here (a file: a long test cannot fill a pipe)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> Server:
        cmd = [
            sys.executable,
            "-m",
            "prefrl.cli.main",
            "label",
            "--store",
            self.store,
            "--port",
            str(self.port),
        ]
        log = None if self.log is None else open(self.log, "ab")
        self.proc = subprocess.Popen([*cmd, *self.extra], stderr=log or subprocess.PIPE, env=dict(os.environ))
        if log is not None:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                out = self.proc.stderr.read().decode() if self.proc.stderr else present(self.log).read_text()
                raise RuntimeError(f"server exited with {self.proc.returncode}: {out}")
            try:
                if httpx.get(self.url + "/api/me", timeout=1).status_code == 401:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise TimeoutError(f"server on {self.url} did not start in {timeout}s")

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class ThreadServer:
    """The same app under a real uvicorn server on loopback, in a thread of this process (fast to start)."""

    def __init__(self, store: Path | str, clip_dir: Path | str | None = None, **app_kwargs: Any) -> None:
        import uvicorn

        from prefrl.storage.store import QueryStore
        from prefrl.web.app import create_app

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.store = QueryStore(store, clip_dir)
        app = create_app(self.store, **app_kwargs)
        # as `prefrl label` serves it: proxy headers are the app's business, not uvicorn's
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", proxy_headers=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self, timeout: float = 30.0) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise TimeoutError(f"server on {self.url} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.store.close()
