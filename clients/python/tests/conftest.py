"""The real `harness serve` for the client's tests: on 127.0.0.1 port 0, over a temporary SQLite
data directory, with scripted models (docs/scripted.md). The binary is $HARNESS_BINARY, else the
first of the repository's build directories that has one."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import List, Optional, Sequence

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "clients" / "python"
# HARNESS_CLIENT_INSTALLED=1 (scripts/test): the tests run against the package installed in the
# environment (pip install ./clients/python), never the source tree beside them.
INSTALLED = os.environ.get("HARNESS_CLIENT_INSTALLED") == "1"
if INSTALLED:
    import harness_client

    if SOURCE in Path(harness_client.__file__).resolve().parents:
        raise RuntimeError(f"HARNESS_CLIENT_INSTALLED=1, but harness_client is {harness_client.__file__}")
else:
    sys.path.insert(0, str(SOURCE))

# Bounds on waits for the server, never sleeps: a healthy server is ready in well under a second
# (several under AddressSanitizer); these only keep a broken one from hanging the run.
START_SECONDS = 60
STOP_SECONDS = 60


def harness_binary() -> str:
    given = os.environ.get("HARNESS_BINARY")
    if given:
        return given
    for build in ("build-asan", "build-release", "build"):
        candidate = ROOT / build / "harness"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.fail("no harness binary: build one (cmake --build build-asan --target harness) or set HARNESS_BINARY")


def answers(*texts: str) -> str:
    """A script of plain answers, one a model call."""
    return json.dumps([{"raw": t} for t in texts])


class Server:
    """One `harness serve` process. ``url`` is its base URL once started; ``lines`` what it
    printed (stdout and stderr, drained by a thread so that it never blocks on a full pipe)."""

    def __init__(self, data_dir: Path, script: Path, model: str = "m") -> None:
        self.data_dir = data_dir
        self.script = script
        self.model = model
        self.process: Optional[subprocess.Popen] = None
        self.url = ""
        self.lines: List[str] = []

    def start(self, *extra: str, env: Optional[dict] = None) -> "Server":
        args = [
            harness_binary(), "serve", "--listen", "127.0.0.1:0",
            "--data-dir", str(self.data_dir),
            "--model", f"{self.model}=scripted:{self.script}", *extra,
        ]
        self.lines = []
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, text=True, encoding="utf-8", errors="replace",
        )
        ready: "queue.Queue[Optional[str]]" = queue.Queue()

        def drain(stream, sink: List[str]) -> None:
            for line in stream:
                sink.append(line)
                match = re.match(r"listening on (http://127\.0\.0\.1:\d+)$", line.rstrip("\n"))
                if match:
                    ready.put(match.group(1))
            ready.put(None)  # the output ended: the process is gone

        threading.Thread(target=drain, args=(self.process.stdout, self.lines), daemon=True).start()
        try:
            url = ready.get(timeout=START_SECONDS)
        except queue.Empty:
            url = None
        if url is None:
            self.process.kill()
            self.process.wait()
            pytest.fail("harness serve did not start:\n" + "".join(self.lines))
        self.url = url
        return self

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signals the server and returns its exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail("harness serve did not stop on its signal:\n" + "".join(self.lines))

    def output(self) -> str:
        return "".join(self.lines)


@pytest.fixture
def make_server(tmp_path: Path):
    """make_server(script_json, *extra, model="m") starts a server over tmp_path/data; every
    server still running at the test's end is killed."""
    servers: List[Server] = []
    scripts: dict = {}
    data = tmp_path / "data"

    def make(script: str, *extra: str, model: str = "m", env: Optional[dict] = None) -> Server:
        # One file per script: the journal records a scripted loop's model by its file, so a
        # restarted server finds the model of a restored loop only under the same path.
        path = scripts.setdefault(script, tmp_path / f"script-{len(scripts)}.json")
        path.write_text(script, encoding="utf-8")
        server = Server(data, path, model).start(*extra, env=env)
        servers.append(server)
        return server

    yield make
    for server in servers:
        if server.process is not None and server.process.poll() is None:
            server.process.kill()
            server.process.wait()
