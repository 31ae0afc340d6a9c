#!/usr/bin/env python3
"""The inspector of `harness serve` in a real headless Chromium (docs/serve.md "The inspector").

Python 3 standard library only: urllib speaks the W3C WebDriver protocol to `chromedriver`
(Debian chromium-driver) and the JSON API to the real `harness serve` binary, which runs on
127.0.0.1 (port 0) with a scripted model. Chromium gets a fresh profile in a temporary directory
and cannot reach anything but 127.0.0.1 (a dead proxy for everything else, and a host resolver
that resolves nothing).

Environment: HARNESS_BINARY (the CLI; default build-asan/harness of this checkout),
HARNESS_INSPECTOR_SCREENSHOT (where the screenshot goes; default inspector.png next to the
binary), CHROMIUM (default /usr/bin/chromium), CHROMEDRIVER (default /usr/bin/chromedriver).

Waits are on conditions, never on sleeps: the page's DOM is watched by a MutationObserver in an
async script that returns once the condition holds (the deadline only ends a failed wait).
"""

import base64
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("HARNESS_BINARY", ROOT / "build-asan" / "harness"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOT = pathlib.Path(
    os.environ.get("HARNESS_INSPECTOR_SCREENSHOT", BINARY.parent / "inspector.png")
)
WAIT_MS = 30000

# What the transcript holds: each would run script or load something if it were ever parsed as
# HTML or followed as a link.
HOSTILE = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "[x](javascript:window.__pwned=1)",
    "javascript:window.__pwned=1",
]

# A name an attacker's DNS would re-resolve to 127.0.0.1 (DNS rebinding): Chromium maps it there.
REBOUND = "rebind.attacker.test"

# A page of another origin, as any site the user opens: a form whose text/plain body is the JSON
# of a session with a planted system prompt ("name=value" makes `..."planted` + `=` + `"}]}`),
# posted into a frame. The test points it at the server and submits it.
HOSTILE_PAGE = b"""<!doctype html><title>another site</title>
<form id="csrf" method="POST" enctype="text/plain" target="sink">
<input name='{"loops":[{"model":"m","system_prompt":"planted' value='"}]}'></form>
<iframe name="sink" id="sink"></iframe>"""


class HostileSite:
    """A second HTTP server on 127.0.0.1 (another port: another origin) serving HOSTILE_PAGE."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(HOSTILE_PAGE)))
                self.end_headers()
                self.wfile.write(HOSTILE_PAGE)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


# No proxy for 127.0.0.1, whatever the environment says.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http(method, url, body=None, headers=None):
    """(status, headers, body bytes) of one request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


class Serve:
    """The real `harness serve` on 127.0.0.1:0 over a data directory, model "m" scripted."""

    def __init__(self, directory, env=None, listen="127.0.0.1:0"):
        script = directory / "script.json"
        answers = [{"raw": "Noted: " + " ".join(HOSTILE)}] + [{"raw": "Done."}] * 20
        script.write_text(json.dumps(answers))
        # Model "t" calls the client tool "lookup" once, then answers (docs/masking.md).
        tools = directory / "tools.json"
        tools.write_text(json.dumps([{"message": {"role": "assistant", "usage": None, "blocks": [
            {"type": "tool_use", "id": "call-1", "name": "lookup", "input": {"q": "log"}}]}}]
            + [{"raw": "Read it."}] * 10))
        self.process = subprocess.Popen(
            [str(BINARY), "serve", "--listen", listen, "--data-dir",
             str(directory / "data"), "--model", "m=scripted:" + str(script),
             "--model", "t=scripted:" + str(tools)],
            stdout=subprocess.PIPE, stderr=sys.stderr, text=True,
            env={**os.environ, **(env or {})},
        )
        line = self.process.stdout.readline()
        match = re.match(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError("harness serve did not start: " + repr(line))
        self.base = match.group(1)
        self.headers = {}

    def call(self, method, path, body=None):
        status, _, data = http(method, self.base + path, body, self.headers)
        return status, (json.loads(data) if data else None)

    def create_session(self):
        # Only the newest segment is kept, so that a few turns leave something to compact.
        status, body = self.call("POST", "/v1/sessions", {"loops": [{
            "model": "m", "system_prompt": "You are terse.",
            "policy": {"keep_recent_segments": 1, "keep_recent_tokens": 1}}]})
        assert status == 201, body
        return body["session_id"], body["loops"][0]

    def tool_session(self):
        """A session of model "t" whose first turn's tool result is a 3 000-byte log."""
        status, body = self.call("POST", "/v1/sessions", {"loops": [{
            "model": "t", "tools": [{"name": "lookup"}],
            "policy": {"masking": "off", "keep_recent_segments": 1}}]})
        assert status == 201, body
        session, loop = body["session_id"], body["loops"][0]
        base = f"/v1/sessions/{session}/loops/{loop}"
        status, body = self.call("POST", base + "/input", {"text": "Read the log."})
        assert status == 202, body
        # Synchronized on the event stream: the call is answered once its message is committed.
        request = urllib.request.Request(
            f"{self.base}/v1/sessions/{session}/events?from=1&kind=MessageCommitted",
            headers=self.headers)
        with _OPENER.open(request, timeout=60) as stream:
            for line in stream:
                if line.startswith(b"data:") and b'"tool_use"' in line:
                    break
        status, body = self.call("POST", base + "/tool_results", {"results": [
            {"tool_use_id": "call-1", "content": "log line\n" * 333}]})
        assert status == 200, body
        return session, loop

    def answered(self, command):
        status, body = self.call("GET", f"/v1/commands/{command}?wait_ms=30000")
        assert status == 200, body
        return body["reply"]

    def say(self, session, loop, text):
        status, body = self.call("POST", f"/v1/sessions/{session}/loops/{loop}/input",
                                 {"text": text})
        assert status == 202, body
        reply = self.answered(body["command_id"])
        assert reply["type"] == "InputAccepted", reply

    def compact(self, session, loop):
        status, body = self.call("POST", f"/v1/sessions/{session}/loops/{loop}/compact")
        assert status == 202, body
        return body["command_id"]

    def committed(self, session):
        """The CompactionCommitted records of the session's journal (its export)."""
        status, _, data = http("GET", f"{self.base}/v1/sessions/{session}/export",
                               headers=self.headers)
        assert status == 200, data
        return [line for line in data.decode().splitlines() if '"CompactionCommitted"' in line]

    def stop(self):
        """SIGTERM: a graceful stop, exit 0 (under ASan: and no leak)."""
        self.process.terminate()
        code = self.process.wait(timeout=30)
        self.process.stdout.close()
        return code


class WebDriverError(Exception):
    pass


class Browser:
    """chromedriver and one headless Chromium session, spoken to over W3C WebDriver."""

    def __init__(self, directory):
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, "--port=0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True,
        )
        for line in self.driver.stdout:
            match = re.search(r"started successfully on port (\d+)", line)
            if match:
                self.url = "http://127.0.0.1:" + match.group(1)
                break
        else:
            raise RuntimeError("chromedriver did not start")
        args = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--user-data-dir=" + str(directory / "profile"), "--window-size=1400,1000",
            # Nothing but 127.0.0.1: every other host goes to a dead proxy, and resolves nowhere,
            # but the rebound name, which resolves to 127.0.0.1 as an attacker's DNS would.
            "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=" + REBOUND,
            f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1 , MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-default-apps",
        ]
        session = self.command("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}})
        self.session = "/session/" + session["sessionId"]
        self.command("POST", self.session + "/timeouts", {"script": WAIT_MS + 5000})

    def command(self, method, path, body=None):
        status, _, data = http(method, self.url + path, body if body is not None else
                               ({} if method == "POST" else None))
        value = json.loads(data)["value"] if data else None
        if status != 200:
            raise WebDriverError(f"{method} {path}: {status} {value}")
        return value

    def go(self, url):
        self.command("POST", self.session + "/url", {"url": url})

    def run(self, script, *args):
        return self.command("POST", self.session + "/execute/sync",
                            {"script": script, "args": list(args)})

    def run_async(self, script, *args):
        """Runs `script`, an async function's body, and returns what it returns."""
        wrapped = ("const done = arguments[arguments.length - 1];"
                   f"(async (...args) => {{ {script} }})(...arguments).then(done,"
                   " e => done('threw: ' + e));")
        return self.command("POST", self.session + "/execute/async",
                            {"script": wrapped, "args": list(args)})

    def wait_for(self, condition, what):
        """Returns once the JavaScript expression `condition` is true on the page, checked
        again after every DOM mutation; fails after WAIT_MS."""
        script = (
            "const done = arguments[arguments.length - 1];"
            f"const check = () => {{ try {{ return !!({condition}); }}"
            " catch (e) { return false; } };"
            "if (check()) { done(true); return; }"
            "let timer = null;"
            "const observer = new MutationObserver(() => {"
            "  if (check()) { observer.disconnect(); clearTimeout(timer); done(true); } });"
            "observer.observe(document, {subtree: true, childList: true, characterData: true,"
            "  attributes: true});"
            f"timer = setTimeout(() => {{ observer.disconnect(); done(false); }}, {WAIT_MS});"
        )
        ok = self.command("POST", self.session + "/execute/async", {"script": script, "args": []})
        if not ok:
            text = self.run("return document.body.innerText;")
            raise AssertionError(f"timed out waiting for {what}; the page says:\n{text}")

    def click(self, css):
        element = self.command("POST", self.session + "/element",
                               {"using": "css selector", "value": css})
        element_id = next(iter(element.values()))
        self.command("POST", f"{self.session}/element/{element_id}/click")

    def type(self, css, text):
        element = self.command("POST", self.session + "/element",
                               {"using": "css selector", "value": css})
        element_id = next(iter(element.values()))
        self.command("POST", f"{self.session}/element/{element_id}/value", {"text": text})

    def log(self):
        """The browser's console log since the last call (chromedriver's se/log)."""
        return self.command("POST", self.session + "/se/log", {"type": "browser"})

    def screenshot(self, path):
        png = base64.b64decode(self.command("GET", self.session + "/screenshot"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)

    def close(self):
        try:
            self.command("DELETE", self.session)
        finally:
            self.driver.terminate()
            self.driver.wait(timeout=30)
            self.driver.stdout.close()


def count(selector):
    return f"document.querySelectorAll({json.dumps(selector)}).length"


class InspectorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in (BINARY, CHROMIUM, CHROMEDRIVER):
            if not pathlib.Path(tool).exists():
                raise unittest.SkipTest(f"{tool} is missing (scripts/setup installs chromium "
                                        "and chromium-driver; build the CLI)")
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="harness-inspector-"))
        cls.browser = Browser(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(dir=self.tmp))
        self.browser.log()  # what an earlier test left in the console is not this test's

    def tearDown(self):
        # The page leaves before the server stops, so that its reconnections do not reach into
        # the next test's console.
        self.browser.go("about:blank")

    def open_session(self, server, session):
        """Opens the inspector and selects `session` in its list; returns the browser."""
        b = self.browser
        b.go(server.base + "/")
        b.wait_for(f"document.querySelector('#sessions li[data-session=\"{session}\"]')",
                   "the session in the list")
        b.click(f'#sessions li[data-session="{session}"] button')
        return b

    def start_server(self, env=None, listen="127.0.0.1:0"):
        server = Serve(self.dir, env, listen)
        self.addCleanup(lambda: self.assertEqual(server.stop(), 0, "harness serve's exit"))
        return server

    def assert_clean_console(self, allowed=()):
        """No console error and no CSP violation (Chromium logs each as SEVERE)."""
        severe = [entry for entry in self.browser.log() if entry.get("level") == "SEVERE"
                  and not any(a in entry.get("message", "") for a in allowed)]
        self.assertEqual(severe, [], "the browser logged errors")

    def test_static_files_carry_the_policy_and_revalidate(self):
        """The three files' types, policy and strong ETag (a 304 for it); the API's too."""
        server = self.start_server()
        for path, kind in (("/", "text/html"), ("/inspector.js", "text/javascript"),
                           ("/inspector.css", "text/css")):
            status, headers, body = http("GET", server.base + path)
            self.assertEqual(status, 200, path)
            self.assertTrue(headers["Content-Type"].startswith(kind), headers["Content-Type"])
            csp = headers["Content-Security-Policy"]
            self.assertIn("script-src 'self'", csp)
            self.assertNotIn("unsafe-inline", csp)
            self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
            self.assertEqual(headers["Referrer-Policy"], "no-referrer")
            etag = headers["ETag"]
            self.assertRegex(etag, r'^"[0-9a-f]+"$')
            status, _, body = http("GET", server.base + path, headers={"If-None-Match": etag})
            self.assertEqual((status, body), (304, b""), path)
        # The API's answers carry the same policy.
        status, headers, _ = http("GET", server.base + "/v1/sessions")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Security-Policy"],
                         http("GET", server.base + "/")[1]["Content-Security-Policy"])
        self.assertEqual(headers["X-Content-Type-Options"], "nosniff")

    def test_the_inspector_follows_a_session_live_and_renders_its_transcript_as_text(self):
        server = self.start_server()
        session, loop = server.create_session()
        for text in ["Look at this: " + " ".join(HOSTILE), "Now edit src/app.cc.",
                     "Run the tests."]:
            server.say(session, loop, text)

        b = self.open_session(server, session)
        b.wait_for(f"document.querySelector('#loops li[data-loop=\"{loop}\"].selected')",
                   "the loop, listed and selected")
        b.wait_for(f"{count('#timeline li[data-type=MessageCommitted]')} >= 3",
                   "the replayed events in the timeline")
        b.wait_for("document.querySelector('#stream-status').textContent === 'live'",
                   "the live stream")

        # A compaction started through the API appears in the open page, without a reload.
        b.run("window.__sameDocument = true;")
        reply = server.answered(server.compact(session, loop))
        self.assertEqual(reply["type"], "CompactWaiterResolved", reply)
        b.wait_for(f"{count('#timeline li[data-type=CompactionCommitted]')} === 1",
                   "the compaction in the timeline")
        b.wait_for(f"{count('#compactions article[data-type=CompactionCommitted]')} === 1",
                   "the compaction's card")
        self.assertTrue(b.run("return window.__sameDocument === true;"), "the page reloaded")
        card = b.run("return document.querySelector('#compactions article').innerText;")
        self.assertIn("Kept (retained tail)", card)
        self.assertIn("Left the context", card)

        # The compact button compacts: a second CompactionCommitted, in the page and the journal.
        server.say(session, loop, "And deploy it.")
        server.say(session, loop, "Then report.")
        # Every turn ended first: a turn still running when the button's compaction commits
        # would leave the second click something to compact, and no rejection.
        b.wait_for(f"{count('#timeline li[data-type=LoopIdle]')} >= 5", "the five turns' ends")
        b.click("#compact-button")
        b.wait_for(f"{count('#timeline li[data-type=CompactionCommitted]')} === 2",
                   "the button's compaction in the timeline")
        b.wait_for("document.querySelector('#action-status').textContent"
                   ".includes('CompactWaiterResolved')", "the button's command answered")
        self.assertEqual(len(server.committed(session)), 2)

        # Nothing new to compact: the rejection shows with its reason and detail.
        b.click("#compact-button")
        b.wait_for(f"{count('#compactions article[data-type=CompactionRejected]')} === 1",
                   "the rejected compaction's card")
        rejected = b.run("return document.querySelector("
                         "'#compactions article[data-type=CompactionRejected]').innerText;")
        self.assertIn("Reason: unavailable", rejected)
        self.assertIn("Detail: ", rejected)

        # The interrupt button sends an interrupt (an idle loop has nothing to end).
        b.click("#interrupt-button")
        b.wait_for("document.querySelector('#action-status').textContent"
                   ".startsWith('interrupt: accepted')", "the interrupt accepted")

        # The context bar: every category the API estimates, the reserved output and free.
        b.wait_for(f"{count('#context-bar .segment[data-category=reserved_output]')} === 1",
                   "the context bar")
        categories = b.run("return [...document.querySelectorAll('#context-legend tr')]"
                           ".map(r => r.dataset.category).filter(Boolean);")
        for category in ("system_prompt", "tools", "summary", "messages", "retained_tail",
                         "free", "reserved_output"):
            self.assertIn(category, categories)

        # The hostile text is on the page as text, and nothing of it ran or loaded.
        b.wait_for("document.querySelector('#transcript').textContent.includes('Then report.')",
                   "the transcript after the second compaction")
        page = b.run("return document.body.textContent;")
        for text in HOSTILE:
            self.assertIn(text, page)
        self.assertIsNone(b.run("return window.__pwned === undefined ? null : window.__pwned;"))
        elements = b.run(
            "return {img: document.querySelectorAll('img').length,"
            " script: [...document.scripts].map(s => s.getAttribute('src')),"
            " a: document.querySelectorAll('a').length,"
            " iframe: document.querySelectorAll('iframe').length};")
        self.assertEqual(elements, {"img": 0, "script": ["/inspector.js"], "a": 0, "iframe": 0})
        self.assert_clean_console()

        b.screenshot(SCREENSHOT)
        print(f"\ninspector screenshot: {SCREENSHOT}", file=sys.stderr)

    def test_old_tool_output_is_masked_shown_and_put_back_from_the_page(self):
        """docs/masking.md: the page masks a session's old tool output, marks it, shows the
        original as text, unmasks it, and undo reverts a masking."""
        server = self.start_server()
        session, loop = server.tool_session()
        server.say(session, loop, "Now the tests.")

        b = self.open_session(server, session)
        b.wait_for(f"{count('#timeline li[data-type=TurnCompleted]')} >= 2", "the two turns")
        self.assertTrue(b.run("return document.querySelector('#unmask-button').disabled;"))
        b.click("#mask-button")
        b.wait_for(f"{count('#transcript li[data-masked=true]')} === 1", "the masked output")
        b.wait_for(f"{count('#timeline li[data-type=ToolOutputsMasked]')} === 1",
                   "the masking in the timeline")
        text = b.run("return document.querySelector('#transcript li[data-masked=true]').innerText;")
        self.assertIn("masked to save context", text)
        self.assertFalse(b.run("return document.querySelector('#unmask-button').disabled;"))
        # The transcript is drawn anew on every refresh: found and clicked in one script.
        b.run("document.querySelector('#transcript li[data-masked=true] button.original').click();")
        # Judged as it appears: a refresh may draw the transcript anew between two scripts.
        b.wait_for("document.querySelector('#transcript li.original').innerText"
                   ".includes('log line')", "the original, as text")
        b.run("document.querySelector('#transcript li[data-masked=true] button.unmask').click();")
        b.wait_for(f"{count('#timeline li[data-type=ToolOutputsUnmasked]')} === 1", "the unmask")
        b.wait_for(f"{count('#transcript li[data-masked=true]')} === 0", "nothing masked")

        b.click("#mask-button")
        b.wait_for(f"{count('#transcript li[data-masked=true]')} === 1", "masked again")
        b.click("#undo-button")
        b.wait_for(f"{count('#timeline li[data-type=HistoryReverted]')} === 1", "the undo")
        b.wait_for(f"{count('#transcript li[data-masked=true]')} === 0", "the masking undone")
        self.assert_clean_console()

    def test_a_pin_a_previewed_compaction_and_an_undo_from_the_page(self):
        """docs/pins.md, docs/preview.md, docs/undo.md: the page's controls call the service and
        follow what its events say."""
        server = self.start_server()
        session, loop = server.create_session()
        for text in ["Say hello.", "Now edit src/app.cc.", "Run the tests."]:
            server.say(session, loop, text)

        b = self.open_session(server, session)
        b.wait_for(f"{count('#timeline li[data-type=TurnCompleted]')} >= 3", "the three turns")
        b.wait_for(f"{count('#transcript button.pin')} === 6", "a pin button on each message")
        self.assertTrue(b.run("return document.querySelector('#undo-button').disabled;"))

        # Pin the first answer: it stays, verbatim, after the summary.
        # The transcript is drawn anew on every refresh: found and clicked in one script.
        b.run("document.querySelector('#transcript li:nth-child(2) button.pin').click();")
        b.wait_for("document.querySelector('#transcript li:nth-child(2)').dataset.pinned"
                   " === 'true'", "the answer pinned")
        b.click("#preview-button")
        b.wait_for("!document.querySelector('#proposal-actions').hidden",
                   "the approve and discard buttons")
        b.wait_for(f"{count('#compactions article[data-type=CompactionProposed]')} === 1",
                   "the proposal's card")
        card = b.run("return document.querySelector("
                     "'#compactions article[data-type=CompactionProposed]').innerText;")
        self.assertIn("messages would be summarized", card)
        self.assertEqual(len(server.committed(session)), 0)
        b.click("#approve-button")
        b.wait_for(f"{count('#timeline li[data-type=CompactionCommitted]')} === 1",
                   "the approved compaction in the timeline")
        b.wait_for("document.querySelector('#proposal-actions').hidden", "no proposal left")
        b.wait_for("!document.querySelector('#undo-button').disabled", "something to undo")
        b.wait_for("document.querySelector('#transcript li:nth-child(2)').dataset.pinned"
                   " === 'true'", "the pinned answer right after the summary")
        self.assertEqual(len(server.committed(session)), 1)

        b.click("#undo-button")
        b.wait_for(f"{count('#timeline li[data-type=HistoryReverted]')} === 1",
                   "the undo in the timeline")
        b.wait_for("document.querySelector('#undo-button').disabled", "nothing left to undo")
        b.wait_for(f"{count('#transcript li')} === 6", "the history before the compaction")
        # The transcript is drawn anew on every refresh: found and clicked in one script.
        b.run("document.querySelector('#transcript li:nth-child(2) button.pin').click();")
        b.wait_for("document.querySelector('#transcript li:nth-child(2)').dataset.pinned"
                   " === 'false'", "the answer unpinned")
        self.assert_clean_console()

    def test_a_dropped_stream_resumes_after_its_last_event_without_gap_or_duplicate(self):
        first = Serve(self.dir)
        self.addCleanup(lambda: first.process.poll() is None and first.stop())
        session, loop = first.create_session()
        first.say(session, loop, "Say hello.")
        b = self.browser
        b.go(first.base + "/")
        b.wait_for(f"document.querySelector('#sessions li[data-session=\"{session}\"]')",
                   "the session in the list")
        b.click(f'#sessions li[data-session="{session}"] button')
        b.wait_for(f"{count('#timeline li[data-type=InputAccepted]')} === 1", "the replay")
        b.wait_for("document.querySelector('#stream-status').textContent === 'live'",
                   "the live stream")

        # The server stops (its stream ends); a new one on the same address and journal comes
        # up, and the page's reconnection (Last-Event-ID) restores the session there.
        self.assertEqual(first.stop(), 0)
        b.wait_for("document.querySelector('#stream-status').textContent !== 'live'",
                   "the page noticing the dropped stream")
        second = self.start_server(listen=first.base.removeprefix("http://"))
        b.wait_for("document.querySelector('#stream-status').textContent === 'live'",
                   "the stream, reconnected")
        second.say(session, loop, "Say it again.")
        b.wait_for(f"{count('#timeline li[data-type=LoopIdle]')} === 2",
                   "the new server's turn, to its end, in the same page")

        # Every enduring event of the journal exactly once: no gap, no duplicate.
        status, _, data = http("GET", f"{second.base}/v1/sessions/{session}/export")
        self.assertEqual(status, 200)
        records = [json.loads(line) for line in data.decode().splitlines()]
        journal = sorted(r["seq"] for r in records if r["kind"] == "event")
        durable = count("#timeline li[data-seq]:not([data-seq='0'])")
        b.wait_for(f"{durable} >= {len(journal)}", "every journaled event on the page")
        shown = b.run("return [...document.querySelectorAll('#timeline li[data-seq]')]"
                      ".map(li => Number(li.dataset.seq)).filter(n => n > 0);")
        self.assertEqual(sorted(shown), journal)
        # What the console may hold: the reconnection's refused attempts while no server ran.
        self.assert_clean_console(allowed=("ERR_CONNECTION_REFUSED", "status of 503"))

    def test_a_page_of_another_origin_or_a_rebound_name_can_neither_drive_nor_read_the_api(self):
        """docs/serve.md "Security": without a token (the default on loopback), a site the user
        opens posts "simple" requests (text/plain, no preflight) and a form to the API, and a
        page whose name re-resolves to 127.0.0.1 asks it as its own origin: every one is
        refused, and nothing is created or journaled."""
        server = self.start_server()
        session, loop = server.create_session()
        server.say(session, loop, "Say hello.")
        # The turn's end, so that the journal holds all it will hold before the attacks.
        with _OPENER.open(f"{server.base}/v1/sessions/{session}/events?from=1&kind=LoopIdle",
                          timeout=60) as stream:
            next(line for line in stream if line.startswith(b"data:"))
        sessions_before = server.call("GET", "/v1/sessions")[1]
        exported_before = http("GET", f"{server.base}/v1/sessions/{session}/export")[2]
        site = HostileSite()
        self.addCleanup(site.close)

        b = self.browser
        b.go(site.base + "/")
        answers = b.run_async("""
            const [api, session, loop] = args;
            const base = `${api}/v1/sessions/${session}/loops/${loop}`;
            const attempts = [
              [api + "/v1/sessions", '{"loops":[{"model":"m","system_prompt":"planted"}]}'],
              [base + "/input", '{"text":"planted input"}'],
              [base + "/compact", ""], [base + "/undo", ""], [base + "/mask", ""],
              [base + "/proposals/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/approve", ""],
            ];
            const out = [];
            for (const [url, body] of attempts) {
              const r = await fetch(url, {method: "POST", mode: "no-cors", body,
                                          headers: {"Content-Type": "text/plain"}});
              out.push(r.type);
            }
            try {
              const r = await fetch(api + "/v1/sessions/" + session + "/export");
              out.push("read " + r.status);
            } catch (e) {
              out.push("read refused");
            }
            return out;""", server.base, session, loop)
        # Sent and answered (an opaque answer: the page cannot see it), and nothing readable.
        self.assertEqual(answers, ["opaque"] * 6 + ["read refused"])
        b.run("const sink = document.getElementById('sink');"
              "sink.onload = () => { document.body.dataset.posted = 'true'; };"
              "const form = document.getElementById('csrf');"
              "form.action = arguments[0] + '/v1/sessions'; form.submit();", server.base)
        b.wait_for("document.body.dataset.posted === 'true'", "the form's answer in its frame")

        # A page whose name was rebound to 127.0.0.1: the server's origin to the browser, so it
        # could read every answer, but the server refuses the name.
        port = server.base.rsplit(":", 1)[1]
        b.go(f"http://{REBOUND}:{port}/")
        self.assertIn("host_not_allowed", b.run("return document.body.innerText;"))
        rebound = b.run_async("""
            const list = await fetch("/v1/sessions");
            const created = await fetch("/v1/sessions", {method: "POST",
              headers: {"Content-Type": "application/json"},
              body: '{"loops":[{"model":"m","system_prompt":"planted"}]}'});
            return [list.status, (await list.json()).error.kind, created.status];""")
        self.assertEqual(rebound, [421, "host_not_allowed", 421])

        # Nothing created, nothing journaled; the server answered each attempt with a refusal.
        self.assertEqual(server.call("GET", "/v1/sessions")[1], sessions_before)
        self.assertEqual(http("GET", f"{server.base}/v1/sessions/{session}/export")[2],
                         exported_before)
        self.assertNotIn(b"planted", exported_before)
        metrics = http("GET", server.base + "/metrics")[2].decode()
        refused = re.search(r'harness_serve_responses_total\{code="4xx"\} (\d+)', metrics)
        self.assertIsNotNone(refused, metrics)
        self.assertGreaterEqual(int(refused.group(1)), 6 + 1 + 3)

    def test_with_a_token_the_page_asks_for_it_then_works(self):
        server = self.start_server({"HARNESS_SERVE_TOKEN": "s3cret-token"})
        server.headers = {"Authorization": "Bearer s3cret-token"}
        session, _ = server.create_session()
        status, _, _ = http("GET", server.base + "/v1/sessions")
        self.assertEqual(status, 401)

        b = self.browser
        b.go(server.base + "/")
        b.wait_for("!document.querySelector('#token-panel').hidden", "the token prompt")
        b.type("#token-input", "s3cret-token")
        b.click("#token-submit")
        b.wait_for(f"document.querySelector('#sessions li[data-session=\"{session}\"]')",
                   "the session, listed with the token")
        b.click(f'#sessions li[data-session="{session}"] button')
        b.wait_for(f"{count('#timeline li[data-type=LoopCreated]')} === 1",
                   "the event stream, read with the token")
        self.assertEqual(b.run("return sessionStorage.getItem('harness.inspector.token');"),
                         "s3cret-token")
        # The only errors: the API's 401 before the token was given.
        self.assert_clean_console(allowed=("status of 401",))


if __name__ == "__main__":
    unittest.main(verbosity=2)
