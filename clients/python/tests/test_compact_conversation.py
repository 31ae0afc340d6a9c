"""Client.compact_conversation against the real `harness serve` (conftest.py): a conversation the
client holds, compacted in each provider's shape and answered in the same shape; a stored one
is a session of the journal; a rejection and a malformed conversation are typed errors."""

from __future__ import annotations

import pytest
from conftest import answers

from harness_client import (
    BadRequest,
    Client,
    CompactedConversation,
    CompactionRejected,
    ConversationReport,
)

SCRIPT = answers("unused")
# Keeps only the newest segment, so that a short conversation has something to summarize; 60
# tokens hold that segment whole, so the tail is the conversation's last messages and comes back
# as sent (a smaller target cuts inside it, and the tail is written as committed).
OPTIONS = {"keep_recent_segments": 1, "keep_recent_tokens": 60}

CHAT = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test in src/net/client.cc."},
    {"role": "assistant", "content": "RetriesOn503 fails; the fake server closes early."},
    {"role": "user", "content": "Now make the retry delay configurable."},
    {"role": "assistant", "content": "Done: RetryPolicy::delay is a parameter."},
]
RESPONSES = [
    {"type": "message", "role": "user", "content": "Fix the failing test in src/net/client.cc."},
    {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{\"command\":\"ctest\"}"},
    {"type": "function_call_output", "call_id": "c1", "output": "1 failed: RetriesOn503"},
    {"type": "message", "role": "user", "content": "Now make the retry delay configurable."},
    {"type": "message", "role": "assistant",
     "content": [{"type": "output_text", "text": "Done: RetryPolicy::delay is a parameter."}]},
]
ANTHROPIC = [
    {"role": "user", "content": "Fix the failing test in src/net/client.cc."},
    {"role": "assistant", "content": "RetriesOn503 fails; the fake server closes early."},
    {"role": "user", "content": "Now make the retry delay configurable."},
    {"role": "assistant", "content": [{"type": "text", "text": "Done: RetryPolicy::delay is a parameter."}]},
]


def summary_text(element) -> str:
    content = element["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.mark.parametrize(
    "form,conversation,system",
    [("openai", CHAT, None), ("openai-responses", RESPONSES, None),
     ("anthropic", ANTHROPIC, "You are a coding agent.")],
)
def test_each_shape_comes_back_in_that_shape_with_the_retained_elements(
        make_server, form, conversation, system):
    server = make_server(SCRIPT)
    client = Client(server.url)
    result = client.compact_conversation(form, conversation, system=system, **OPTIONS)
    assert isinstance(result, CompactedConversation)
    assert isinstance(result.report, ConversationReport)
    assert result.format == form
    assert result.summary.startswith("<conversation_summary>")
    assert result.session_id is None and result.loop_id is None
    report = result.report
    assert report.messages_before >= 3
    assert report.tokens_after > 0 and report.input_limit > report.tokens_after
    assert report.retained >= 1 and report.retained_verbatim
    assert report.pinned == 0 and report.shortened == 0
    kept = report.retained_elements
    assert kept >= 1
    # The retained elements are the ones sent; the summary is written fresh just before them.
    assert result.messages[-kept:] == conversation[-kept:]
    head = result.messages[-kept - 1]
    assert head["role"] == "user"
    assert summary_text(head).startswith("<conversation_summary>")
    if form == "openai":
        assert result.messages[0] == CHAT[0], "the system prompt stays first"
    assert result.system == system
    assert client.list_sessions() == [], "nothing is stored without store"


def test_a_stored_compaction_is_a_session_of_the_journal(make_server):
    server = make_server(SCRIPT)
    client = Client(server.url)
    result = client.compact_conversation("openai", CHAT, store=True, **OPTIONS)
    assert result.session_id is not None and result.loop_id is not None
    assert [s.session_id for s in client.list_sessions()] == [result.session_id]
    history = client.history(result.session_id, result.loop_id)
    assert history.derived_prefix == 1
    assert len(history.messages) == 1 + result.report.retained


def test_rejections_and_malformed_conversations_are_typed(make_server):
    server = make_server(SCRIPT)
    client = Client(server.url)
    with pytest.raises(CompactionRejected) as rejected:
        client.compact_conversation("openai", CHAT[1:3])
    assert rejected.value.status == 422
    assert rejected.value.reason == "unavailable"
    assert rejected.value.reason_detail == "history_fits_tail_target"
    with pytest.raises(BadRequest) as refused:
        client.compact_conversation("openai", [{"role": "function", "name": "f", "content": "x"}])
    assert refused.value.kind == "invalid_request"
    assert refused.value.detail.startswith("element 0: $.messages[0]")
    assert client.list_sessions() == []
