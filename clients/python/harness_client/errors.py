"""Typed errors of the `harness serve` client.

Every refusal of the server is ``{"error":{"kind":"…","detail":"…"}}`` with the HTTP status of
its kind (docs/serve.md "Errors"); a lease_held one may also name the ``holder``. ``error_from_response`` turns one into the most specific class
below: first by kind, then by status, else ``HarnessError`` itself. The detail is the server's
text for a person: it is kept as data, never parsed or formatted into anything but a message.
"""

from __future__ import annotations

import json
from typing import Optional


class HarnessError(Exception):
    """Any failure of a request: ``kind`` (the server's error kind, or ``"connection"`` /
    ``"protocol"`` for what happened on the client's side), ``status`` (the HTTP status, None
    when there was no answer) and ``detail`` (text for a person)."""

    def __init__(self, kind: str, status: Optional[int], detail: str) -> None:
        super().__init__(f"{kind} ({status}): {detail}" if status is not None else f"{kind}: {detail}")
        self.kind = kind
        self.status = status
        self.detail = detail


class BadRequest(HarnessError):
    """400: invalid_json, invalid_request, invalid_query, invalid_id, unknown_model,
    invalid_argument."""


class UnknownModel(BadRequest):
    """400 unknown_model: the request names a model the server was not configured with."""


class Unauthorized(HarnessError):
    """401: the bearer token is missing or wrong."""


class NotFound(HarnessError):
    """404: not_found (no such route) and the more specific kinds below."""


class SessionNotFound(NotFound):
    """404 session_not_found."""


class LoopNotFound(NotFound):
    """404 loop_not_found."""


class CommandNotFound(NotFound):
    """404 command_not_found: an unknown id, or one older than the server remembers."""


class ToolCallNotFound(NotFound):
    """404 tool_call_not_found: no call of a client tool with that id waits in the loop."""


class MethodNotAllowed(HarnessError):
    """405."""


class Conflict(HarnessError):
    """409: loop_exited, compaction_unsupported, session_faulted, session_suspended,
    restore_refused, and lease_held and tool_call_answered below."""


class LeaseHeld(Conflict):
    """409 lease_held: another writer holds the session's lease. When the server named the
    holder (another ``harness serve`` on the same journal), ``holder_owner`` is its lease owner
    id, ``lease_expires_at_ms`` when its lease ends unless renewed (Unix milliseconds on the
    journal's clock) and ``holder_url`` the URL it advertises (its ``--advertise-url``), where
    the session is served; each is None when the server did not give it."""

    def __init__(self, kind: str, status: Optional[int], detail: str, holder: Optional[dict] = None) -> None:
        super().__init__(kind, status, detail)
        holder = holder if isinstance(holder, dict) else {}
        owner = holder.get("owner")
        expires = holder.get("lease_expires_at_ms")
        url = holder.get("url")
        self.holder_owner: Optional[str] = owner if isinstance(owner, str) else None
        self.lease_expires_at_ms: Optional[int] = (
            expires if isinstance(expires, int) and not isinstance(expires, bool) else None
        )
        self.holder_url: Optional[str] = url if isinstance(url, str) else None


class LoopExited(Conflict):
    """409 loop_exited: the loop takes no more work."""


class ToolCallAnswered(Conflict):
    """409 tool_call_answered: the call already has its result (the client's, or the error
    result of its timeout or of its turn's end)."""


class MessageNotFound(NotFound):
    """404 message_not_found: no message of the loop's history has that id (a summarized
    message is gone)."""


class NoProposal(NotFound):
    """404 no_proposal: no proposal of that attempt waits (none was made, it was decided, or
    it expired)."""


class NotPinnable(Conflict):
    """409 not_pinnable: the summary, or one pin more than a loop may hold."""


class NothingToUndo(Conflict):
    """409 nothing_to_undo: no compaction or masking left to undo."""


class LoopBusy(Conflict):
    """409 loop_busy: a turn or a compaction runs; undo once the loop is idle."""


class UndoRefused(Conflict):
    """409 undo_refused: the history before the compaction would not fit (the detail has the
    figures)."""


class NothingToMask(Conflict):
    """409 nothing_to_mask: no old tool output is large enough and still unmasked."""


class NotMasked(NotFound):
    """404 not_masked: that message is not a masked tool output (or nothing is masked)."""


class MaskRefused(Conflict):
    """409 mask_refused: the changed history could not be counted, or the originals back would
    reach the input limit (the detail has the figures)."""


class InputNotQueued(Conflict):
    """409 input_not_queued: no queued input of the loop has that id (it has started, was
    withdrawn, or was never accepted)."""


class CompactionRejected(HarnessError):
    """422 compaction_rejected: POST /v1/compact ran and the compaction was rejected; nothing
    was installed. ``reason`` is the rejection's reason (``"unavailable"``,
    ``"invalid_summary"``, ``"coverage_insufficient"``, ``"interrupted"``, …) and
    ``reason_detail`` the kind of the runtime's detail, when it gave one (else None)."""

    def __init__(
        self,
        kind: str,
        status: Optional[int],
        detail: str,
        reason: Optional[str] = None,
        reason_detail: Optional[str] = None,
    ) -> None:
        super().__init__(kind, status, detail)
        self.reason = reason
        self.reason_detail = reason_detail


class Forbidden(HarnessError):
    """403: origin_not_allowed and any other refusal of who asks rather than what."""


class OriginNotAllowed(Forbidden):
    """403 origin_not_allowed: a state-changing request whose Origin is neither the server's own
    nor one of its --cors-origin (docs/serve.md "Security: what a browser can do")."""


class UnsupportedMediaType(HarnessError):
    """415 unsupported_media_type: a body sent as something other than application/json."""


class HostNotAllowed(HarnessError):
    """421 host_not_allowed: a server without a token refused a Host that names neither a
    loopback address nor its advertised URL (the DNS rebinding defence)."""


class TooLarge(HarnessError):
    """413: the body is over the server's --max-body-bytes."""


class ServerError(HarnessError):
    """500: journal, internal."""


class Unavailable(HarnessError):
    """503: shutting_down, too_many_sessions."""


class ShuttingDown(Unavailable):
    """503 shutting_down: the server is stopping."""


class ConnectionFailed(HarnessError):
    """No answer: the server could not be reached or the connection broke (kind
    ``"connection"``, status None)."""


class ProtocolError(HarnessError):
    """An answer that is not what the API defines (kind ``"protocol"``): a body that is not
    JSON, or JSON of another shape."""


class ResponseTooLarge(HarnessError):
    """An answer larger than the client reads (kind ``"response_too_large"``, ``status`` the
    answer's HTTP status): a line or an event of an event stream, an error body, or any other
    body, over its cap (``Client``'s ``max_event_bytes``, ``max_error_bytes``,
    ``max_body_bytes``). ``what`` says which, ``limit`` is the cap in bytes. The client read at
    most the cap and closed the connection; the message names the setting that raises it."""

    def __init__(self, what: str, limit: int, setting: str, status: Optional[int]) -> None:
        super().__init__(
            "response_too_large",
            status,
            f"{what} is over the client's limit of {format_bytes(limit)} (Client({setting}=…)"
            " raises it); the connection is closed",
        )
        self.what = what
        self.limit = limit


def format_bytes(n: int) -> str:
    """A size as a person reads it and exactly: "16 MiB + 4 KiB", "64 KiB", "100 bytes"."""
    parts = []
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10), ("bytes", 1)):
        if n >= size or (size == 1 and not parts):
            count = n // size
            parts.append(f"{count} {'byte' if size == 1 and count == 1 else unit}")
            n %= size
    return " + ".join(parts)


class CommandTimeout(HarnessError, TimeoutError):
    """Client.wait's timeout passed while the command was still pending (kind ``"timeout"``,
    status None). ``command_id`` names the command; waiting again may still get its reply."""

    def __init__(self, command_id: str, timeout: float) -> None:
        super().__init__("timeout", None, f"command {command_id} still pending after {timeout:g}s")
        self.command_id = command_id


class StreamTimeout(HarnessError, TimeoutError):
    """An event stream's deadline passed before the next frame (kind ``"timeout"``, status
    None): what Client.ask raises when the turn did not end in time. The turn goes on on the
    server; its events stay in the journal."""

    def __init__(self, detail: str) -> None:
        super().__init__("timeout", None, detail)


class InputRefused(HarnessError):
    """Client.ask's input never reached a turn: the loop rejected it (kind ``"input_rejected"``)
    or it left the queue unanswered (``"input_cancelled"``); ``reason`` is the event's."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(kind, None, f"the input was not taken: {reason}")
        self.reason = reason


class TurnNotCompleted(HarnessError):
    """Client.ask's turn ended without completing: ``kind`` is ``"turn_failed"`` (``reason``
    such as ``"model_error"``, ``detail`` the server's words) or ``"turn_interrupted"``.
    ``turn_id`` names the turn; ``partial`` is the last assistant text it committed, if any."""

    def __init__(self, kind: str, turn_id: str, reason: str, detail: str, partial: Optional[str]) -> None:
        super().__init__(kind, None, f"turn {turn_id} {reason}" + (f": {detail}" if detail else ""))
        self.turn_id = turn_id
        self.reason = reason
        self.partial = partial


_BY_KIND = {
    "unknown_model": UnknownModel,
    "session_not_found": SessionNotFound,
    "loop_not_found": LoopNotFound,
    "command_not_found": CommandNotFound,
    "lease_held": LeaseHeld,
    "loop_exited": LoopExited,
    "tool_call_not_found": ToolCallNotFound,
    "tool_call_answered": ToolCallAnswered,
    "shutting_down": ShuttingDown,
    "message_not_found": MessageNotFound,
    "no_proposal": NoProposal,
    "not_pinnable": NotPinnable,
    "nothing_to_undo": NothingToUndo,
    "loop_busy": LoopBusy,
    "undo_refused": UndoRefused,
    "nothing_to_mask": NothingToMask,
    "not_masked": NotMasked,
    "mask_refused": MaskRefused,
    "input_not_queued": InputNotQueued,
    "origin_not_allowed": OriginNotAllowed,
    "unsupported_media_type": UnsupportedMediaType,
    "host_not_allowed": HostNotAllowed,
    "compaction_rejected": CompactionRejected,
}

_BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: TooLarge,
    415: UnsupportedMediaType,
    421: HostNotAllowed,
    422: CompactionRejected,
    500: ServerError,
    503: Unavailable,
}

# A detail quoted from a body that is not the API's error: enough to recognise, never the lot.
_MAX_QUOTED = 200


def error_from_response(status: int, body: bytes) -> HarnessError:
    """The typed error of a response with a status of 400 or more."""
    kind = f"http_{status}"
    detail = body[:_MAX_QUOTED].decode("utf-8", errors="replace")
    holder = None
    reason = reason_detail = None
    try:
        parsed = json.loads(body)
        error = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(error, dict) and isinstance(error.get("kind"), str):
            kind = error["kind"]
            detail = error.get("detail") if isinstance(error.get("detail"), str) else ""
            holder = error.get("holder")
            reason = error.get("reason") if isinstance(error.get("reason"), str) else None
            if isinstance(error.get("reason_detail"), str):
                reason_detail = error["reason_detail"]
    except (ValueError, RecursionError):
        # Not the API's error (a proxy's page, say, or JSON nested deeper than Python's parser
        # recurses): keep the status and a few bytes.
        pass
    cls = _BY_KIND.get(kind) or _BY_STATUS.get(status) or HarnessError
    if cls is LeaseHeld:
        return LeaseHeld(kind, status, detail, holder)
    if cls is CompactionRejected:
        return CompactionRejected(kind, status, detail, reason, reason_detail)
    return cls(kind, status, detail)
