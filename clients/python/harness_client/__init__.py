"""A client of `harness serve` (docs/serve.md) using only the Python standard library.

    from harness_client import Client
    client = Client("http://127.0.0.1:8420")
    created = client.create_session("m")

See clients/python/README.md.
"""

from .client import MAX_WAIT_MS, Client, EventStream
from .errors import (
    BadRequest,
    CommandNotFound,
    CommandTimeout,
    Conflict,
    ConnectionFailed,
    HarnessError,
    LeaseHeld,
    LoopExited,
    LoopNotFound,
    MethodNotAllowed,
    NotFound,
    ProtocolError,
    ServerError,
    SessionNotFound,
    ShuttingDown,
    TooLarge,
    Unauthorized,
    Unavailable,
    UnknownModel,
)
from .models import (
    Category,
    CommandStatus,
    Context,
    CreatedSession,
    Event,
    History,
    Lagged,
    LoopSpec,
    LoopState,
    Measurement,
    Session,
    SessionSummary,
    StreamEnd,
)

__all__ = [
    "MAX_WAIT_MS",
    "Client",
    "EventStream",
    "BadRequest",
    "CommandNotFound",
    "CommandTimeout",
    "Conflict",
    "ConnectionFailed",
    "HarnessError",
    "LeaseHeld",
    "LoopExited",
    "LoopNotFound",
    "MethodNotAllowed",
    "NotFound",
    "ProtocolError",
    "ServerError",
    "SessionNotFound",
    "ShuttingDown",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "UnknownModel",
    "Category",
    "CommandStatus",
    "Context",
    "CreatedSession",
    "Event",
    "History",
    "Lagged",
    "LoopSpec",
    "LoopState",
    "Measurement",
    "Session",
    "SessionSummary",
    "StreamEnd",
]
