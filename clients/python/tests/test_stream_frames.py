"""What the real server cannot be made to do cheaply, against a scripted HTTP server on
127.0.0.1 (http.server in a thread): a stream that ends with `lagged` is yielded as Lagged and
resumed from the last event yielded, with no duplicate; a stream cut mid-frame resumes from the
last whole event; wait() asks again while the command is pending, pausing when the server said
pending long before the wait it was asked for; a CommandId asks the session's lookup."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, List, Optional

import pytest

from harness_client import Client, CommandId, CommandTimeout, Event, Lagged
from harness_client.client import PENDING_PAUSE

SID = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CMD = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"


def frame(seq: int, kind: str = "InputAccepted") -> bytes:
    data = json.dumps({"seq": seq, "event": {"type": kind, "v": 1}})
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n".encode()


class Fake:
    """Answers request number i with answers[i](handler); records each request's headers."""

    def __init__(self, answers: List[Callable[[BaseHTTPRequestHandler], None]]) -> None:
        self.requests: List[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                fake.requests.append({"path": self.path, "last_event_id": self.headers.get("Last-Event-ID")})
                answers[len(fake.requests) - 1](self)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    made: List[Fake] = []

    def make(*answers):
        made.append(Fake(list(answers)))
        return made[-1]

    yield make
    for f in made:
        f.close()


def stream_of(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    """An event stream that sends body and closes the connection (no chunking: the body ends
    when the connection does)."""

    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body)
        h.close_connection = True

    return answer


def json_answer(status: int, obj: dict) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(h: BaseHTTPRequestHandler) -> None:
        body = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return answer


END = b'event: end\ndata: {"reason":"hub_closed","last_seq":3}\n\n'


def test_lagged_is_yielded_then_the_stream_resumes_after_the_last_event(fake):
    server = fake(
        stream_of(frame(1) + frame(2) + b'event: lagged\ndata: {"last_seq":2}\n\n'),
        stream_of(frame(3) + END),
    )
    stream = Client(server.url).events(SID, from_seq=1)
    got = list(stream)
    assert got[:2] == [Event(1, "InputAccepted", {"type": "InputAccepted", "v": 1}),
                       Event(2, "InputAccepted", {"type": "InputAccepted", "v": 1})]
    assert got[2] == Lagged(2)
    assert [e.seq for e in got[3:]] == [3]
    assert stream.end is not None and stream.end.reason == "hub_closed"
    assert stream.reconnects == 1
    assert [r["last_event_id"] for r in server.requests] == [None, "2"]
    assert server.requests[0]["path"] == f"/v1/sessions/{SID}/events?from=1"


def test_a_frame_cut_short_is_fetched_again_not_yielded_twice(fake):
    whole = frame(1) + frame(2)
    server = fake(stream_of(whole + frame(3)[:15]), stream_of(frame(3) + END))
    stream = Client(server.url).events(SID, kinds=["InputAccepted"])
    assert [e.seq for e in stream] == [1, 2, 3]
    assert [r["last_event_id"] for r in server.requests] == [None, "2"]
    assert server.requests[1]["path"] == f"/v1/sessions/{SID}/events?kind=InputAccepted"


def test_wait_asks_again_while_pending_and_times_out(fake):
    pending = {"command_id": SID, "session_id": SID, "status": "pending"}
    answered = dict(pending, status="answered", reply={"type": "CompactWaiterResolved"})
    server = fake(json_answer(202, pending), json_answer(200, answered))
    assert Client(server.url).wait(SID, timeout=5).reply_type == "CompactWaiterResolved"
    assert len(server.requests) == 2
    assert server.requests[0]["path"].startswith(f"/v1/commands/{SID}?wait_ms=")

    late = fake(json_answer(202, pending))
    with pytest.raises(CommandTimeout) as timed_out:
        Client(late.url).wait(SID, timeout=0)
    assert timed_out.value.command_id == SID and isinstance(timed_out.value, TimeoutError)


def test_a_command_id_that_knows_its_session_asks_the_sessions_lookup_and_pauses_on_early_pending(fake):
    pending = {"command_id": CMD, "session_id": SID, "status": "pending"}
    answered = dict(pending, status="answered", reply={"type": "InputAccepted"})
    server = fake(json_answer(202, pending), json_answer(200, answered), json_answer(200, answered))
    client = Client(server.url)
    asked = time.monotonic()
    # The first answer is pending at once (another server holds the session): wait() pauses
    # before asking again rather than asking in a busy loop.
    assert client.wait(CommandId(CMD, SID), timeout=5).reply_type == "InputAccepted"
    assert time.monotonic() - asked >= PENDING_PAUSE
    assert client.command(CMD, session_id=SID).answered
    assert len(server.requests) == 3
    for request in server.requests:
        assert request["path"].startswith(f"/v1/sessions/{SID}/commands/{CMD}?wait_ms=")
