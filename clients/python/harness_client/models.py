"""The typed objects of the `harness serve` API (docs/serve.md).

Each ``from_json`` checks the shape it reads and raises ``ProtocolError`` on anything else, so a
caller never meets a half-filled object. Text from the server (ids, event bodies, messages) is
kept as data: strings and plain ``dict``/``list`` values of ``json.loads``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .errors import ProtocolError


def _get(obj: Any, name: str, kind: type | tuple, where: str, optional: bool = False) -> Any:
    if not isinstance(obj, dict):
        raise ProtocolError("protocol", None, f"{where} is not a JSON object")
    if name not in obj:
        if optional:
            return None
        raise ProtocolError("protocol", None, f"{where} has no member {name!r}")
    value = obj[name]
    if optional and value is None:
        return None
    # bool is an int in Python: a count must not be a boolean, nor a flag an integer.
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise ProtocolError("protocol", None, f"{where}.{name} has the wrong type")
    return value


@dataclass(frozen=True)
class ToolSpec:
    """A tool that runs on the client (docs/serve.md "Client tools"): the model is offered it,
    and each call of it waits for the client's result (Client.answer_tool)."""

    name: str  # 1 to 64 characters of A-Z a-z 0-9 _ -
    description: Optional[str] = None
    input_schema: Optional[Dict[str, Any]] = None  # a JSON Schema object; None: {"type":"object"}

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.input_schema is not None:
            out["input_schema"] = self.input_schema
        return out


@dataclass(frozen=True)
class LoopSpec:
    """One loop of POST /v1/sessions. Only ``model`` (a name the server was configured with) is
    required; None leaves a member out, so the server's default applies."""

    model: str
    compactor: str = "offline"  # "offline" (extractive) or a configured model's name
    system_prompt: Optional[str] = None
    automatic: Optional[bool] = None  # automatic compaction (the server's default: on)
    # "first": automatic compaction masks old tool output first (the server's default), "off"
    # (docs/masking.md)
    masking: Optional[str] = None
    # "off", "report", "repair" or "enforce" (docs/compactors.md); the server's default: "repair"
    # for a model compactor, "report" for the offline one
    coverage: Optional[str] = None
    keep_recent_segments: Optional[int] = None
    keep_recent_tokens: Optional[int] = None
    tools: Tuple[ToolSpec, ...] = ()  # client tools
    # The loop's initial history: messages in the harness transcript codec (docs/content.md), as
    # dicts; empty leaves the member out. With model "offline" a server started without --model
    # compacts them (docs/serve.md).
    history: Tuple[Dict[str, Any], ...] = ()

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"model": self.model, "compactor": self.compactor}
        if self.system_prompt is not None:
            out["system_prompt"] = self.system_prompt
        policy: Dict[str, Any] = {}
        if self.automatic is not None:
            policy["automatic"] = self.automatic
        if self.masking is not None:
            policy["masking"] = self.masking
        if self.coverage is not None:
            policy["coverage"] = self.coverage
        if self.keep_recent_segments is not None:
            policy["keep_recent_segments"] = self.keep_recent_segments
        if self.keep_recent_tokens is not None:
            policy["keep_recent_tokens"] = self.keep_recent_tokens
        if policy:
            out["policy"] = policy
        if self.tools:
            out["tools"] = [tool.to_json() for tool in self.tools]
        if self.history:
            out["history"] = list(self.history)
        return out


@dataclass(frozen=True)
class CreatedSession:
    """201 of POST /v1/sessions: the session and its loops' ids, the first the active one."""

    session_id: str
    loops: List[str]

    @property
    def active_loop(self) -> str:
        return self.loops[0]

    @classmethod
    def from_json(cls, obj: Any) -> "CreatedSession":
        loops = _get(obj, "loops", list, "$")
        if not loops or not all(isinstance(loop, str) for loop in loops):
            raise ProtocolError("protocol", None, "$.loops is not a list of loop ids")
        return cls(_get(obj, "session_id", str, "$"), list(loops))


@dataclass(frozen=True)
class SessionSummary:
    """One entry of GET /v1/sessions: a session of the journal, and whether the server holds it
    in memory now."""

    session_id: str
    in_memory: bool

    @classmethod
    def from_json(cls, obj: Any) -> "SessionSummary":
        return cls(_get(obj, "session_id", str, "$"), _get(obj, "in_memory", bool, "$"))


@dataclass(frozen=True)
class LoopState:
    loop_id: str
    status: str  # "idle", "running" or "exited"
    history_messages: int
    queued_inputs: int
    compacting: bool

    @classmethod
    def from_json(cls, obj: Any, where: str = "$") -> "LoopState":
        return cls(
            _get(obj, "loop_id", str, where),
            _get(obj, "status", str, where),
            _get(obj, "history_messages", int, where),
            _get(obj, "queued_inputs", int, where),
            _get(obj, "compacting", bool, where),
        )


@dataclass(frozen=True)
class Session:
    """GET /v1/sessions/{id}."""

    session_id: str
    active_loop: Optional[str]
    faulted: bool
    loops: List[LoopState]

    @classmethod
    def from_json(cls, obj: Any) -> "Session":
        loops = _get(obj, "loops", list, "$")
        return cls(
            _get(obj, "session_id", str, "$"),
            _get(obj, "active_loop", str, "$", optional=True),
            _get(obj, "faulted", bool, "$"),
            [LoopState.from_json(loop, f"$.loops[{i}]") for i, loop in enumerate(loops)],
        )


@dataclass(frozen=True)
class History:
    """GET …/loops/{loop}/history: the messages in the content codec (docs/content.md);
    ``derived_prefix`` is 1 when the first message is a compaction's summary."""

    loop_id: str
    derived_prefix: int
    messages: List[Dict[str, Any]]
    # The messages' ids (parallel to ``messages``), the pinned ones, how many compactions and
    # maskings an undo can still revert, the CompactionProposed event waiting for a decision (or
    # None), and the masked tool outputs' ids: docs/pins.md, docs/undo.md, docs/preview.md,
    # docs/masking.md.
    message_ids: List[str] = field(default_factory=list)
    pinned: List[str] = field(default_factory=list)
    undoable: int = 0
    proposal: Optional[Dict[str, Any]] = None
    masked: List[str] = field(default_factory=list)
    # Pin changes sent while a compaction ran or a proposal waited, applied when it ends
    # (docs/pins.md).
    deferred_pins: int = 0

    @classmethod
    def from_json(cls, obj: Any) -> "History":
        proposal = obj.get("proposal") if isinstance(obj, dict) else None
        if proposal is not None and not isinstance(proposal, dict):
            raise ProtocolError("protocol", 200, "$.proposal is neither an object nor null")
        return cls(
            _get(obj, "loop_id", str, "$"),
            _get(obj, "derived_prefix", int, "$"),
            _get(obj, "messages", list, "$"),
            _get(obj, "message_ids", list, "$"),
            _get(obj, "pinned", list, "$"),
            _get(obj, "undoable", int, "$"),
            proposal,
            _get(obj, "masked", list, "$"),
            _get(obj, "deferred_pins", int, "$"),
        )


@dataclass(frozen=True)
class Measurement:
    input_tokens: int
    input_limit: int


@dataclass(frozen=True)
class Category:
    messages: int
    estimated_tokens: int


@dataclass(frozen=True)
class Estimates:
    """Estimated tokens of each part of a loop's context (4 bytes a token): the system prompt,
    the tools offered, the summary, the messages a compaction would summarize and the retained
    tail it would keep."""

    system_prompt: int
    tools: int
    summary: int
    messages: int
    retained_tail: int


@dataclass(frozen=True)
class Window:
    """A loop's context window in tokens: its size, the input limit (the window less the
    reserved output and the safety margin) and what is free of it."""

    window_tokens: int
    input_limit: int
    reserved_output: int
    safety_margin: int
    free: int


@dataclass(frozen=True)
class ContextPolicy:
    """The loop's compaction policy as the context reports it."""

    automatic: bool
    keep_recent_segments: int
    keep_recent_tokens: int


def _ints(cls: Any, obj: Any, where: str) -> Any:
    """An instance of the dataclass ``cls`` from the members of ``obj`` of the same names, each
    checked to be an integer (or a boolean where the field is one)."""
    values = []
    for name, declared in cls.__dataclass_fields__.items():
        values.append(_get(obj, name, bool if declared.type == "bool" else int, where))
    return cls(*values)


@dataclass(frozen=True)
class Context:
    """GET …/loops/{loop}/context: the latest measurement (None before the first), per
    category ("summary", "user", "assistant", "tool") the messages and their estimate, the
    estimate of each part of the context, the window (None for a loop without limits), the
    compactor ("offline" or "model:NAME"; "" when the journal that restored the loop recorded
    none) and the compaction policy (None when the loop has none)."""

    loop_id: str
    derived_prefix: int
    status: str
    history_messages: int
    queued_inputs: int
    compacting: bool
    pressure: str
    measurement: Optional[Measurement]
    categories: Dict[str, Category]
    estimates: Estimates
    window: Optional[Window]
    compactor: str
    policy: Optional[ContextPolicy]

    @classmethod
    def from_json(cls, obj: Any) -> "Context":
        m = _get(obj, "measurement", dict, "$", optional=True)
        measurement = None
        if m is not None:
            measurement = Measurement(
                _get(m, "input_tokens", int, "$.measurement"),
                _get(m, "input_limit", int, "$.measurement"),
            )
        window = _get(obj, "window", dict, "$", optional=True)
        policy = _get(obj, "policy", dict, "$", optional=True)
        categories = {}
        for name, c in _get(obj, "categories", dict, "$").items():
            where = f"$.categories[{name!r}]"
            categories[name] = Category(
                _get(c, "messages", int, where), _get(c, "estimated_tokens", int, where)
            )
        return cls(
            _get(obj, "loop_id", str, "$"),
            _get(obj, "derived_prefix", int, "$"),
            _get(obj, "status", str, "$"),
            _get(obj, "history_messages", int, "$"),
            _get(obj, "queued_inputs", int, "$"),
            _get(obj, "compacting", bool, "$"),
            _get(obj, "pressure", str, "$"),
            measurement,
            categories,
            _ints(Estimates, _get(obj, "estimates", dict, "$"), "$.estimates"),
            None if window is None else _ints(Window, window, "$.window"),
            _get(obj, "compactor", str, "$"),
            None if policy is None else _ints(ContextPolicy, policy, "$.policy"),
        )


class CommandId(str):
    """A command's id, as ``submit_input`` and ``compact`` return it: a ``str`` that also
    carries ``session_id``, its session's id, so that ``wait`` and ``command`` ask the
    session's form of the lookup (GET /v1/sessions/{id}/commands/{command_id}), which the server
    answers from the session's journal when its memory does not hold the command: after a
    restart, or on another server over the same journal."""

    session_id: str

    def __new__(cls, command_id: str, session_id: str) -> "CommandId":
        made = super().__new__(cls, command_id)
        made.session_id = session_id
        return made


@dataclass(frozen=True)
class CommandStatus:
    """GET /v1/commands/{id} (or the session's form): ``status`` "answered" with ``reply``, the reply event's JSON (a
    compaction's CompactWaiterResolved or CompactWaiterRejected, an input's InputAccepted,
    InputRejected or InputCancelled), or "pending" with ``reply`` None."""

    command_id: str
    session_id: str
    status: str
    reply: Optional[Dict[str, Any]] = None

    @property
    def answered(self) -> bool:
        return self.status == "answered"

    @property
    def reply_type(self) -> Optional[str]:
        """The reply event's type, e.g. "CompactWaiterResolved"; None while pending."""
        return None if self.reply is None else self.reply.get("type")

    @classmethod
    def from_json(cls, obj: Any) -> "CommandStatus":
        status = _get(obj, "status", str, "$")
        reply = _get(obj, "reply", dict, "$", optional=status != "answered")
        return cls(_get(obj, "command_id", str, "$"), _get(obj, "session_id", str, "$"), status, reply)


@dataclass(frozen=True)
class ToolCall:
    """A call of a client tool that waits for its result (GET …/tool_calls): ``input`` is the
    model's JSON input as json.loads reads it; ``waiting`` is True for the call whose wait has
    begun (a loop runs a message's calls one at a time)."""

    tool_use_id: str
    name: str
    input: Any
    waiting: bool
    turn_id: str

    @classmethod
    def list_from_json(cls, obj: Any) -> List["ToolCall"]:
        calls = _get(obj, "calls", list, "$")
        turn = _get(obj, "turn_id", str, "$", optional=True)
        out = []
        for i, call in enumerate(calls):
            where = f"$.calls[{i}]"
            if not isinstance(call, dict) or "input" not in call or turn is None:
                raise ProtocolError("protocol", None, f"{where} is not a tool call")
            out.append(
                cls(
                    _get(call, "tool_use_id", str, where),
                    _get(call, "name", str, where),
                    call["input"],
                    _get(call, "waiting", bool, where),
                    turn,
                )
            )
        return out


@dataclass(frozen=True)
class Event:
    """One event of a stream: ``seq`` is its journal sequence (0 for an ephemeral event, which
    only live streams carry), ``type`` its type name, ``data`` the event's JSON
    (include/harness/event/json.h: an enduring event's durable encoding)."""

    seq: int
    type: str
    data: Dict[str, Any] = field(repr=False)

    @property
    def enduring(self) -> bool:
        return self.seq != 0

    @classmethod
    def from_frame(cls, name: str, frame_id: Optional[str], payload: Any) -> "Event":
        seq = _get(payload, "seq", int, "data")
        event = _get(payload, "event", dict, "data")
        if _get(event, "type", str, "data.event") != name:
            raise ProtocolError("protocol", None, "an event frame's name is not its event's type")
        if seq < 0 or (frame_id is None) != (seq == 0) or (frame_id is not None and frame_id != str(seq)):
            raise ProtocolError("protocol", None, "an event frame's id is not its sequence")
        return cls(seq, name, event)


@dataclass(frozen=True)
class Lagged:
    """The server ended the stream because the client fell behind (docs/serve.md "Events"):
    ``last_seq`` is the last event it delivered. The iterator yields this and then reconnects
    from the last event it yielded, so nothing is missed; a caller that cannot keep up may stop
    there instead."""

    last_seq: int


@dataclass(frozen=True)
class StreamEnd:
    """The server ended the stream because the session left its memory: ``reason``
    "hub_closed" when the session was deleted or the server is stopping. The iterator stops."""

    reason: str
    last_seq: int


@dataclass(frozen=True)
class TextDelta:
    """A piece of a loop's answer as the model streams it (a ``text_delta`` frame of a stream
    opened with ``text_deltas=True``, docs/serve.md "Text deltas"): never journaled, never
    replayed; the assistant's MessageCommitted holds the whole text. ``turn_id`` is None when
    the server did not see the turn start (one a restore resumed)."""

    loop_id: str
    turn_id: Optional[str]
    text: str

    @classmethod
    def from_frame(cls, payload: Any) -> "TextDelta":
        return cls(
            _get(payload, "loop_id", str, "data"),
            _get(payload, "turn_id", str, "data", optional=True),
            _get(payload, "text", str, "data"),
        )


@dataclass(frozen=True)
class ConversationReport:
    """What POST /v1/compact changed (docs/serve.md "Compacting a conversation the client
    holds"): the messages before, the tokens before (None when not measured) and after, the
    input limit, the retained tail's messages and the elements written after the summary
    (``retained_verbatim`` False when the tail was shortened and written fresh), the pinned,
    shortened and repaired counts, and coverage ({"found","total","missing"}) when it is on."""

    messages_before: int
    tokens_before: Optional[int]
    tokens_after: int
    input_limit: int
    retained: int
    retained_elements: int
    retained_verbatim: bool
    pinned: int
    shortened: int
    repaired: int
    coverage: Optional[Dict[str, int]] = None

    @classmethod
    def from_json(cls, obj: Any, where: str = "$.report") -> "ConversationReport":
        coverage = _get(obj, "coverage", dict, where, optional=True)
        if coverage is not None:
            coverage = {name: _get(coverage, name, int, where + ".coverage")
                        for name in ("found", "total", "missing")}
        return cls(
            _get(obj, "messages_before", int, where),
            _get(obj, "tokens_before", int, where, optional=True),
            _get(obj, "tokens_after", int, where),
            _get(obj, "input_limit", int, where),
            _get(obj, "retained", int, where),
            _get(obj, "retained_elements", int, where),
            _get(obj, "retained_verbatim", bool, where),
            _get(obj, "pinned", int, where),
            _get(obj, "shortened", int, where),
            _get(obj, "repaired", int, where),
            coverage,
        )


@dataclass(frozen=True)
class Answer:
    """What Client.ask returns once the turn its input started (or joined) completed: ``text``,
    the text of the turn's last assistant message (its text blocks, joined); ``message`` that
    message in the content codec (docs/content.md), None when the turn committed none;
    ``turn_id``, ``command_id`` (the input's) and ``deltas``, how many text deltas arrived."""

    text: str
    message: Optional[Dict[str, Any]]
    turn_id: str
    command_id: str
    deltas: int = 0


@dataclass(frozen=True)
class CompactedConversation:
    """The answer of POST /v1/compact: the replacement conversation in the request's
    ``format`` (its ``messages``, or its ``input`` items for ``openai-responses``; the retained
    elements are the ones sent, the summary written fresh), Anthropic's ``system`` as sent
    (None otherwise), the summary's text, the report, and with ``store`` the session and loop
    in the server's journal."""

    format: str
    messages: List[Any]
    summary: str
    report: ConversationReport
    system: Any = None
    session_id: Optional[str] = None
    loop_id: Optional[str] = None

    @classmethod
    def from_json(cls, obj: Any) -> "CompactedConversation":
        form = _get(obj, "format", str, "$")
        member = "input" if form == "openai-responses" else "messages"
        return cls(
            form,
            _get(obj, member, list, "$"),
            _get(obj, "summary", str, "$"),
            ConversationReport.from_json(_get(obj, "report", dict, "$")),
            obj.get("system"),
            _get(obj, "session_id", str, "$", optional=True),
            _get(obj, "loop_id", str, "$", optional=True),
        )
