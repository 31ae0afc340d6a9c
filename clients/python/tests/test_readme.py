"""The example of clients/python/README.md, run as it is written (only its URL replaced by the
test server's) against a real server whose model is named "main"."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import INSTALLED, ROOT, SOURCE, answers


def test_the_readme_example_runs(make_server, tmp_path):
    readme = (ROOT / "clients" / "python" / "README.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    assert "http://127.0.0.1:8420" in example
    server = make_server(answers("Hello.", "Done.", "Fine."), model="main")
    script = tmp_path / "example.py"
    script.write_text(example.replace("http://127.0.0.1:8420", server.url), encoding="utf-8")
    env = dict(os.environ) if INSTALLED else dict(os.environ, PYTHONPATH=str(SOURCE))
    ran = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "CompactWaiterResolved"
    assert re.fullmatch(r"\d+ CompactionCommitted", lines[1]), ran.stdout
    assert server.stop() == 0, server.output()
