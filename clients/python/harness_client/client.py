"""The client of `harness serve` (docs/serve.md): one ``Client`` per server, one HTTP
connection per request (so a Client may be shared between threads), and ``EventStream``, the
resuming iterator over a session's Server-Sent Events."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from .errors import (
    CommandTimeout,
    ConnectionFailed,
    HarnessError,
    ProtocolError,
    ResponseTooLarge,
    StreamTimeout,
    error_from_response,
)
from .models import (
    Answer,
    CommandId,
    CommandStatus,
    CompactedConversation,
    Context,
    CreatedSession,
    Event,
    History,
    Lagged,
    LoopSpec,
    Session,
    SessionSummary,
    StreamEnd,
    TextDelta,
    ToolCall,
)

if TYPE_CHECKING:
    from .conversation import AnswerStream

# The server's longest command wait (GET /v1/commands/{id}?wait_ms=N, N at most 30000).
MAX_WAIT_MS = 30_000
# How long wait() pauses before asking again when the server answered "pending" well before the
# wait it was asked for: it does so when another server holds the session, and then only that
# server's journal writes change the answer.
PENDING_PAUSE = 0.5

# What the client reads of an answer at most (each a Client argument, to raise or lower it); one
# more byte is ResponseTooLarge and the connection is closed, so a hostile or broken server
# cannot make the client's memory grow without bound.
#
# An event of the event stream: the server's largest is 16 MiB (a journal record's limit); its
# frame adds an id, a name and {"seq":N,"event":…} around it, which 4 KiB holds with room. One
# line holds at most as much (a data line may be the whole event).
MAX_EVENT_BYTES = 16 * 1024 * 1024 + 4 * 1024
# An error body: the server's is {"error":{"kind","detail"[,"holder"]}} with a detail of at most
# a few KiB; 64 KiB is what the project's own HTTP client keeps of one too.
MAX_ERROR_BYTES = 64 * 1024
# Any other answer, read whole before it is parsed: the largest the server legitimately sends
# are a loop's history (its messages, which a transcript of up to 64 MiB may have started,
# JSON-escaped) and a session's export (every record of its journal). 256 MiB holds either for
# any session short of an extreme one; a client that has one raises it.
MAX_BODY_BYTES = 256 * 1024 * 1024
# How much of an answer is read at once: a small allocation per step whatever the cap.
_READ_STEP = 64 * 1024


def _read_capped(response: http.client.HTTPResponse, limit: int, setting: str, what: str) -> bytes:
    """The whole body of ``response``, or ResponseTooLarge (naming ``what`` and the Client
    ``setting`` that raises ``limit``) once it is over ``limit`` bytes: at once when its
    Content-Length says so, else as soon as one byte more came. Read a step at a time, so that
    nothing is allocated for bytes that never come."""
    if response.length is not None and response.length > limit:
        raise ResponseTooLarge(what, limit, setting, response.status)
    body = bytearray()
    while True:
        step = response.read(min(_READ_STEP, limit + 1 - len(body)))
        if not step:
            return bytes(body)
        body += step
        if len(body) > limit:
            raise ResponseTooLarge(what, limit, setting, response.status)


def _parse_json(text: Union[bytes, str], status: Optional[int], what: str) -> Any:
    """The JSON value of an answer, or ProtocolError: not JSON, not UTF-8, or nested deeper
    than Python's parser recurses (RecursionError, which is no ValueError)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ProtocolError("protocol", status, f"{what} is not JSON") from e


def _close(conn: http.client.HTTPConnection, response: Optional[http.client.HTTPResponse]) -> None:
    """Closes the connection. The response holds the socket as well (http.client hands it over
    when the answer ends with the connection), so it is closed too: the server sees the close
    now, not whenever the response is collected."""
    conn.close()
    if response is not None:
        response.close()


def _segment(value: str) -> str:
    """A path segment: every byte that could end it or start another is escaped, so an id from
    anywhere (a transcript, an event) can only ever name one segment."""
    return urllib.parse.quote(str(value), safe="")


class Client:
    """A client of one `harness serve`.

    ``base_url`` is ``http://HOST:PORT`` (or https, optionally with a path prefix); ``token``
    is sent as ``Authorization: Bearer`` on every request; ``timeout`` (seconds) bounds
    connecting and each read of an ordinary request (a command wait adds its own wait to it).
    ``max_body_bytes``, ``max_error_bytes`` and ``max_event_bytes`` cap what is read of an
    answer, an error body, and a line or an event of an event stream (MAX_BODY_BYTES and the
    others above say why they are what they are); over one is ResponseTooLarge.
    Every failure is a ``HarnessError`` (errors.py)."""

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        timeout: float = 30.0,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_error_bytes: int = MAX_ERROR_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("base_url must be http://HOST:PORT or https://HOST:PORT")
        if parts.query or parts.fragment:
            raise ValueError("base_url has no query or fragment")
        if token is not None and any(c in token for c in "\r\n"):
            raise ValueError("a token is one line")
        for name, cap in (
            ("max_body_bytes", max_body_bytes),
            ("max_error_bytes", max_error_bytes),
            ("max_event_bytes", max_event_bytes),
        ):
            if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
                raise ValueError(f"{name} is a number of bytes, at least 1")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.max_body_bytes = max_body_bytes
        self.max_error_bytes = max_error_bytes
        self.max_event_bytes = max_event_bytes

    # ---- transport ----

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _target(self, path: str, query: Optional[Sequence[Tuple[str, str]]] = None) -> str:
        target = self._prefix + path
        if query:
            target += "?" + urllib.parse.urlencode(list(query))
        return target

    def _headers(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """Every request says what it accepts (JSON, unless ``extra`` says otherwise)."""
        headers = {"Accept": "application/json"}
        if self._token is not None:
            headers["Authorization"] = "Bearer " + self._token
        if extra:
            headers.update(extra)
        return headers

    def _open(
        self,
        method: str,
        target: str,
        body: Optional[bytes],
        headers: Dict[str, str],
        timeout: Optional[float],
    ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Sends a request and returns its connection and response (status below 400), or
        raises the typed error of the response or of the transport."""
        conn = self._connection(timeout)
        response: Optional[http.client.HTTPResponse] = None
        try:
            try:
                conn.request(method, target, body=body, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                # The server may answer before it reads a body it refuses (413 on the declared
                # Content-Length) and close: its answer is still there to read.
                pass
            response = conn.getresponse()
            if response.status >= 400:
                body = _read_capped(
                    response,
                    self.max_error_bytes,
                    "max_error_bytes",
                    f"the body of a {response.status} answer",
                )
                raise error_from_response(response.status, body)
            return conn, response
        except HarnessError:
            _close(conn, response)
            raise
        except (OSError, http.client.HTTPException) as e:
            _close(conn, response)
            raise ConnectionFailed("connection", None, f"{method} {target}: {e}") from e

    def _call(
        self,
        method: str,
        path: str,
        payload: Any = None,
        query: Optional[Sequence[Tuple[str, str]]] = None,
        timeout: Optional[float] = None,
        accept: str = "application/json",
    ) -> Tuple[int, bytes]:
        body = None
        headers = self._headers({"Accept": accept})
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
        elif method in ("POST", "PUT", "PATCH"):
            body = b""  # these always send a body, if an empty one: say what it is too
        if body is not None:
            headers["Content-Type"] = "application/json"
        target = self._target(path, query)
        conn, response = self._open(method, target, body, headers, timeout or self.timeout)
        try:
            what = f"the body of the answer to {method} {self._prefix + path}"
            body = _read_capped(response, self.max_body_bytes, "max_body_bytes", what)
            return response.status, body
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionFailed("connection", None, f"{method} {target}: {e}") from e
        finally:
            _close(conn, response)

    def _json(self, method: str, path: str, payload: Any = None, **kwargs: Any) -> Tuple[int, Any]:
        status, body = self._call(method, path, payload, **kwargs)
        return status, _parse_json(body, status, f"{method} {path}: the body")

    # ---- sessions ----

    def create_session(
        self, loops: Union[str, LoopSpec, Iterable[Union[str, LoopSpec]]]
    ) -> CreatedSession:
        """POST /v1/sessions: one loop per model name or LoopSpec (1 to 16), the first active."""
        if isinstance(loops, (str, LoopSpec)):
            loops = [loops]
        specs = [LoopSpec(loop) if isinstance(loop, str) else loop for loop in loops]
        _, obj = self._json("POST", "/v1/sessions", {"loops": [s.to_json() for s in specs]})
        return CreatedSession.from_json(obj)

    def list_sessions(self) -> List[SessionSummary]:
        """GET /v1/sessions: every session of the journal."""
        _, obj = self._json("GET", "/v1/sessions")
        sessions = obj.get("sessions") if isinstance(obj, dict) else None
        if not isinstance(sessions, list):
            raise ProtocolError("protocol", 200, "$.sessions is not a list")
        return [SessionSummary.from_json(s) for s in sessions]

    def get_session(self, session_id: str) -> Session:
        """GET /v1/sessions/{id} (restoring the session from the journal when needed)."""
        _, obj = self._json("GET", f"/v1/sessions/{_segment(session_id)}")
        return Session.from_json(obj)

    def delete_session(self, session_id: str) -> None:
        """DELETE /v1/sessions/{id}: ends every loop; the journal keeps the session."""
        self._call("DELETE", f"/v1/sessions/{_segment(session_id)}")

    def export(self, session_id: str) -> List[Dict[str, Any]]:
        """GET /v1/sessions/{id}/export: the journal's records of the session, in order, each
        as `harness journal show --json` writes it."""
        path = f"/v1/sessions/{_segment(session_id)}/export"
        _, body = self._call("GET", path, accept="application/x-ndjson")
        return [
            _parse_json(line, 200, f"export line {number}")
            for number, line in enumerate(body.split(b"\n"), 1)
            if line
        ]

    # ---- conversations the client holds ----

    def compact_conversation(
        self,
        format: str,
        conversation: Sequence[Any],
        *,
        system: Any = None,
        model: Optional[str] = None,
        compactor: Optional[str] = None,
        context_window: Optional[int] = None,
        max_output_tokens: Optional[int] = None,
        keep_recent_segments: Optional[int] = None,
        keep_recent_tokens: Optional[int] = None,
        max_summary_tokens: Optional[int] = None,
        instructions: Optional[str] = None,
        coverage: Optional[str] = None,
        pins: Optional[Sequence[int]] = None,
        store: bool = False,
        timeout: Optional[float] = None,
    ) -> CompactedConversation:
        """POST /v1/compact: one compaction of ``conversation``, which the caller holds, in
        ``format`` ("harness", "openai", "openai-responses" or "anthropic"; ``system`` is
        Anthropic's system prompt). The answer is the replacement in the same format. The
        options left None take the server's defaults (docs/serve.md "Compacting a conversation
        the client holds"); ``store`` keeps the compaction as a session of the server's
        journal. A rejected compaction is CompactionRejected (its ``reason``); a conversation
        the server cannot read is BadRequest naming the element and the rule. ``timeout``
        bounds the wait for the answer (default: the client's), a model compactor's call
        included."""
        payload: Dict[str, Any] = {
            "format": format,
            "input" if format == "openai-responses" else "messages": list(conversation),
        }
        if system is not None:
            payload["system"] = system
        options = {
            name: value
            for name, value in (
                ("model", model),
                ("compactor", compactor),
                ("context_window", context_window),
                ("max_output_tokens", max_output_tokens),
                ("keep_recent_segments", keep_recent_segments),
                ("keep_recent_tokens", keep_recent_tokens),
                ("max_summary_tokens", max_summary_tokens),
                ("instructions", instructions),
                ("coverage", coverage),
                ("pins", list(pins) if pins is not None else None),
            )
            if value is not None
        }
        if options:
            payload["options"] = options
        if store:
            payload["store"] = True
        _, obj = self._json("POST", "/v1/compact", payload, timeout=timeout)
        return CompactedConversation.from_json(obj)

    # ---- loops ----

    def _loop(self, session_id: str, loop_id: str) -> str:
        return f"/v1/sessions/{_segment(session_id)}/loops/{_segment(loop_id)}"

    def _command_id(self, obj: Any) -> str:
        command = obj.get("command_id") if isinstance(obj, dict) else None
        if not isinstance(command, str):
            raise ProtocolError("protocol", None, "the answer has no command_id")
        return command

    def submit_input(
        self, session_id: str, loop_id: str, text: str, origin: Optional[str] = None
    ) -> CommandId:
        """POST …/input: the user's text to a loop. Returns the command id (a CommandId, which
        knows its session) once its intent is durable; wait() gets its reply. ``origin``:
        ``"delegate_request"`` (a request another agent delegates: a turn of its own) or
        ``"subagent_result"``; None is a direct input (docs/runtime.md §4)."""
        body: Dict[str, Any] = {"text": text}
        if origin is not None:
            body["origin"] = origin
        _, obj = self._json("POST", self._loop(session_id, loop_id) + "/input", body)
        return CommandId(self._command_id(obj), session_id)

    def cancel_queued_input(self, session_id: str, loop_id: str, input_id: str) -> str:
        """DELETE …/inputs/{input}: withdraws a queued input before its turn takes it. Returns
        the InputCancelled event's id; InputNotQueued once it has started (or is unknown)."""
        path = self._loop(session_id, loop_id) + "/inputs/" + _segment(input_id)
        _, obj = self._json("DELETE", path)
        return self._member_id(obj, "event_id")

    def cancel_delegate_request(self, session_id: str, loop_id: str, request_id: str) -> str:
        """DELETE …/delegate_requests/{request}: withdraws a queued delegate request, or
        cancels its running turn. Returns ``"queued"`` or ``"active"``; InputNotQueued, or
        BadRequest for an input that is not a delegate request."""
        path = self._loop(session_id, loop_id) + "/delegate_requests/" + _segment(request_id)
        _, obj = self._json("DELETE", path)
        cancelled = obj.get("cancelled") if isinstance(obj, dict) else None
        if cancelled not in ("queued", "active"):
            raise ProtocolError("protocol", 200, "$.cancelled is not queued or active")
        return cancelled

    def compact(
        self,
        session_id: str,
        loop_id: str,
        instructions: Optional[str] = None,
        preview: bool = False,
    ) -> CommandId:
        """POST …/compact: asks the loop for a compaction, with ``instructions`` for the
        summarizer (docs/compact-focus.md) and, with ``preview``, a proposal that waits for
        approve() or discard() instead of a commit (docs/preview.md; the proposal shows in
        history().proposal). Returns the command id (a CommandId)."""
        body: Dict[str, Any] = {}
        if instructions is not None:
            body["instructions"] = instructions
        if preview:
            body["preview"] = True
        _, obj = self._json("POST", self._loop(session_id, loop_id) + "/compact", body or None)
        return CommandId(self._command_id(obj), session_id)

    def pin(self, session_id: str, loop_id: str, message_id: str) -> bool:
        """PUT …/pins/{message}: no compaction summarizes the message (docs/pins.md). Returns
        whether anything changed (False: it was pinned already)."""
        _, obj = self._json("PUT", self._loop(session_id, loop_id) + "/pins/" + message_id)
        return self._changed(obj)

    def unpin(self, session_id: str, loop_id: str, message_id: str) -> bool:
        """DELETE …/pins/{message}. Returns whether anything changed."""
        _, obj = self._json("DELETE", self._loop(session_id, loop_id) + "/pins/" + message_id)
        return self._changed(obj)

    def undo(self, session_id: str, loop_id: str) -> str:
        """POST …/undo: reverts the latest compaction (docs/undo.md). Returns the
        HistoryReverted event's id; NothingToUndo, LoopBusy or UndoRefused otherwise."""
        _, obj = self._json("POST", self._loop(session_id, loop_id) + "/undo")
        return self._member_id(obj, "event_id")

    def mask(self, session_id: str, loop_id: str) -> str:
        """POST …/mask: old tool output becomes stubs (docs/masking.md). Returns the
        ToolOutputsMasked event's id; NothingToMask or LoopBusy otherwise."""
        _, obj = self._json("POST", self._loop(session_id, loop_id) + "/mask")
        return self._member_id(obj, "event_id")

    def unmask(self, session_id: str, loop_id: str, message_id: Optional[str] = None) -> str:
        """Puts back the original of masked tool output ``message_id`` (DELETE
        …/masked/{message}), or of every one (POST …/unmask). Returns the ToolOutputsUnmasked
        event's id; NotMasked or MaskRefused otherwise."""
        if message_id is None:
            _, obj = self._json("POST", self._loop(session_id, loop_id) + "/unmask")
        else:
            path = self._loop(session_id, loop_id) + "/masked/" + _segment(message_id)
            _, obj = self._json("DELETE", path)
        return self._member_id(obj, "event_id")

    def masked_original(self, session_id: str, loop_id: str, message_id: str) -> Dict[str, Any]:
        """GET …/masked/{message}: the original tool result a stub replaced, in the content
        codec (docs/content.md); NotMasked otherwise."""
        path = self._loop(session_id, loop_id) + "/masked/" + _segment(message_id)
        _, obj = self._json("GET", path)
        message = obj.get("message") if isinstance(obj, dict) else None
        if not isinstance(message, dict):
            raise ProtocolError("protocol", 200, "$.message is not an object")
        return message

    def approve(self, session_id: str, loop_id: str, attempt_id: str) -> str:
        """POST …/proposals/{attempt}/approve: commits the proposal. Returns its terminal
        event's id; NoProposal when none of that attempt waits."""
        path = self._loop(session_id, loop_id) + "/proposals/" + attempt_id + "/approve"
        _, obj = self._json("POST", path)
        return self._member_id(obj, "terminal_event_id")

    def discard(self, session_id: str, loop_id: str, attempt_id: str) -> str:
        """POST …/proposals/{attempt}/discard: rejects the proposal; the history stays."""
        path = self._loop(session_id, loop_id) + "/proposals/" + attempt_id + "/discard"
        _, obj = self._json("POST", path)
        return self._member_id(obj, "terminal_event_id")

    @staticmethod
    def _changed(obj: Any) -> bool:
        changed = obj.get("changed") if isinstance(obj, dict) else None
        if not isinstance(changed, bool):
            raise ProtocolError("protocol", 200, "$.changed is not a boolean")
        return changed

    @staticmethod
    def _member_id(obj: Any, name: str) -> str:
        value = obj.get(name) if isinstance(obj, dict) else None
        if not isinstance(value, str):
            raise ProtocolError("protocol", 200, f"$.{name} is not a string")
        return value

    def interrupt(self, session_id: str, loop_id: str) -> str:
        """POST …/interrupt: done when accepted (what it ended shows in the events); the
        server does not keep its id for wait()."""
        _, obj = self._json("POST", self._loop(session_id, loop_id) + "/interrupt")
        return self._command_id(obj)

    def history(self, session_id: str, loop_id: str) -> History:
        _, obj = self._json("GET", self._loop(session_id, loop_id) + "/history")
        return History.from_json(obj)

    def context(self, session_id: str, loop_id: str) -> Context:
        _, obj = self._json("GET", self._loop(session_id, loop_id) + "/context")
        return Context.from_json(obj)

    # ---- client tools ----

    def tool_calls(self, session_id: str, loop_id: str) -> List[ToolCall]:
        """GET …/tool_calls: the calls of the loop's client tools that wait for a result, in
        call order (what a client that connects late or reconnects answers)."""
        _, obj = self._json("GET", self._loop(session_id, loop_id) + "/tool_calls")
        return ToolCall.list_from_json(obj)

    def tool_results(
        self, session_id: str, loop_id: str, results: Iterable[Tuple[str, str, bool]]
    ) -> List[str]:
        """POST …/tool_results: answers calls with (tool_use_id, content, is_error) tuples, all
        or none. Returns the ids answered. An id with no waiting call raises ToolCallNotFound,
        one already answered (or timed out) ToolCallAnswered."""
        payload = {
            "results": [
                {"tool_use_id": tool_use_id, "content": content, "is_error": is_error}
                for tool_use_id, content, is_error in results
            ]
        }
        _, obj = self._json("POST", self._loop(session_id, loop_id) + "/tool_results", payload)
        answered = obj.get("answered") if isinstance(obj, dict) else None
        if not isinstance(answered, list) or not all(isinstance(a, str) for a in answered):
            raise ProtocolError("protocol", 200, "$.answered is not a list of ids")
        return answered

    def answer_tool(
        self, session_id: str, loop_id: str, tool_use_id: str, content: str, is_error: bool = False
    ) -> None:
        """Answers one call of a client tool (tool_results with one result)."""
        self.tool_results(session_id, loop_id, [(tool_use_id, content, is_error)])

    # ---- commands ----

    def command(
        self, command_id: str, wait_ms: int = 0, session_id: Optional[str] = None
    ) -> CommandStatus:
        """The command's state, waiting up to ``wait_ms`` for its reply: answered, or pending.
        With a session id (``session_id``, else the one a CommandId carries) it asks
        GET /v1/sessions/{session_id}/commands/{id}, which the server answers from the
        session's journal too (after a restart, or on another server); without one,
        GET /v1/commands/{id}, which knows only the commands this server accepted."""
        if not 0 <= wait_ms <= MAX_WAIT_MS:
            raise ValueError(f"wait_ms is from 0 to {MAX_WAIT_MS}")
        if session_id is None:
            session_id = getattr(command_id, "session_id", None)
        path = f"/v1/commands/{_segment(command_id)}"
        if session_id is not None:
            path = f"/v1/sessions/{_segment(session_id)}/commands/{_segment(command_id)}"
        _, obj = self._json(
            "GET", path, query=[("wait_ms", str(wait_ms))], timeout=self.timeout + wait_ms / 1000.0
        )
        return CommandStatus.from_json(obj)

    def wait(
        self, command_id: str, timeout: float = 60.0, session_id: Optional[str] = None
    ) -> CommandStatus:
        """The command's reply: the server's bounded wait (at most 30 s a request), asked
        again until it answers or ``timeout`` seconds passed (CommandTimeout). A CommandId (or
        ``session_id``) makes it the session's lookup, so the reply is found after a server
        restart too. When the server answers pending well before the wait it was asked for
        (another server holds the session), it pauses PENDING_PAUSE seconds before asking
        again."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            wait_ms = max(0, min(MAX_WAIT_MS, int(remaining * 1000)))
            asked = time.monotonic()
            status = self.command(command_id, wait_ms=wait_ms, session_id=session_id)
            if status.answered:
                return status
            now = time.monotonic()
            if now >= deadline:
                raise CommandTimeout(command_id, timeout)
            if now - asked < wait_ms / 2000.0:
                time.sleep(min(PENDING_PAUSE, deadline - now))

    # ---- events ----

    def events(
        self,
        session_id: str,
        loop: Optional[str] = None,
        kinds: Optional[Iterable[str]] = None,
        last_event_id: Optional[int] = None,
        from_seq: Optional[int] = None,
        max_reconnects: int = 5,
        read_timeout: Optional[float] = None,
        text_deltas: bool = False,
    ) -> "EventStream":
        """GET /v1/sessions/{id}/events as an iterator of Event (and Lagged): see EventStream.
        ``loop`` keeps that loop's events and the session's own, ``kinds`` those event types;
        ``last_event_id`` resumes after that sequence, ``from_seq`` replays from it; neither:
        the live stream only. ``text_deltas``: the stream also yields TextDelta, the loops'
        answers as the model streams them (whatever ``kinds`` keeps)."""
        return EventStream(
            self,
            session_id,
            loop,
            kinds,
            last_event_id,
            from_seq,
            max_reconnects,
            read_timeout,
            text_deltas,
        )

    # ---- send and wait (conversation.py) ----

    def ask(
        self, session_id: str, loop_id: str, text: str, timeout: float = 120.0
    ) -> "Answer":
        """Sends ``text`` to the loop and returns the Answer of the turn it starts (or joins)
        once that turn completed; see conversation.ask."""
        from .conversation import ask

        return ask(self, session_id, loop_id, text, timeout)

    def ask_stream(
        self, session_id: str, loop_id: str, text: str, timeout: float = 120.0
    ) -> "AnswerStream":
        """Sends ``text`` and returns an iterator over the answer's text as the model streams
        it; its ``answer`` is the Answer once the iteration ended. See conversation.AnswerStream."""
        from .conversation import AnswerStream

        return AnswerStream(self, session_id, loop_id, text, timeout)


class EventStream:
    """An iterator over a session's events that resumes across dropped connections.

    - Yields ``Event`` in the server's order. ``last_event_id`` is the sequence of the last
      enduring event yielded (or the one the stream was started after).
    - When the connection drops (an error, or the body ends without an ``end`` frame), the next
      ``next()`` reconnects with ``Last-Event-ID: last_event_id``: the server replays from the
      next sequence, so no enduring event is missed or yielded twice. Ephemeral events
      (``seq`` 0: CompactionStarted, ContextPressure, InputQueued) live only on live streams;
      those published while disconnected are not replayed. A live-only stream (neither
      ``last_event_id`` nor ``from_seq``) that drops before its first enduring event resumes
      live, and may miss what was published meanwhile: start with ``from_seq`` to rule that out.
    - A ``lagged`` frame (the server ended the stream because this client fell behind) is
      yielded as a ``Lagged`` object, then the stream resumes as after a drop: nothing is lost.
    - An ``end`` frame (the session left the server's memory: deleted, or the server stopping)
      ends the iteration; ``end`` holds it. To follow a restarted server, open a new stream with
      ``last_event_id=stream.last_event_id``.
    - An HTTP refusal (unknown session, bad token…) raises its HarnessError at once. Failing to
      reconnect ``max_reconnects`` times in a row (with a growing pause between attempts,
      the first retry immediate) raises ConnectionFailed.
    """

    def __init__(
        self,
        client: Client,
        session_id: str,
        loop: Optional[str],
        kinds: Optional[Iterable[str]],
        last_event_id: Optional[int],
        from_seq: Optional[int],
        max_reconnects: int,
        read_timeout: Optional[float],
        text_deltas: bool = False,
    ) -> None:
        self._client = client
        self._text_deltas = text_deltas
        # Monotonic time after which next() raises StreamTimeout instead of waiting on; None:
        # no deadline (each read still bounded by read_timeout).
        self.deadline: Optional[float] = None
        self._path = f"/v1/sessions/{_segment(session_id)}/events"
        self._loop = loop
        self._kinds = list(kinds) if kinds is not None else None
        self._from = from_seq
        self.last_event_id = last_event_id
        self.end: Optional[StreamEnd] = None
        self.reconnects = 0  # connections opened after the first
        self._max_reconnects = max_reconnects
        self._read_timeout = read_timeout
        self._conn: Optional[http.client.HTTPConnection] = None
        self._response: Optional[http.client.HTTPResponse] = None
        self._connected_once = False
        self._failures = 0  # connection attempts in a row that brought no frame
        self._closed = False

    def __iter__(self) -> Iterator[Union[Event, Lagged, TextDelta]]:
        return self

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self._disconnect()

    def _disconnect(self) -> None:
        if self._conn is not None:
            _close(self._conn, self._response)
        self._conn = None
        self._response = None

    def _connect(self) -> None:
        query: List[Tuple[str, str]] = []
        if self._from is not None:
            query.append(("from", str(self._from)))
        if self._loop is not None:
            query.append(("loop", self._loop))
        if self._kinds is not None:
            query.append(("kind", ",".join(self._kinds)))
        if self._text_deltas:
            query.append(("text_deltas", "true"))
        extra = {"Accept": "text/event-stream"}
        if self.last_event_id:
            extra["Last-Event-ID"] = str(self.last_event_id)
        elif self.last_event_id == 0:
            # After nothing (a Lagged before any enduring event): the journal from its start.
            query = [("from", "1")] + [q for q in query if q[0] != "from"]
        while True:
            try:
                self._conn, self._response = self._client._open(
                    "GET",
                    self._client._target(self._path, query),
                    None,
                    self._client._headers(extra),
                    self._client.timeout,
                )
                break
            except ConnectionFailed:
                self._failures += 1
                if not self._connected_once or self._failures > self._max_reconnects:
                    raise
                # The first retry is immediate; the server may be restarting after that.
                time.sleep(min(2.0, 0.05 * 2 ** (self._failures - 1)))
        content_type = self._response.getheader("Content-Type", "")
        if not content_type.startswith("text/event-stream"):
            self._disconnect()
            raise ProtocolError("protocol", 200, "the events answer is not text/event-stream")
        # Connected: an idle stream may wait for events as long as it likes.
        self._set_socket_timeout()
        if self._connected_once:
            self.reconnects += 1
        self._connected_once = True

    def connect(self) -> None:
        """Opens the connection now rather than at the first next(): once this returns, the
        server has subscribed, so a live stream misses nothing published from then on."""
        if self._response is None and not self._closed:
            self._connect()

    def _remaining(self) -> Optional[float]:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def _set_socket_timeout(self) -> None:
        """Each read waits at most read_timeout, and never past the deadline."""
        timeout = self._read_timeout
        remaining = self._remaining()
        if remaining is not None:
            timeout = max(0.001, remaining if timeout is None else min(timeout, remaining))
        if self._conn is not None and self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)

    def _read_frame(self) -> Optional[Tuple[str, Optional[str], str]]:
        """The next frame (event name, id, data), or None when the connection ended. A line
        (its end included), or the lines of one frame together (comments and the blank line
        that ends it not counted), over the client's max_event_bytes are ResponseTooLarge:
        each line is read with that limit, and the frame is kept as bytes, so that what it
        holds is what it counts."""
        limit = self._client.max_event_bytes
        name, frame_id, data = b"message", None, bytearray()
        seen = has_data = False
        size = 0
        assert self._response is not None
        while True:
            line = self._response.readline(limit)
            if not line.endswith(b"\n"):
                if len(line) == limit:
                    raise self._too_large("a line of the event stream")
                return None  # the end, or cut off mid-line: a drop
            text = line.rstrip(b"\r\n")
            if not text:
                if seen:
                    return name.decode("utf-8"), frame_id, data.decode("utf-8")
                continue
            if text.startswith(b":"):
                continue  # a comment
            size += len(line)
            if size > limit:
                raise self._too_large("an event of the event stream")
            field, _, value = text.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            seen = True
            if field == b"event":
                name = value
            elif field == b"data":
                if has_data:
                    data += b"\n"
                data += value
                has_data = True
            elif field == b"id":
                frame_id = value.decode("utf-8")

    def _too_large(self, what: str) -> ResponseTooLarge:
        return ResponseTooLarge(what, self._client.max_event_bytes, "max_event_bytes", 200)

    def __next__(self) -> Union[Event, Lagged, TextDelta]:
        while True:
            if self._closed or self.end is not None:
                raise StopIteration
            remaining = self._remaining()
            if remaining is not None and remaining <= 0:
                raise StreamTimeout("the event stream's deadline passed")
            if self._response is None:
                if self._connected_once and self._failures > self._max_reconnects:
                    raise ConnectionFailed("connection", None, "the event stream keeps dropping")
                self._connect()
            elif self.deadline is not None:
                self._set_socket_timeout()
            try:
                frame = self._read_frame()
            except ResponseTooLarge:
                self.close()  # reading on (or again, after a reconnect) would meet it again
                raise
            except (OSError, http.client.HTTPException, ValueError):
                remaining = self._remaining()
                if remaining is not None and remaining <= 0:
                    # The read waited out the deadline: the stream is not at fault.
                    self._disconnect()
                    raise StreamTimeout("the event stream's deadline passed") from None
                frame = None  # a drop; UnicodeDecodeError is a ValueError of a cut frame
            if frame is None:
                self._disconnect()
                self._failures += 1
                continue
            self._failures = 0
            name, frame_id, data = frame
            payload = _parse_json(data, 200, f"an {name!r} frame's data")
            if name == "lagged":
                self._disconnect()
                return Lagged(_seq(payload, "last_seq"))
            if name == "text_delta":
                return TextDelta.from_frame(payload)
            if name == "end":
                self._disconnect()
                reason = payload.get("reason") if isinstance(payload, dict) else None
                if not isinstance(reason, str):
                    raise ProtocolError("protocol", 200, "an end frame has no reason")
                self.end = StreamEnd(reason, _seq(payload, "last_seq"))
                raise StopIteration
            event = Event.from_frame(name, frame_id, payload)
            if event.enduring:
                self.last_event_id = event.seq
            return event


def _seq(payload: Any, name: str) -> int:
    value = payload.get(name) if isinstance(payload, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProtocolError("protocol", 200, f"a frame's {name} is not a sequence")
    return value
