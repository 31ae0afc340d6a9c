"""Send and wait, and text deltas, against the real server with a scripted model whose steps
stream their text (docs/scripted.md "stream"): Client.ask, Client.ask_stream, the text_delta
frames of a stream that asks for them (and none on one that does not), a failed turn, a
deadline, and a stream nobody reads that does not hold the loop back."""

from __future__ import annotations

import json
import socket
import time
import urllib.parse

import pytest

from harness_client import (
    Client,
    Event,
    LoopSpec,
    StreamTimeout,
    TextDelta,
    TurnNotCompleted,
)

WAIT = 60.0
LOOP = LoopSpec("m", automatic=False)


def streamed(text: str, piece: int, **extra) -> dict:
    return {"raw": text, "stream": {"bytes": piece}, **extra}


def test_ask_returns_the_answer_once_the_turn_completed(make_server):
    server = make_server(json.dumps([streamed("Hello there, world.", 4), {"raw": "Plain."}]))
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    answer = client.ask(sid, loop, "Say hello.", timeout=WAIT)
    assert answer.text == "Hello there, world."
    assert answer.deltas == 5  # 19 bytes in pieces of at most 4
    assert answer.message["role"] == "assistant"
    assert answer.message["blocks"] == [{"type": "text", "text": "Hello there, world."}]
    assert answer.command_id and answer.turn_id
    # A step that does not stream: no delta, the same answer.
    second = client.ask(sid, loop, "Again.", timeout=WAIT)
    assert (second.text, second.deltas) == ("Plain.", 0)
    assert second.turn_id != answer.turn_id
    history = client.history(sid, loop)
    assert [m["role"] for m in history.messages] == ["user", "assistant", "user", "assistant"]
    assert server.stop() == 0, server.output()


def test_ask_stream_yields_the_text_as_the_model_streams_it(make_server):
    text = "Streaming: ünïcödé and ASCII, in small pieces."
    server = make_server(json.dumps([streamed(text, 3)]))
    client = Client(server.url)
    created = client.create_session(LOOP)
    with client.ask_stream(created.session_id, created.active_loop, "Stream.", timeout=WAIT) as stream:
        pieces = list(stream)
    assert "".join(pieces) == text
    # Pieces of at most 3 bytes, never cutting a character (a wider one alone).
    assert all(len(p.encode()) <= 3 or len(p) == 1 for p in pieces) and len(pieces) > 10
    assert stream.answer is not None and stream.answer.text == text
    assert stream.answer.deltas == len(pieces)
    assert server.stop() == 0, server.output()


def test_text_deltas_come_only_on_streams_that_ask_and_before_their_message(make_server):
    server = make_server(json.dumps([streamed("One two three.", 5)]))
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    with client.events(sid, text_deltas=True) as with_deltas, client.events(sid) as without:
        with_deltas.connect()
        without.connect()
        client.ask(sid, loop, "Count.", timeout=WAIT)
        seen = []
        for item in with_deltas:
            seen.append(item)
            if isinstance(item, Event) and item.type == "TurnCompleted":
                break
        plain = []
        for item in without:
            plain.append(item)
            if isinstance(item, Event) and item.type == "TurnCompleted":
                break
    deltas = [i for i in seen if isinstance(i, TextDelta)]
    assert "".join(d.text for d in deltas) == "One two three."
    turn = next(i for i in seen if isinstance(i, Event) and i.type == "TurnStarted").data["turn_id"]
    assert {(d.loop_id, d.turn_id) for d in deltas} == {(loop, turn)}
    # Every delta before the assistant's message, which holds the whole text.
    committed = next(
        n for n, i in enumerate(seen)
        if isinstance(i, Event) and i.type == "MessageCommitted" and i.data["message"]["role"] == "assistant"
    )
    assert max(seen.index(d) for d in deltas) < committed
    # The same events without a single delta; and none was journaled.
    assert not any(isinstance(i, TextDelta) for i in plain)
    assert [i.type for i in plain] == [i.type for i in seen if isinstance(i, Event)]
    assert all(r.get("type") != "text_delta" for r in client.export(sid))
    assert server.stop() == 0, server.output()


def test_a_failed_turn_and_a_deadline_are_typed(make_server):
    server = make_server(json.dumps([{"error": "transport"}, {"raw": "Late.", "delay_ms": 3000}]))
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    with pytest.raises(TurnNotCompleted) as failed:
        client.ask(sid, loop, "Fail.", timeout=WAIT)
    assert failed.value.kind == "turn_failed" and failed.value.reason == "model_error"
    started = time.monotonic()
    with pytest.raises(StreamTimeout):
        client.ask(sid, loop, "Slow.", timeout=0.5)
    assert time.monotonic() - started < 2.5  # the deadline, not the model's 3 s
    # The turn went on on the server: its answer is committed.
    with client.events(sid, from_seq=1, kinds=["TurnCompleted"], read_timeout=WAIT) as stream:
        next(stream)
    assert client.history(sid, loop).messages[-1]["blocks"][0]["text"] == "Late."
    assert server.stop() == 0, server.output()


def test_a_stream_nobody_reads_does_not_hold_the_loop_back(make_server):
    # 400 KiB in pieces of 4 bytes: 102,400 deltas, some 14 MB of frames, far more than the
    # kernel's socket buffers and the server's 1 MiB of queued deltas a stream.
    text = ("abcdefghijklmnopqrstuvwxyz012345" * 12800)
    server = make_server(json.dumps([streamed(text, 4)]))
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    url = urllib.parse.urlsplit(server.url)
    idle = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    idle.connect((url.hostname, url.port))
    try:
        idle.sendall(
            f"GET /v1/sessions/{sid}/events?text_deltas=true HTTP/1.1\r\nHost: {url.netloc}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        idle.settimeout(WAIT)
        head = idle.recv(1024)  # the answer's head: the server subscribed; then never read
        assert head.startswith(b"HTTP/1.1 200"), head
        answer = client.ask(sid, loop, "Write a lot.", timeout=WAIT)
        # The answer is the committed message, whole, however many deltas this reader kept up
        # with.
        assert answer.text == text and 0 < answer.deltas <= len(text) // 4
        # Read now: the stream still carries the turn's events, with fewer deltas than were sent
        # (the ones that did not fit were dropped, not queued without bound).
        received = bytearray()
        while b"event: TurnCompleted" not in received[-65536:]:
            chunk = idle.recv(1 << 16)
            assert chunk, "the stream ended"
            received += chunk
        sent = received.count(b"event: text_delta\n")
        assert 0 < sent < len(text) // 4
        assert b"event: MessageCommitted" in received
    finally:
        idle.close()
    assert server.stop() == 0, server.output()
