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
