"""The typed results keep every member the server sends: each answer of the real server, read
raw, is compared with the object the client makes of it, and the OpenAPI document's schemas
with the result classes. A member the server adds and the client drops fails here."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Set

from conftest import answers

from harness_client import (
    Client,
    CommandStatus,
    Context,
    ContextPolicy,
    CreatedSession,
    Estimates,
    History,
    LoopSpec,
    LoopState,
    Measurement,
    Session,
    SessionSummary,
    ToolCall,
    Window,
)

WAIT = 10.0

# What each schema of the OpenAPI document becomes, and the members the client leaves out on
# purpose (with why): nothing else may be missing.
RESULT_CLASSES = {
    "CreatedSession": (CreatedSession, set()),
    "Session": (Session, set()),
    "LoopSummary": (LoopState, set()),
    "History": (History, set()),
    "Context": (Context, set()),
    "CommandStatus": (CommandStatus, set()),
    # tool_calls() answers a list of ToolCall, each with the answer's turn_id; the loop_id is
    # the one the caller named.
    "ToolCalls": (ToolCall, {"loop_id", "calls"}),
}
NESTED = {
    ("Context", "measurement"): Measurement,
    ("Context", "estimates"): Estimates,
    ("Context", "window"): Window,
    ("Context", "policy"): ContextPolicy,
}


def fields(cls: Any) -> Set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def assert_keeps(raw: Any, parsed: Any, where: str) -> None:
    """Every member of ``raw`` (an answer's JSON) is a field of ``parsed`` (the client's
    object), and so on down every member that became a typed object."""
    if dataclasses.is_dataclass(parsed):
        assert isinstance(raw, dict), where
        dropped = set(raw) - fields(parsed)
        assert not dropped, f"{where}: the client drops {sorted(dropped)}"
        for name in raw:
            assert_keeps(raw[name], getattr(parsed, name), f"{where}.{name}")
    elif isinstance(parsed, list) and parsed and dataclasses.is_dataclass(parsed[0]):
        for i, (r, p) in enumerate(zip(raw, parsed)):
            assert_keeps(r, p, f"{where}[{i}]")
    elif isinstance(parsed, dict) and parsed and all(dataclasses.is_dataclass(v) for v in parsed.values()):
        for name, value in parsed.items():
            assert_keeps(raw[name], value, f"{where}[{name!r}]")


def test_every_member_of_every_answer_is_kept(make_server):
    server = make_server(answers("Hello.", "Done."))
    client = Client(server.url)
    raw: Dict[str, Any] = {}

    def get(path: str) -> Any:
        _, obj = client._json("GET", path)
        return obj

    _, raw["created"] = client._json("POST", "/v1/sessions", {"loops": [LoopSpec("m").to_json()]})
    created = CreatedSession.from_json(raw["created"])
    assert_keeps(raw["created"], created, "CreatedSession")
    sid, loop = created.session_id, created.active_loop
    reply = client.wait(client.submit_input(sid, loop, "Say hello."), timeout=WAIT)
    base = f"/v1/sessions/{sid}"
    status = get(f"{base}/commands/{reply.command_id}")
    assert_keeps(status, CommandStatus.from_json(status), "CommandStatus")
    session = get(base)
    assert_keeps(session, Session.from_json(session), "Session")
    for entry in get("/v1/sessions")["sessions"]:
        assert_keeps(entry, SessionSummary.from_json(entry), "SessionSummary")
    history = get(f"{base}/loops/{loop}/history")
    assert_keeps(history, History.from_json(history), "History")
    context = get(f"{base}/loops/{loop}/context")
    parsed = Context.from_json(context)
    assert_keeps(context, parsed, "Context")
    # The members this test was written for, there and kept.
    assert parsed.estimates.system_prompt >= 0 and parsed.compactor == "offline"
    assert parsed.window is not None and parsed.window.window_tokens > 0
    assert parsed.policy is not None
    assert server.stop() == 0, server.output()


def test_every_member_the_openapi_document_names_is_kept(make_server):
    server = make_server(answers("Hello."))
    client = Client(server.url)
    _, document = client._json("GET", "/v1/openapi.json")
    schemas = document["components"]["schemas"]
    for name, (cls, left_out) in RESULT_CLASSES.items():
        members = set(schemas[name]["properties"]) - left_out
        if name == "ToolCalls":
            members |= set(schemas[name]["properties"]["calls"]["items"]["properties"])
        dropped = members - fields(cls)
        assert not dropped, f"{name}: {cls.__name__} has no {sorted(dropped)}"
    for (schema, member), cls in NESTED.items():
        declared = schemas[schema]["properties"][member]
        shapes = declared.get("oneOf", [declared])
        properties = next(s["properties"] for s in shapes if s.get("type") == "object")
        dropped = set(properties) - fields(cls)
        assert not dropped, f"{schema}.{member}: {cls.__name__} has no {sorted(dropped)}"
    assert server.stop() == 0, server.output()
