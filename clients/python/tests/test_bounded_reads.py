"""What a hostile server can make the client read: against a raw HTTP server on 127.0.0.1 (a
socket in a thread) that streams an endless line, an endless event without a blank line, a
huge error body or a huge answer. Each is refused with ResponseTooLarge once its cap is
reached, within a bounded time and with the test process's traced memory bounded, and the
client closes the connection (the server's writes fail long before it has sent everything).
Also: every request carries an Accept header, and one with a body Content-Type:
application/json."""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
import time
import tracemalloc
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional

import pytest

from harness_client import BadRequest, Client, HarnessError, ProtocolError, ResponseTooLarge
from harness_client.client import MAX_BODY_BYTES, MAX_ERROR_BYTES, MAX_EVENT_BYTES

MiB = 1 << 20
SID = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
LOOP = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"
# What an "endless" answer sends at most, so that a client that reads without bound still ends
# (and the test fails on what it got, not by hanging).
HOSTILE_BYTES = 300 * MiB
# The peak of traced allocations a refusal may reach: a 16 MiB cap read once, joined once (a
# line is read in pieces and joined), and room. A client without caps reaches 300 MiB and more.
MEMORY_BOUND = 64 * MiB
# Bounds on time: a refusal takes well under a second; these only end a broken run.
TIME_BOUND = 60.0
END = b'event: end\ndata: {"reason":"hub_closed","last_seq":0}\n\n'
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


@dataclass
class Exchange:
    """One connection: the request's line, headers and body, and how its answer went."""

    line: str = ""
    headers: Dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    sent: int = 0  # answer bytes written
    cut: bool = False  # a write failed: the client closed the connection
    done: threading.Event = field(default_factory=threading.Event)


Answer = Callable[[socket.socket, Exchange], None]


class Hostile:
    """Answers connection i with answers[i] (the last answer for any after them)."""

    def __init__(self, answers: List[Answer]) -> None:
        self.answers = answers
        self.exchanges: List[Exchange] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            exchange = Exchange()
            answer = self.answers[min(len(self.exchanges), len(self.answers) - 1)]
            self.exchanges.append(exchange)
            threading.Thread(target=self._serve, args=(conn, exchange, answer), daemon=True).start()

    @staticmethod
    def _serve(conn: socket.socket, exchange: Exchange, answer: Answer) -> None:
        with conn:
            try:
                received = b""
                while b"\r\n\r\n" not in received and len(received) < 65536:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    received += chunk
                head, _, body = received.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                exchange.line = lines[0]
                fields = (x.partition(":") for x in lines[1:])
                exchange.headers = {k.strip().lower(): v.strip() for k, _, v in fields}
                length = int(exchange.headers.get("content-length", "0"))
                while len(body) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                exchange.body = body
                answer(conn, exchange)
            except OSError:
                exchange.cut = True
            finally:
                exchange.done.set()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def hostile():
    made: List[Hostile] = []

    def make(*answers: Answer) -> Hostile:
        made.append(Hostile(list(answers)))
        return made[-1]

    yield make
    for server in made:
        server.close()


def endless(head: bytes, piece: bytes) -> Answer:
    """Sends head, then piece again and again: until HOSTILE_BYTES, or until the client closes
    the connection (a write fails)."""
    piece = piece * max(1, MiB // len(piece))

    def answer(conn: socket.socket, exchange: Exchange) -> None:
        conn.sendall(head)
        while exchange.sent < HOSTILE_BYTES:
            conn.sendall(piece)
            exchange.sent += len(piece)

    return answer


def whole(data: bytes) -> Answer:
    def answer(conn: socket.socket, exchange: Exchange) -> None:
        conn.sendall(data)
        exchange.sent = len(data)

    return answer


def json_head(status: str, length: Optional[int]) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Connection: close"
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n".encode()


def json_answer(status: str, obj) -> Answer:
    body = json.dumps(obj).encode()
    return whole(json_head(status, len(body)) + body)


@dataclass
class Measured:
    peak: int = 0
    seconds: float = 0.0


@contextlib.contextmanager
def measured() -> Iterator[Measured]:
    """The peak of the allocations traced (every thread's) and the time taken inside."""
    result = Measured()
    tracemalloc.start()
    started = time.monotonic()
    try:
        yield result
    finally:
        result.seconds = time.monotonic() - started
        result.peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def assert_refused_and_closed(server: Hostile, m: Measured) -> None:
    assert m.peak < MEMORY_BOUND, f"traced peak {m.peak / MiB:.0f} MiB"
    assert m.seconds < TIME_BOUND
    # The client closed the connection: the server's writes failed long before it sent all.
    first = server.exchanges[0]
    assert first.done.wait(TIME_BOUND)
    assert first.cut and first.sent < HOSTILE_BYTES, (first.cut, first.sent)
    assert len(server.exchanges) == 1  # refused, not reconnected


def test_an_endless_line_of_an_event_stream_is_refused_at_its_cap(hostile):
    server = hostile(endless(SSE_HEAD + b"data: ", b"x"), whole(SSE_HEAD + END))
    stream = Client(server.url).events(SID, from_seq=1)
    with measured() as m:
        with pytest.raises(ResponseTooLarge) as refused:
            next(stream)
    assert str(refused.value) == (
        "response_too_large (200): a line of the event stream is over the client's limit of "
        "16 MiB + 4 KiB (Client(max_event_bytes=…) raises it); the connection is closed"
    )
    assert refused.value.limit == MAX_EVENT_BYTES and refused.value.status == 200
    assert_refused_and_closed(server, m)
    # The stream is closed: it does not read the same line again.
    assert list(stream) == []


def test_an_endless_event_without_a_blank_line_is_refused_at_its_cap(hostile):
    data_lines = endless(SSE_HEAD + b"event: InputAccepted\n", b"data: " + b"x" * 1000 + b"\n")
    server = hostile(data_lines, whole(SSE_HEAD + END))
    stream = Client(server.url).events(SID, from_seq=1)
    with measured() as m:
        with pytest.raises(ResponseTooLarge) as refused:
            next(stream)
    assert "an event of the event stream is over the client's limit of 16 MiB + 4 KiB" in str(
        refused.value
    )
    assert_refused_and_closed(server, m)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_a_huge_error_body_is_refused_at_its_cap(hostile, declared):
    head = json_head("500 Internal Server Error", HOSTILE_BYTES if declared else None)
    server = hostile(endless(head + b'{"error":{"kind":"internal","detail":"', b"x"))
    with measured() as m:
        with pytest.raises(ResponseTooLarge) as refused:
            Client(server.url).get_session(SID)
    assert str(refused.value) == (
        "response_too_large (500): the body of a 500 answer is over the client's limit of 64 KiB"
        " (Client(max_error_bytes=…) raises it); the connection is closed"
    )
    assert refused.value.limit == MAX_ERROR_BYTES
    assert_refused_and_closed(server, m)


def test_an_answer_over_the_body_cap_is_refused_and_a_raised_cap_accepts_it(hostile):
    # Declared over the default cap: refused before its body is read.
    server = hostile(endless(json_head("200 OK", HOSTILE_BYTES) + b'{"messages":["', b"x"))
    with measured() as m:
        with pytest.raises(ResponseTooLarge) as refused:
            Client(server.url).history(SID, LOOP)
    assert str(refused.value) == (
        "response_too_large (200): the body of the answer to GET "
        f"/v1/sessions/{SID}/loops/{LOOP}/history is over the client's limit of 256 MiB"
        " (Client(max_body_bytes=…) raises it); the connection is closed"
    )
    assert refused.value.limit == MAX_BODY_BYTES
    assert_refused_and_closed(server, m)

    # Not declared (the export streams until the connection closes): counted as it comes.
    record = json.dumps({"seq": 1, "kind": "event", "payload": {"pad": "x" * 1000}}).encode()
    record += b"\n"
    export = record * (2 * MiB // len(record))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n"
    server = hostile(whole(head + export))
    with pytest.raises(ResponseTooLarge) as refused:
        Client(server.url, max_body_bytes=MiB).export(SID)
    assert "is over the client's limit of 1 MiB (Client(max_body_bytes=…)" in str(refused.value)
    assert server.exchanges[0].done.wait(TIME_BOUND)

    server = hostile(whole(head + export))
    records = Client(server.url, max_body_bytes=4 * MiB).export(SID)
    assert len(records) == len(export) // len(record) and records[0]["seq"] == 1


FRAME = b'id: 1\nevent: InputAccepted\ndata: {"seq":1,"event":{"type":"InputAccepted","pad":""}}\n'


def frame_of(size: int) -> bytes:
    """An event frame whose lines (their ends included, the blank line not) take size bytes."""
    pad = b"x" * (size - len(FRAME))
    return FRAME.replace(b'"pad":""', b'"pad":"' + pad + b'"') + b"\n"


def test_an_event_at_the_cap_is_read_and_one_byte_more_refused(hostile):
    server = hostile(whole(SSE_HEAD + frame_of(4096) + END))
    events = list(Client(server.url, max_event_bytes=4096).events(SID, from_seq=1))
    assert [(e.seq, len(e.data["pad"])) for e in events] == [(1, 4096 - len(FRAME))]

    server = hostile(whole(SSE_HEAD + frame_of(4097) + END))
    with pytest.raises(ResponseTooLarge) as refused:
        next(Client(server.url, max_event_bytes=4096).events(SID, from_seq=1))
    assert "an event of the event stream is over the client's limit of 4 KiB" in str(refused.value)

    # One line alone over the cap is refused as a line.
    server = hostile(whole(SSE_HEAD + b": " + b"x" * 4096 + b"\n\n" + END))
    with pytest.raises(ResponseTooLarge) as refused:
        next(Client(server.url, max_event_bytes=4096).events(SID, from_seq=1))
    assert "a line of the event stream" in str(refused.value)


def test_every_request_says_what_it_accepts_and_a_body_is_json(hostile):
    server = hostile(json_answer("404 Not Found", {"error": {"kind": "not_found", "detail": ""}}))
    client = Client(server.url)
    calls = [
        ("POST", lambda: client.create_session("m")),
        ("POST", lambda: client.submit_input(SID, LOOP, "hi")),
        ("POST", lambda: client.compact(SID, LOOP)),
        ("POST", lambda: client.undo(SID, LOOP)),
        ("PUT", lambda: client.pin(SID, LOOP, LOOP)),
        ("DELETE", lambda: client.unpin(SID, LOOP, LOOP)),
        ("GET", lambda: client.history(SID, LOOP)),
        ("GET", lambda: client.export(SID)),
        ("GET", lambda: next(client.events(SID))),
        ("DELETE", lambda: client.delete_session(SID)),
    ]
    for _, call in calls:
        with pytest.raises(HarnessError):
            call()
    assert [e.line.split(" ")[0] for e in server.exchanges] == [method for method, _ in calls]
    for exchange in server.exchanges:
        method, target, _ = exchange.line.split(" ")
        accept = exchange.headers.get("accept")
        if target.endswith("/export"):
            assert accept == "application/x-ndjson", exchange.line
        elif target.endswith("/events"):
            assert accept == "text/event-stream", exchange.line
        else:
            assert accept == "application/json", exchange.line
        if method in ("POST", "PUT") or exchange.body:
            assert exchange.headers.get("content-type") == "application/json", exchange.line
            assert int(exchange.headers["content-length"]) == len(exchange.body)
        else:
            assert "content-type" not in exchange.headers, exchange.line


def test_json_nested_deeper_than_python_parses_is_a_typed_error(hostile):
    # 10 000 levels fit in every cap and exceed Python's recursion limit; json.loads raises
    # RecursionError for them, which is no ValueError.
    nested = b"[" * 10_000 + b"]" * 10_000
    server = hostile(whole(json_head("200 OK", len(nested)) + nested))
    with pytest.raises(ProtocolError) as refused:
        Client(server.url).history(SID, LOOP)
    assert "the body is not JSON" in str(refused.value)

    server = hostile(whole(json_head("400 Bad Request", len(nested)) + nested))
    with pytest.raises(BadRequest) as refused:
        Client(server.url).history(SID, LOOP)
    assert refused.value.kind == "http_400"

    server = hostile(whole(SSE_HEAD + b"event: InputAccepted\ndata: " + nested + b"\n\n"))
    with pytest.raises(ProtocolError) as refused:
        next(Client(server.url).events(SID, from_seq=1))
    assert "an 'InputAccepted' frame's data is not JSON" in str(refused.value)


PIECES = [b"data: ", b"data:", b"event: ", b"event: lagged", b"event: end", b"id: ", b"id: 7",
          b": comment", b"\n", b"\r\n", b"\n\n", b"{", b"}", b"[", b'"seq":', b'"event":', b"1",
          b'{"type":"InputAccepted"}', b'{"last_seq":2}', b'{"reason":"x","last_seq":1}', b"\xff",
          b"\xc3", b"x" * 50, b" "]


def test_random_event_streams_end_or_raise_a_typed_error_and_nothing_else(hostile):
    # The stream parser on byte soup (a fixed seed, so a failure replays): each stream is served
    # once and every reconnection after it is told `end`; with a 64-byte cap, some lines and
    # frames are over it. The iteration ends, or raises a HarnessError: never another exception.
    rng = random.Random(20261206)
    outcomes: Dict[str, int] = {}
    for _ in range(300):
        soup = b"".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 40)))
        server = hostile(whole(SSE_HEAD + soup), whole(SSE_HEAD + END))
        stream = Client(server.url, max_event_bytes=64).events(SID, from_seq=1, max_reconnects=1)
        try:
            for _ in stream:
                pass
            outcome = "ended"
        except HarnessError as e:
            outcome = type(e).__name__
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        server.close()
    # The soup reaches each way out.
    assert {"ended", "ProtocolError", "ResponseTooLarge"} <= set(outcomes), outcomes
