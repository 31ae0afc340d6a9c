"""harness_client against the real `harness serve` (conftest.py): sessions, a compaction waited
for and streamed, a stream that resumes after a dropped connection and after a restart with no
gap and no duplicate, the typed errors, and a clean stop on SIGTERM."""

from __future__ import annotations

import signal
import socket
from typing import List

import pytest
from conftest import answers

from harness_client.errors import error_from_response
from harness_client import (
    MessageNotFound,
    NoProposal,
    NothingToUndo,
    BadRequest,
    Client,
    CommandId,
    CommandNotFound,
    HarnessError,
    LeaseHeld,
    InputNotQueued,
    LoopNotFound,
    LoopSpec,
    NotFound,
    SessionNotFound,
    TooLarge,
    Unauthorized,
    UnknownModel,
)

UNKNOWN = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
# Bounds on command waits: the replies come in milliseconds; these only end a broken run.
WAIT = 10.0
# Keeps only the newest segment, so that a few short turns leave something to compact.
LOOP = LoopSpec("m", keep_recent_segments=1, keep_recent_tokens=1)
SCRIPT = answers(*(f"Answer {i}." for i in range(1, 9)))


def journal_event_seqs(client: Client, session_id: str) -> List[int]:
    return [r["seq"] for r in client.export(session_id) if r["kind"] == "event"]


def take_until(stream, predicate) -> List[Event]:
    """Events of the stream up to and including the first that satisfies predicate."""
    taken = []
    for event in stream:
        taken.append(event)
        if predicate(event):
            return taken
    raise AssertionError(f"the stream ended first: {stream.end}")


def converse(client: Client, session_id: str, loop_id: str, *texts: str) -> None:
    for text in texts:
        reply = client.wait(client.submit_input(session_id, loop_id, text), timeout=WAIT)
        assert reply.reply_type == "InputAccepted", reply


def test_a_compaction_is_waited_for_and_its_events_stream(make_server):
    server = make_server(SCRIPT)
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    assert [s.session_id for s in client.list_sessions()] == [sid]
    converse(client, sid, loop, "Say hello.", "Now edit src/app.cc.", "Run the tests.")

    with client.events(sid, from_seq=1) as stream:
        # An accepted input is queued, not yet answered: the compaction waits for the three turns
        # to end (replayed or live), so it has their messages to summarize; and the subscription
        # exists from here on, so what follows arrives live.
        turns = []
        seen = take_until(stream, lambda e: e.type == "TurnCompleted" and turns.append(e) is None and len(turns) == 3)
        command_id = client.compact(sid, loop)
        assert isinstance(command_id, str)
        reply = client.wait(command_id, timeout=WAIT)
        assert reply.answered and reply.session_id == sid
        assert reply.reply_type == "CompactWaiterResolved", reply.reply
        seen += take_until(stream, lambda e: e.type == "CompactWaiterResolved")

    types = [e.type for e in seen]
    assert "CompactionStarted" in types  # ephemeral: on the live stream only
    assert types.index("CompactionStarted") < types.index("CompactionCommitted")
    started = seen[types.index("CompactionStarted")]
    assert started.seq == 0 and not started.enduring
    committed = seen[types.index("CompactionCommitted")]
    assert committed.data["loop_id"] == loop
    assert reply.reply["cause"]["command_id"] == command_id
    # The enduring ones are the journal's events, in order, none missing.
    durable = [e.seq for e in seen if e.enduring]
    assert durable == journal_event_seqs(client, sid)[: len(durable)]
    assert stream.last_event_id == durable[-1]

    # Filters: the loop's compaction outcome only.
    with client.events(sid, from_seq=1, loop=loop, kinds=["CompactionCommitted", "CompactionRejected"]) as only:
        assert next(only).seq == committed.seq

    context = client.context(sid, loop)
    assert context.derived_prefix == 1 and context.categories["summary"].messages == 1
    assert client.history(sid, loop).messages[0]["role"] == "user"
    state = client.get_session(sid)
    # The loop may still be finishing the compaction's aftermath when its waiter is answered.
    assert state.active_loop == loop and state.loops[0].status in ("idle", "running")
    assert state.loops[0].loop_id == loop and not state.faulted
    assert server.stop() == 0, server.output()


def test_a_dropped_connection_resumes_with_no_gap_and_no_duplicate(make_server):
    server = make_server(SCRIPT)
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    converse(client, sid, loop, "Say hello.", "Now edit src/app.cc.")

    stream = client.events(sid, from_seq=1)
    first = [next(stream) for _ in range(3)]
    # Cut the connection under the iterator, as a network would: what the socket had already
    # buffered may still be read, then the body ends without an end frame.
    stream._conn.sock.shutdown(socket.SHUT_RDWR)
    converse(client, sid, loop, "Run the tests.")
    # Read on to the third turn's end, which the server published after the cut.
    turns = sum(e.type == "TurnCompleted" for e in first)
    rest = []
    for event in stream:
        rest.append(event)
        turns += event.type == "TurnCompleted"
        if turns == 3:
            break
    stream.close()

    assert stream.reconnects == 1
    seqs = [e.seq for e in first + rest if e.enduring]
    assert seqs == journal_event_seqs(client, sid)[: len(seqs)]
    assert len(set(seqs)) == len(seqs)
    assert server.stop() == 0, server.output()


def test_sigterm_stops_the_server_and_a_new_stream_resumes_on_the_restarted_one(make_server):
    """Also: a command accepted before the restart is answered after it (wait() with the
    CommandId the server returned reads the session's journal)."""
    server = make_server(SCRIPT)
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    said = client.submit_input(sid, loop, "Say hello.")
    assert isinstance(said, CommandId) and said.session_id == sid
    assert client.wait(said, timeout=WAIT).reply_type == "InputAccepted"

    stream = client.events(sid, from_seq=1)
    before = take_until(stream, lambda e: e.type == "TurnCompleted")
    assert server.stop(signal.SIGTERM) == 0, server.output()
    # The server ends its streams after what was published: the iterator stops, and says why.
    after_stop = list(stream)
    assert stream.end is not None and stream.end.reason == "hub_closed"
    last = stream.last_event_id
    assert last == max(e.seq for e in before + after_stop if e.enduring)

    restarted = make_server(SCRIPT)  # the same data directory, another port
    client = Client(restarted.url)
    # The command from before the restart: the new server's memory does not hold it, the
    # session's journal does, and wait() asks the session's lookup.
    with pytest.raises(CommandNotFound):
        client.command(str(said))
    reply = client.wait(said, timeout=WAIT)
    assert reply.reply_type == "InputAccepted" and reply.reply["cause"]["command_id"] == said
    assert reply.session_id == sid
    with client.events(sid, last_event_id=last) as resumed:
        converse(client, sid, loop, "Now edit src/app.cc.")
        rest = take_until(resumed, lambda e: e.type == "TurnCompleted")
    seqs = [e.seq for e in before + after_stop + rest if e.enduring]
    assert seqs == journal_event_seqs(client, sid)[: len(seqs)]
    assert restarted.stop() == 0, restarted.output()


def test_refusals_are_typed(make_server):
    server = make_server(SCRIPT, "--max-body-bytes", "1024")
    client = Client(server.url)
    with pytest.raises(SessionNotFound) as unknown:
        client.get_session(UNKNOWN)
    assert (unknown.value.kind, unknown.value.status) == ("session_not_found", 404)
    assert isinstance(unknown.value, NotFound) and isinstance(unknown.value, HarnessError)
    assert unknown.value.detail
    with pytest.raises(SessionNotFound):
        next(client.events(UNKNOWN))
    with pytest.raises(CommandNotFound):
        client.wait(UNKNOWN, timeout=WAIT)
    with pytest.raises(UnknownModel) as model:
        client.create_session("scripted:/etc/passwd")
    assert isinstance(model.value, BadRequest) and model.value.status == 400
    # A path segment stays one segment, whatever its text.
    with pytest.raises(BadRequest) as bad_id:
        client.get_session("../sessions?x=1")
    assert bad_id.value.kind == "invalid_id"

    created = client.create_session("m")
    with pytest.raises(LoopNotFound):
        client.compact(created.session_id, UNKNOWN)
    # No queued input has that id: withdrawing it is refused, in both forms.
    with pytest.raises(InputNotQueued) as not_queued:
        client.cancel_queued_input(created.session_id, created.active_loop, UNKNOWN)
    assert (not_queued.value.kind, not_queued.value.status) == ("input_not_queued", 409)
    with pytest.raises(InputNotQueued):
        client.cancel_delegate_request(created.session_id, created.active_loop, UNKNOWN)
    with pytest.raises(TooLarge) as large:
        client.submit_input(created.session_id, created.active_loop, "x" * 4000)
    assert (large.value.kind, large.value.status) == ("too_large", 413)
    assert server.stop() == 0, server.output()


def test_a_wrong_or_missing_token_is_unauthorized(make_server, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n", encoding="utf-8")
    server = make_server(SCRIPT, "--token-file", str(token))
    for wrong in (None, "wrong"):
        with pytest.raises(Unauthorized) as refused:
            Client(server.url, token=wrong).list_sessions()
        assert (refused.value.kind, refused.value.status) == ("unauthorized", 401)
    assert Client(server.url, token="s3cret-token").list_sessions() == []
    assert server.stop() == 0, server.output()
    assert "s3cret" not in server.output()


def test_a_lease_held_names_the_url_its_holder_advertises(make_server):
    # Two servers on one journal (the same data directory): the first advertises a URL and holds
    # the session it created; the second is refused it and told where it is served.
    first = make_server(SCRIPT, "--advertise-url", "http://10.0.0.7:8420")
    second = make_server(SCRIPT)
    created = Client(first.url).create_session("m")
    with pytest.raises(LeaseHeld) as held:
        Client(second.url).get_session(created.session_id)
    assert (held.value.kind, held.value.status) == ("lease_held", 409)
    assert held.value.holder_url == "http://10.0.0.7:8420"
    assert isinstance(held.value.holder_owner, str) and len(held.value.holder_owner) == 36
    assert isinstance(held.value.lease_expires_at_ms, int)
    # The first server, refused nothing, still serves it.
    assert Client(first.url).get_session(created.session_id).session_id == created.session_id
    assert second.stop() == 0, second.output()
    assert first.stop() == 0, first.output()


def test_a_lease_held_without_a_holder_or_a_url_has_none():
    bare = error_from_response(409, b'{"error":{"kind":"lease_held","detail":"held"}}')
    assert isinstance(bare, LeaseHeld)
    assert (bare.holder_owner, bare.lease_expires_at_ms, bare.holder_url) == (None, None, None)
    no_url = error_from_response(
        409,
        b'{"error":{"kind":"lease_held","detail":"held","holder":'
        b'{"owner":"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","lease_expires_at_ms":17}}}',
    )
    assert (no_url.holder_owner, no_url.lease_expires_at_ms, no_url.holder_url) == (UNKNOWN, 17, None)


def test_a_previewed_compaction_is_approved_undone_and_messages_pinned(make_server):
    """docs/preview.md, docs/undo.md, docs/pins.md through the client: the proposal shows in the
    history until approved, the commit is undone, pins change, and each refusal is typed."""
    server = make_server(SCRIPT)
    client = Client(server.url)
    created = client.create_session(LOOP)
    sid, loop = created.session_id, created.active_loop
    converse(client, sid, loop, "Say hello.", "Now edit src/app.cc.", "Run the tests.")
    with client.events(sid, from_seq=1) as stream:
        # The three turns end first (input is accepted before its turn runs), so that the
        # compaction runs on an idle loop.
        turns = []
        take_until(stream, lambda e: e.type == "TurnCompleted" and turns.append(e) is None and len(turns) == 3)
        command_id = client.compact(sid, loop, instructions="keep the file names", preview=True)
        take_until(stream, lambda e: e.type == "CompactionProposed")
    history = client.history(sid, loop)
    assert history.proposal is not None and history.proposal["type"] == "CompactionProposed"
    assert len(history.message_ids) == len(history.messages) == 6
    attempt = history.proposal["attempt_id"]
    with pytest.raises(NoProposal):
        client.discard(sid, loop, history.message_ids[0])
    terminal = client.approve(sid, loop, attempt)
    reply = client.wait(command_id, timeout=WAIT)
    assert reply.reply_type == "CompactWaiterResolved", reply.reply
    assert reply.reply["committed_event_id"] == terminal
    compacted = client.history(sid, loop)
    assert compacted.proposal is None and compacted.undoable == 1 and compacted.derived_prefix == 1
    with pytest.raises(NoProposal):
        client.approve(sid, loop, attempt)

    assert isinstance(client.undo(sid, loop), str)
    assert client.history(sid, loop).message_ids == history.message_ids
    with pytest.raises(NothingToUndo):
        client.undo(sid, loop)

    last = history.message_ids[-1]
    assert client.pin(sid, loop, last) is True
    assert client.pin(sid, loop, last) is False
    assert client.history(sid, loop).pinned == [last]
    assert client.unpin(sid, loop, last) is True
    with pytest.raises(MessageNotFound):
        client.pin(sid, loop, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")


def test_the_servers_browser_refusals_are_their_own_classes(make_server):
    """docs/serve.md "Security: what a browser can do": a foreign Origin, a rebinding Host and a
    body that is not JSON are refused by the real server, and each refusal becomes its class."""
    import http.client
    from urllib.parse import urlsplit

    from harness_client import HostNotAllowed, OriginNotAllowed, UnsupportedMediaType

    server = make_server(SCRIPT)
    port = urlsplit(server.url).port
    body = b'{"loops":[{"model":"m"}]}'
    cases = [
        ({"Origin": "http://evil.example", "Content-Type": "application/json"}, OriginNotAllowed, 403),
        ({"Host": f"rebind.attacker.example:{port}", "Content-Type": "application/json"}, HostNotAllowed, 421),
        ({"Content-Type": "text/plain"}, UnsupportedMediaType, 415),
    ]
    for headers, cls, status in cases:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        try:
            connection.request("POST", "/v1/sessions", body=body, headers=headers)
            response = connection.getresponse()
            error = error_from_response(response.status, response.read())
        finally:
            connection.close()
        assert response.status == status and isinstance(error, cls), (headers, error)
    # Nothing was created, and the client itself (same origin, JSON) is served.
    client = Client(server.url)
    assert client.list_sessions() == []
    created = client.create_session(LOOP)
    assert client.history(created.session_id, created.active_loop).deferred_pins == 0


def test_a_loops_coverage_mode_is_journaled_and_a_wrong_one_refused(make_server):
    """LoopSpec.coverage reaches the loop's journaled policy (mode 4 is repair, 2 report; repair is
    the default with a model compactor), and a mode the server does not know is a 400
    invalid_request."""
    import json
    import re

    server = make_server(SCRIPT)
    client = Client(server.url)
    assert LoopSpec("m", coverage="repair").to_json()["policy"] == {"coverage": "repair"}

    def journaled_mode(session_id: str) -> int:
        for record in client.export(session_id):
            text = json.dumps(record)
            if "LoopCreated" in text:
                found = re.search(r'\\*"mode\\*"\s*:\s*(\d+)', text)
                assert found, text
                return int(found.group(1))
        raise AssertionError("no LoopCreated")

    assert journaled_mode(client.create_session(LoopSpec("m", coverage="repair")).session_id) == 4
    assert journaled_mode(client.create_session(LoopSpec("m")).session_id) == 2
    # A model compactor's loop gets repair unless its policy says otherwise.
    assert journaled_mode(client.create_session(LoopSpec("m", compactor="m")).session_id) == 4
    spec = LoopSpec("m", compactor="m", coverage="report")
    assert journaled_mode(client.create_session(spec).session_id) == 2
    with pytest.raises(BadRequest) as bad:
        client.create_session(LoopSpec("m", coverage="sometimes"))
    assert bad.value.kind == "invalid_request"
    assert server.stop() == 0, server.output()


def test_a_loop_starts_from_a_history_and_compacts_it(make_server):
    """LoopSpec.history reaches the loop: its history is the messages given, and a compaction
    replaces all but the newest request with the summary."""
    server = make_server(SCRIPT)
    client = Client(server.url)
    history = []
    for i in range(3):
        history.append({"role": "user", "blocks": [{"type": "text", "text": f"Request {i}: edit src/app.cc."}]})
        history.append({"role": "assistant", "blocks": [{"type": "text", "text": f"Edited, step {i}."}], "usage": None})
    spec = LoopSpec("m", keep_recent_segments=1, keep_recent_tokens=1, history=tuple(history))
    assert spec.to_json()["history"] == history
    assert "history" not in LoopSpec("m").to_json()
    session = client.create_session(spec)
    sid, loop = session.session_id, session.active_loop
    reply = client.wait(client.compact(sid, loop), timeout=60)
    assert reply.reply_type == "CompactWaiterResolved"
