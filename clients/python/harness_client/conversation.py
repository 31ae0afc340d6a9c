"""Send and wait: one input to a loop, and the answer of the turn it starts, read from the
session's event stream (docs/serve.md "Events", "Text deltas").

    answer = client.ask(sid, loop, "Say hello.")          # Answer, once the turn completed
    for piece in (stream := client.ask_stream(sid, loop, "Go on.")):
        print(piece, end="", flush=True)                   # the text as the model streams it
    print(stream.answer.text)

How the turn is found: the stream is opened (the server subscribed) before the input is sent,
so nothing of it is missed. The input's command id is the ``input_command_id`` of the
MessageCommitted that puts it into the history; that event names the turn. The turn's
assistant messages and its text deltas follow, and the turn's TurnCompleted ends the wait
(TurnFailed or TurnInterrupted raise TurnNotCompleted; an InputRejected or InputCancelled of the
command, InputRefused). A dropped connection resumes after the last event as any EventStream
does; deltas published while it was down are not replayed (the answer's text is whole all the
same: it is the committed message's).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional

from .errors import InputRefused, ProtocolError, TurnNotCompleted
from .models import Answer, Event, Lagged, TextDelta

if TYPE_CHECKING:
    from .client import Client, EventStream

# What the turn's stream keeps: the loop's events of these types (and its text deltas).
_KINDS = [
    "InputRejected",
    "InputCancelled",
    "MessageCommitted",
    "TurnCompleted",
    "TurnFailed",
    "TurnInterrupted",
]


def message_text(message: Dict[str, Any]) -> str:
    """The text of a message in the content codec: its text blocks, joined."""
    blocks = message.get("blocks")
    if not isinstance(blocks, list):
        raise ProtocolError("protocol", None, "a committed message has no blocks")
    return "".join(
        b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


class AnswerStream:
    """An iterator over the text of the answer to one input, as the model streams it (each item
    a ``str``); ``answer`` is the Answer once the iteration ended (after the turn completed).
    Iterating raises what Client.ask raises. A context manager: leaving it closes the stream.
    A model that does not stream yields nothing, and its answer is still there at the end."""

    def __init__(self, client: "Client", session_id: str, loop_id: str, text: str, timeout: float) -> None:
        self.answer: Optional[Answer] = None
        self._loop = loop_id
        self._stream: "EventStream" = client.events(
            session_id, loop=loop_id, kinds=_KINDS, text_deltas=True
        )
        self._stream.deadline = time.monotonic() + timeout
        self._timeout = timeout
        try:
            # Subscribed before the input exists: none of its turn's events can be missed.
            self._stream.connect()
            self.command_id = client.submit_input(session_id, loop_id, text)
        except BaseException:
            self._stream.close()
            raise
        self._turn: Optional[str] = None
        self._last: Optional[Dict[str, Any]] = None
        self._deltas = 0

    def __enter__(self) -> "AnswerStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._stream.close()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self.answer is not None:
            raise StopIteration
        try:
            return self._next()
        except BaseException:
            self._stream.close()
            raise

    def _next(self) -> str:
        for item in self._stream:
            if isinstance(item, Lagged):
                continue  # the stream resumes after its last event: nothing enduring is lost
            if isinstance(item, TextDelta):
                if self._turn is not None and item.turn_id == self._turn and item.loop_id == self._loop:
                    self._deltas += 1
                    return item.text
                continue
            if self._take(item):
                self._stream.close()
                raise StopIteration
        # The session left the server's memory (deleted, or the server stopping) first.
        raise TurnNotCompleted(
            "turn_interrupted",
            self._turn or "(not started)",
            "the event stream ended before the turn did",
            self._stream.end.reason if self._stream.end is not None else "",
            None if self._last is None else message_text(self._last),
        )

    def _take(self, event: Event) -> bool:
        """Applies one event; True once the turn completed (``answer`` set)."""
        data = event.data
        if event.type in ("InputRejected", "InputCancelled"):
            cause = data.get("cause")
            if isinstance(cause, dict) and cause.get("command_id") == self.command_id:
                kind = "input_rejected" if event.type == "InputRejected" else "input_cancelled"
                raise InputRefused(kind, str(data.get("reason", "")))
            return False
        if self._turn is None:
            if event.type == "MessageCommitted" and data.get("input_command_id") == self.command_id:
                turn = data.get("turn_id")
                if not isinstance(turn, str):
                    raise ProtocolError("protocol", None, "the input's MessageCommitted names no turn")
                self._turn = turn
            return False
        if data.get("turn_id") != self._turn:
            return False
        if event.type == "MessageCommitted":
            message = data.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                self._last = message
            return False
        partial = None if self._last is None else message_text(self._last)
        if event.type == "TurnCompleted":
            self.answer = Answer(partial or "", self._last, self._turn, str(self.command_id), self._deltas)
            return True
        if event.type == "TurnFailed":
            raise TurnNotCompleted(
                "turn_failed", self._turn, str(data.get("reason", "")), str(data.get("detail", "")), partial
            )
        if event.type == "TurnInterrupted":
            raise TurnNotCompleted("turn_interrupted", self._turn, str(data.get("reason", "")), "", partial)
        return False


def ask(client: "Client", session_id: str, loop_id: str, text: str, timeout: float = 120.0) -> Answer:
    """Sends ``text`` to the loop and returns the Answer once the turn that takes it completed.
    ``timeout`` (seconds) bounds the whole wait: StreamTimeout (a TimeoutError) when the turn
    has not ended by then (it goes on on the server). TurnNotCompleted when the turn failed or
    was interrupted, InputRefused when the input never reached a turn."""
    with AnswerStream(client, session_id, loop_id, text, timeout) as stream:
        for _ in stream:
            pass  # the deltas; the answer is the committed message
        if stream.answer is None:
            raise ProtocolError("protocol", None, "the answer stream ended without an answer")
        return stream.answer
