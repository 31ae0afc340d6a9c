"""Client tools against the real `harness serve` (conftest.py): a scripted model calls the
client's tool; the client finds the call on the stream and in tool_calls(), answers it with
answer_tool(), and the turn ends with the model's answer after the result; an unknown or
already answered call is refused with its typed error."""

from __future__ import annotations

import json

import pytest

from harness_client import (
    Client,
    Conflict,
    LoopSpec,
    NotFound,
    NothingToMask,
    NotMasked,
    ToolCallAnswered,
    ToolCallNotFound,
    ToolSpec,
)

WAIT = 10.0
LOOKUP = ToolSpec(
    "lookup",
    "looks a thing up",
    {"type": "object", "properties": {"q": {"type": "string"}}},
)
SCRIPT = json.dumps(
    [
        {
            "message": {
                "role": "assistant",
                "usage": None,
                "blocks": [
                    {"type": "tool_use", "id": "call-1", "name": "lookup", "input": {"q": "it"}},
                    {"type": "tool_use", "id": "call-2", "name": "lookup", "input": {"q": "that"}},
                ],
            }
        },
        {"raw": "Both looked up."},
    ]
)


def test_a_client_tool_is_called_and_answered(make_server):
    server = make_server(SCRIPT)
    client = Client(server.url)
    created = client.create_session(LoopSpec("m", tools=(LOOKUP,)))
    sid, loop = created.session_id, created.active_loop
    assert client.tool_calls(sid, loop) == []
    with client.events(sid, from_seq=1, read_timeout=WAIT) as stream:
        client.submit_input(sid, loop, "Look them up.")
        for event in stream:
            message = event.data.get("message", {})
            if event.type == "MessageCommitted" and message.get("role") == "assistant":
                break
        uses = [b for b in message["blocks"] if b["type"] == "tool_use"]
        assert [u["id"] for u in uses] == ["call-1", "call-2"]

        # A client that only knows the loop finds the same calls.
        calls = client.tool_calls(sid, loop)
        assert [(c.tool_use_id, c.name, c.input) for c in calls] == [
            ("call-1", "lookup", {"q": "it"}),
            ("call-2", "lookup", {"q": "that"}),
        ]
        with pytest.raises(ToolCallNotFound) as unknown:
            client.answer_tool(sid, loop, "call-9", "x")
        assert (unknown.value.kind, unknown.value.status) == ("tool_call_not_found", 404)
        assert isinstance(unknown.value, NotFound)

        assert client.tool_results(sid, loop, [("call-1", "found it", False), ("call-2", "no", True)]) == [
            "call-1",
            "call-2",
        ]
        with pytest.raises(ToolCallAnswered) as again:
            client.answer_tool(sid, loop, "call-1", "twice")
        assert (again.value.kind, again.value.status) == ("tool_call_answered", 409)
        assert isinstance(again.value, Conflict)
        for event in stream:
            if event.type == "TurnCompleted":
                break
    messages = client.history(sid, loop).messages
    results = [m for m in messages if m["role"] == "tool"]
    assert [(r["tool_use_id"], r["blocks"][0]["text"], r["is_error"]) for r in results] == [
        ("call-1", "found it", False),
        ("call-2", "no", True),
    ]
    assert messages[-1]["blocks"][0]["text"] == "Both looked up."
    assert client.tool_calls(sid, loop) == []
    assert server.stop() == 0, server.output()


MASK_SCRIPT = json.dumps(
    [
        {
            "message": {
                "role": "assistant",
                "usage": None,
                "blocks": [{"type": "tool_use", "id": "call-1", "name": "lookup", "input": {"q": "log"}}],
            }
        },
        {"raw": "Read the log."},
        {"raw": "The tests pass."},
    ]
)


def test_old_tool_output_is_masked_read_and_unmasked(make_server):
    """docs/masking.md through the client: a large tool result of an earlier turn is masked,
    its original read back, unmasked one by one or all at once; refusals are typed."""
    server = make_server(MASK_SCRIPT)
    client = Client(server.url)
    spec = LoopSpec("m", tools=(LOOKUP,), masking="off", keep_recent_segments=1)
    created = client.create_session(spec)
    sid, loop = created.session_id, created.active_loop
    with pytest.raises(NothingToMask) as nothing:
        client.mask(sid, loop)
    assert (nothing.value.kind, nothing.value.status) == ("nothing_to_mask", 409)
    log = "line of the build log\n" * 200
    with client.events(sid, from_seq=1, read_timeout=WAIT) as stream:
        client.submit_input(sid, loop, "Read the log.")
        for event in stream:
            if event.type == "MessageCommitted" and event.data.get("message", {}).get("role") == "assistant":
                break
        client.answer_tool(sid, loop, "call-1", log)
        for event in stream:
            if event.type == "TurnCompleted":
                break
        client.submit_input(sid, loop, "Now the tests.")
        for event in stream:
            if event.type == "TurnCompleted":
                break

    event_id = client.mask(sid, loop)
    assert isinstance(event_id, str)
    history = client.history(sid, loop)
    assert history.masked == [history.message_ids[2]]
    assert "masked to save context" in json.dumps(history.messages[2])
    assert history.undoable == 1
    original = client.masked_original(sid, loop, history.masked[0])
    assert original["role"] == "tool" and log in json.dumps(original).replace("\\n", "\n")

    assert isinstance(client.unmask(sid, loop, history.masked[0]), str)
    assert client.history(sid, loop).masked == []
    with pytest.raises(NotMasked) as not_masked:
        client.masked_original(sid, loop, history.masked[0])
    assert (not_masked.value.kind, not_masked.value.status) == ("not_masked", 404)
    with pytest.raises(NotMasked):
        client.unmask(sid, loop)
    client.mask(sid, loop)
    assert isinstance(client.unmask(sid, loop), str)
    assert client.history(sid, loop).masked == []
