"""The examples of clients/python/README.md (the first, then send and wait), run as they are
written (only the URL replaced by the test server's) against a real server whose model is named
"main"."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from conftest import INSTALLED, ROOT, SOURCE


def test_the_readme_example_runs(make_server, tmp_path):
    readme = (ROOT / "clients" / "python" / "README.md").read_text(encoding="utf-8")
    # The example, then the send-and-wait one, which goes on with its client, session and loop.
    example, ask = re.findall(r"```python\n(.*?)```", readme, re.S)[:2]
    assert "http://127.0.0.1:8420" in example and "client.ask(" in ask
    example += ask
    # The example waits for its inputs to be accepted, not answered: queued ones may fold into
    # one turn, so the model is called three times or fewer before the asks. Every call answers
    # the same, in two streamed pieces.
    script = [{"raw": "More.", "stream": {"bytes": 3}}] * 6
    server = make_server(json.dumps(script), model="main")
    script = tmp_path / "example.py"
    script.write_text(example.replace("http://127.0.0.1:8420", server.url), encoding="utf-8")
    env = dict(os.environ) if INSTALLED else dict(os.environ, PYTHONPATH=str(SOURCE))
    ran = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "CompactWaiterResolved"
    assert re.fullmatch(r"\d+ CompactionCommitted", lines[1]), ran.stdout
    assert lines[2:4] == ["More.", "More."], ran.stdout
    assert re.fullmatch(r"[0-9a-f-]{36}", lines[4]), ran.stdout
    assert server.stop() == 0, server.output()
