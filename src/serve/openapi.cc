#include "serve/openapi.h"

namespace harness::serve {

namespace {

// Written by hand so that it says what the decoders accept; the test compares it with the router
// and the error table.
constexpr std::string_view kDocument = R"openapi({
  "openapi": "3.1.0",
  "info": {
    "title": "harness serve",
    "version": "1",
    "summary": "Agent sessions with durable, validated context compaction, over HTTP and Server-Sent Events.",
    "description": "Every refusal is an Error with the status of its kind. Bodies are strict JSON: one value, UTF-8, no duplicate member, at most 32 levels deep; an unknown member anywhere is invalid_request. A request with a body sends it as Content-Type: application/json (else 415 unsupported_media_type). A change (POST, PUT, DELETE) whose Origin is neither the server's own nor in its CORS allow-list is 403 origin_not_allowed. Without a token, a Host that is not a loopback address on the server's port (or the advertised URL's host) is 421 host_not_allowed. A header with a NUL or another control byte, a repeated Host, or an HTTP/1.1 request without Host is 400 invalid_header. With a token configured every request needs Authorization: Bearer (the scheme in any case)."
  },
  "servers": [{"url": "/"}],
  "security": [{}, {"bearer": []}],
  "paths": {
    "/v1/sessions": {
      "post": {
        "operationId": "createSession",
        "summary": "Open a session in the journal and create its loops (the first is the active one).",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreateSessionRequest"}}}},
        "responses": {
          "201": {"description": "Created.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreatedSession"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      },
      "get": {
        "operationId": "listSessions",
        "summary": "Every session of the journal.",
        "responses": {
          "200": {"description": "The sessions, in id order.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SessionList"}}}},
          "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}": {
      "parameters": [{"$ref": "#/components/parameters/session"}],
      "get": {
        "operationId": "getSession",
        "summary": "A session and its loops (restored from the journal when not in memory).",
        "responses": {
          "200": {"description": "The session.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Session"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      },
      "delete": {
        "operationId": "deleteSession",
        "summary": "End the session (its loops exit) and drop it from memory; the journal keeps it.",
        "responses": {
          "204": {"description": "Ended."},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/export": {
      "parameters": [{"$ref": "#/components/parameters/session"}],
      "get": {
        "operationId": "exportSession",
        "summary": "The session's journal, one record a line, as `harness journal show --json` writes it.",
        "responses": {
          "200": {"description": "NDJSON, read from the journal a page at a time.", "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/events": {
      "parameters": [{"$ref": "#/components/parameters/session"}],
      "get": {
        "operationId": "streamEvents",
        "summary": "The session's events as Server-Sent Events: `id` is the journal sequence (none for an ephemeral event), `event` the type, `data` {\"seq\",\"event\"}. A stream that falls behind ends with `event: lagged`, data {\"last_seq\"}; one whose session leaves memory ends with `event: end`, data {\"reason\",\"last_seq\"}. A quiet stream sends a comment line (`:`) as a keepalive. With `text_deltas=true`, a loop's answer text also arrives as the model streams it: `event: text_delta`, no `id`, data {\"loop_id\",\"turn_id\",\"text\"} (schema TextDelta); deltas are never journaled nor replayed, and the committed MessageCommitted holds the whole text.",
        "parameters": [
          {"name": "from", "in": "query", "description": "Replay the journal from this sequence, then go live, with no gap and no duplicate.", "schema": {"type": "integer", "minimum": 1}},
          {"name": "loop", "in": "query", "description": "Keep this loop's events and the session's own.", "schema": {"type": "string", "format": "uuid"}},
          {"name": "kind", "in": "query", "description": "Keep these event types, separated by commas.", "schema": {"type": "string"}},
          {"name": "text_deltas", "in": "query", "description": "true: add the text_delta frames of the loops' streamed answers (of the `loop` only, with one), whatever `kind` keeps.", "schema": {"type": "string", "enum": ["true", "false"], "default": "false"}},
          {"name": "Last-Event-ID", "in": "header", "description": "Resume after this sequence; wins over `from`.", "schema": {"type": "integer", "minimum": 1}}
        ],
        "responses": {
          "200": {"description": "The stream.", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/input": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "post": {
        "operationId": "submitInput",
        "summary": "The user's input to a loop; accepted once its intent is durable, answered by InputAccepted, InputRejected or InputCancelled.",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/InputRequest"}}}},
        "responses": {
          "202": {"$ref": "#/components/responses/CommandAccepted"},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/compact": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "post": {
        "operationId": "compact",
        "summary": "Request a compaction of the loop, with instructions for the summarizer, or a preview that waits for approve or discard; answered by CompactWaiterResolved or CompactWaiterRejected.",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CompactRequest"}}}},
        "responses": {
          "202": {"$ref": "#/components/responses/CommandAccepted"},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/interrupt": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "post": {
        "operationId": "interrupt",
        "summary": "Interrupt the loop's running turn or compaction; done when accepted (what it ended shows in the events).",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}},
        "responses": {
          "200": {"$ref": "#/components/responses/CommandAccepted"},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/undo": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "post": {
        "operationId": "undo",
        "summary": "Revert the loop's latest compaction: the history before it and every message since (HistoryReverted).",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}},
        "responses": {
          "200": {"description": "Undone.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Undone"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/mask": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "post": {
        "operationId": "mask",
        "summary": "Replace the loop's old tool output (before the retained tail, not pinned, at least 1024 bytes) with stubs (ToolOutputsMasked); undo reverts it.",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}},
        "responses": {
          "200": {"description": "Masked.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Undone"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/unmask": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "post": {
        "operationId": "unmaskAll",
        "summary": "Put back the originals of every masked tool output (ToolOutputsUnmasked).",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}},
        "responses": {
          "200": {"description": "Unmasked.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Undone"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/masked/{message}": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}, {"$ref": "#/components/parameters/message"}],
      "get": {
        "operationId": "maskedOriginal",
        "summary": "The original of a masked tool output (what its stub replaced).",
        "responses": {
          "200": {"description": "The original.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MaskedOriginal"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      },
      "delete": {
        "operationId": "unmask",
        "summary": "Put back the original of one masked tool output (ToolOutputsUnmasked).",
        "responses": {
          "200": {"description": "Unmasked.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Undone"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/inputs/{input}": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}, {"$ref": "#/components/parameters/input"}],
      "delete": {
        "operationId": "cancelQueuedInput",
        "summary": "Withdraw a queued input before its turn takes it (InputCancelled retracted); refused input_not_queued once it has started.",
        "responses": {
          "200": {"description": "Withdrawn: the InputCancelled's id.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Undone"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/delegate_requests/{request}": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}, {"$ref": "#/components/parameters/request"}],
      "delete": {
        "operationId": "cancelDelegateRequest",
        "summary": "Withdraw a queued delegate request, or cancel its running turn (TurnInterrupted canceled).",
        "responses": {
          "200": {"description": "What was cancelled.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DelegateCancelled"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/pins/{message}": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}, {"$ref": "#/components/parameters/message"}],
      "put": {
        "operationId": "pin",
        "summary": "Pin a message of the loop's history (its id from GET history): no compaction summarizes it.",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}},
        "responses": {
          "200": {"description": "Pinned.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PinChanged"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      },
      "delete": {
        "operationId": "unpin",
        "summary": "Unpin a message of the loop's history.",
        "responses": {
          "200": {"description": "Unpinned.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PinChanged"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/proposals/{attempt}/approve": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}, {"$ref": "#/components/parameters/attempt"}],
      "post": {
        "operationId": "approveProposal",
        "summary": "Commit the proposed compaction of this attempt (CompactionProposed); done when its terminal is durable.",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}},
        "responses": {
          "200": {"description": "Decided.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProposalDecided"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/proposals/{attempt}/discard": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}, {"$ref": "#/components/parameters/attempt"}],
      "post": {
        "operationId": "discardProposal",
        "summary": "Reject the proposed compaction of this attempt (discarded); the history stays.",
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}},
        "responses": {
          "200": {"description": "Decided.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProposalDecided"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/history": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "get": {
        "operationId": "getHistory",
        "summary": "The loop's history in the content codec; derived_prefix is 1 when the first message is a summary.",
        "responses": {
          "200": {"description": "The history.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/History"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/context": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "get": {
        "operationId": "getContext",
        "summary": "The loop's latest measurement and its history by category, with conservative token estimates.",
        "responses": {
          "200": {"description": "The context.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Context"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/tool_calls": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "get": {
        "operationId": "getToolCalls",
        "summary": "The calls of client tools the running turn still waits for, in call order.",
        "responses": {
          "200": {"description": "The open calls.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolCalls"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/loops/{loop}/tool_results": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/loop"}],
      "post": {
        "operationId": "postToolResults",
        "summary": "Answer open calls of client tools; all or nothing.",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolResultsRequest"}}}},
        "responses": {
          "200": {"description": "Every result was taken.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ToolResultsAnswered"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/sessions/{session}/commands/{command}": {
      "parameters": [{"$ref": "#/components/parameters/session"}, {"$ref": "#/components/parameters/command"}],
      "get": {
        "operationId": "getSessionCommand",
        "summary": "A command of the session and its reply, from the server's memory or else from the session's journal (after a restart, or on another server), waiting up to wait_ms for it.",
        "description": "When the server's book does not hold the command, the session's journal answers: 200 with its reply, 202 while its intent has none, 404 command_not_found when the journal holds no compact or input command with that id. With wait_ms, a pending command's session is restored here on demand (its restore answers what its last holder left open) and the reply waited for; a session another server holds answers at once with what the journal has.",
        "parameters": [{"$ref": "#/components/parameters/wait_ms"}],
        "responses": {
          "200": {"$ref": "#/components/responses/CommandAnswered"},
          "202": {"$ref": "#/components/responses/CommandPending"},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/commands/{command}": {
      "parameters": [{"$ref": "#/components/parameters/command"}],
      "get": {
        "operationId": "getCommand",
        "summary": "A command's reply, waiting up to wait_ms for it: only the commands this server accepted and still holds (the session's form also reads the journal).",
        "parameters": [{"$ref": "#/components/parameters/wait_ms"}],
        "responses": {
          "200": {"$ref": "#/components/responses/CommandAnswered"},
          "202": {"$ref": "#/components/responses/CommandPending"},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/openapi.json": {
      "get": {
        "operationId": "getOpenApi",
        "summary": "This document.",
        "responses": {
          "200": {"description": "OpenAPI 3.1.", "content": {"application/json": {"schema": {"type": "object"}}}},
          "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/compact": {
      "post": {
        "operationId": "compactConversation",
        "summary": "Compact a conversation the client holds, in the harness codec or a provider's shape, and answer the replacement in the same shape: the system elements and the retained elements as sent, the summary written fresh. Stored as a session when store is true.",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ConversationCompactRequest"}}}},
        "responses": {
          "200": {"description": "Committed.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CompactedConversation"}}}},
          "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "422": {"$ref": "#/components/responses/Error"}, "500": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/v1/responses": {
      "post": {
        "operationId": "gatewayResponses",
        "summary": "Gateway (--upstream): an OpenAI Responses request forwarded to the upstream as sent, its answer (a stream byte for byte) relayed as it arrives; with context_management compaction, the input is compacted by harness first when it crosses compact_threshold (docs/spec/gateway.md).",
        "security": [{}, {"bearer": []}, {"harnessToken": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProviderRequest"}}}},
        "responses": {
          "200": {"description": "The upstream's answer: a Response object, or its event stream.", "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/OpenAiError"}, "401": {"$ref": "#/components/responses/OpenAiError"}, "403": {"$ref": "#/components/responses/OpenAiError"}, "413": {"$ref": "#/components/responses/OpenAiError"}, "415": {"$ref": "#/components/responses/OpenAiError"}, "421": {"$ref": "#/components/responses/OpenAiError"}, "500": {"$ref": "#/components/responses/OpenAiError"}, "501": {"$ref": "#/components/responses/OpenAiError"}, "502": {"$ref": "#/components/responses/OpenAiError"}, "503": {"$ref": "#/components/responses/OpenAiError"}
        }
      }
    },
    "/v1/responses/compact": {
      "post": {
        "operationId": "gatewayResponsesCompact",
        "summary": "Gateway: OpenAI Responses compaction served by harness (no upstream needed): input items in, output items out that any model takes back as input, the summary as readable text and the retained items as sent (docs/spec/gateway.md).",
        "security": [{}, {"bearer": []}, {"harnessToken": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProviderRequest"}}}},
        "responses": {
          "200": {"description": "A response.compaction object.", "content": {"application/json": {"schema": {"type": "object"}}}},
          "400": {"$ref": "#/components/responses/OpenAiError"}, "401": {"$ref": "#/components/responses/OpenAiError"}, "403": {"$ref": "#/components/responses/OpenAiError"}, "413": {"$ref": "#/components/responses/OpenAiError"}, "415": {"$ref": "#/components/responses/OpenAiError"}, "421": {"$ref": "#/components/responses/OpenAiError"}, "422": {"$ref": "#/components/responses/OpenAiError"}, "500": {"$ref": "#/components/responses/OpenAiError"}, "503": {"$ref": "#/components/responses/OpenAiError"}
        }
      }
    },
    "/v1/messages": {
      "post": {
        "operationId": "gatewayMessages",
        "summary": "Gateway (--upstream): an Anthropic Messages request forwarded to the upstream; with a compact_20260112 edit in context_management, compacted by harness over its trigger, the compaction block first in the answer; a request carrying harness's compaction block is sent upstream from it on (docs/spec/gateway.md section 5).",
        "security": [{}, {"bearer": []}, {"harnessToken": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProviderRequest"}}}},
        "responses": {
          "200": {"description": "The upstream's answer: a Message object, or its event stream, with harness's compaction block ({\"type\":\"compaction\",\"content\",\"encrypted_content\"}) first after a compaction; with pause_after_compaction, harness's answer of the block alone (stop_reason compaction).", "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/AnthropicError"}, "401": {"$ref": "#/components/responses/AnthropicError"}, "403": {"$ref": "#/components/responses/AnthropicError"}, "413": {"$ref": "#/components/responses/AnthropicError"}, "415": {"$ref": "#/components/responses/AnthropicError"}, "421": {"$ref": "#/components/responses/AnthropicError"}, "500": {"$ref": "#/components/responses/AnthropicError"}, "501": {"$ref": "#/components/responses/AnthropicError"}, "502": {"$ref": "#/components/responses/AnthropicError"}, "503": {"$ref": "#/components/responses/AnthropicError"}
        }
      }
    },
    "/v1/chat/completions": {
      "post": {
        "operationId": "gatewayChatCompletions",
        "summary": "Gateway (--upstream): an OpenAI Chat Completions request forwarded to the upstream (docs/spec/gateway.md).",
        "description": "A compacting gateway for clients that know nothing of compaction. With --gateway-compact-at TOKENS, a history of that many tokens or more is compacted (the system messages as sent, the summary as a readable user message, the newest messages as sent) before it goes upstream, and the conversation's later requests, which carry the whole history, go with that compacted prefix and their new messages. Other requests, and every request without the option, go upstream byte for byte. Only messages and stream are read; every other member goes upstream as sent.",
        "security": [{}, {"bearer": []}, {"harnessToken": []}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ProviderRequest"}}}},
        "responses": {
          "200": {"description": "The upstream's answer: a chat completion, or its chunks as a stream.", "content": {"application/json": {"schema": {"type": "object"}}, "text/event-stream": {"schema": {"type": "string"}}}},
          "400": {"$ref": "#/components/responses/OpenAiError"}, "401": {"$ref": "#/components/responses/OpenAiError"}, "403": {"$ref": "#/components/responses/OpenAiError"}, "413": {"$ref": "#/components/responses/OpenAiError"}, "415": {"$ref": "#/components/responses/OpenAiError"}, "421": {"$ref": "#/components/responses/OpenAiError"}, "500": {"$ref": "#/components/responses/OpenAiError"}, "501": {"$ref": "#/components/responses/OpenAiError"}, "502": {"$ref": "#/components/responses/OpenAiError"}, "503": {"$ref": "#/components/responses/OpenAiError"}
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "getMetrics",
        "summary": "The server's counters in the Prometheus text format 0.0.4.",
        "responses": {
          "200": {"description": "The metrics.", "content": {"text/plain": {"schema": {"type": "string"}}}},
          "401": {"$ref": "#/components/responses/Error"}, "421": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearer": {"type": "http", "scheme": "bearer", "description": "Required when the server was started with a token (always off loopback)."},
      "harnessToken": {"type": "apiKey", "in": "header", "name": "X-Harness-Token", "description": "The gateway's paths: the server's token in a header of its own, so that Authorization carries the caller's provider key to the upstream."}
    },
    "parameters": {
      "session": {"name": "session", "in": "path", "required": true, "description": "A canonical lowercase UUID.", "schema": {"type": "string", "format": "uuid"}},
      "loop": {"name": "loop", "in": "path", "required": true, "description": "A canonical lowercase UUID.", "schema": {"type": "string", "format": "uuid"}},
      "command": {"name": "command", "in": "path", "required": true, "description": "A canonical lowercase UUID.", "schema": {"type": "string", "format": "uuid"}},
      "message": {"name": "message", "in": "path", "required": true, "description": "A message id (GET history's message_ids), a canonical lowercase UUID.", "schema": {"type": "string", "format": "uuid"}},
      "input": {"name": "input", "in": "path", "required": true, "description": "The input's command id (POST input's command_id), a canonical lowercase UUID.", "schema": {"type": "string", "format": "uuid"}},
      "request": {"name": "request", "in": "path", "required": true, "description": "The delegate request's command id (POST input with origin delegate_request), a canonical lowercase UUID.", "schema": {"type": "string", "format": "uuid"}},
      "attempt": {"name": "attempt", "in": "path", "required": true, "description": "The attempt id of the proposal (GET history's proposal), a canonical lowercase UUID.", "schema": {"type": "string", "format": "uuid"}},
      "wait_ms": {"name": "wait_ms", "in": "query", "description": "How long to wait for the reply; 0 or absent answers at once.", "schema": {"type": "integer", "minimum": 0, "maximum": 30000}}
    },
    "responses": {
      "Error": {"description": "A typed refusal.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
      "OpenAiError": {"description": "A refusal in OpenAI's shape: harness's own (code: its error kind, or no_upstream, upstream_unavailable) or the upstream's as it answered.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAiError"}}}},
      "AnthropicError": {"description": "A refusal in Anthropic's shape: harness's own or the upstream's as it answered.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AnthropicError"}}}},
      "CommandAccepted": {"description": "The command's intent is durable; every id returned gets exactly one reply.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CommandAccepted"}}}},
      "CommandAnswered": {"description": "Answered: the reply event.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CommandStatus"}}}},
      "CommandPending": {"description": "Still pending when the wait ended (for the session's form, at once when another server holds the session).", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CommandStatus"}}}}
    },
    "schemas": {
      "ProviderRequest": {"type": "object", "description": "A request of the provider's wire, as its SDK sends it; the members the gateway reads are listed per wire in docs/spec/gateway.md, the rest go to the upstream as sent."},
      "OpenAiError": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "object", "required": ["message", "type"], "properties": {"message": {"type": "string"}, "type": {"type": "string"}, "param": {"type": ["string", "null"]}, "code": {"type": ["string", "null"]}}}}
      },
      "AnthropicError": {
        "type": "object",
        "required": ["type", "error"],
        "properties": {"type": {"const": "error"}, "error": {"type": "object", "required": ["type", "message"], "properties": {"type": {"type": "string"}, "message": {"type": "string"}}}}
      },
      "ConversationCompactRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["format"],
        "description": "The conversation is messages (harness, openai, anthropic) or input (openai-responses), with system for anthropic; a member of another format is refused. Its elements are read from the body's bytes (docs/spec/dialects.md); the body may nest as deep as a transcript allows.",
        "properties": {
          "format": {"type": "string", "enum": ["harness", "openai", "openai-responses", "anthropic"]},
          "messages": {"type": "array", "description": "harness: a transcript (docs/content.md); openai: Chat Completions messages; anthropic: Messages messages."},
          "input": {"type": "array", "description": "openai-responses: Responses input items."},
          "system": {"description": "anthropic: the system prompt, a string or text blocks."},
          "store": {"type": "boolean", "default": false, "description": "true: the compaction is a session of the server's journal (listed, restorable, previewed and undone as any other)."},
          "options": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "model": {"type": "string", "minLength": 1, "default": "offline", "description": "A configured model whose key, window, output, counter and policy the compaction takes."},
              "compactor": {"type": "string", "minLength": 1, "default": "offline", "description": "\"offline\" (the extractive compactor) or a configured model's name."},
              "context_window": {"type": "integer", "minimum": 0, "maximum": 100000000},
              "max_output_tokens": {"type": "integer", "minimum": 0, "maximum": 100000000},
              "keep_recent_segments": {"type": "integer", "minimum": 0, "maximum": 1000000},
              "keep_recent_tokens": {"type": "integer", "minimum": 0, "maximum": 100000000},
              "max_summary_tokens": {"type": "integer", "minimum": 0, "maximum": 100000000},
              "instructions": {"type": "string", "description": "What the summary should favour (docs/compact-focus.md)."},
              "coverage": {"type": "string", "enum": ["off", "report", "repair", "enforce"]},
              "pins": {"type": "array", "maxItems": 64, "uniqueItems": true, "items": {"type": "integer", "minimum": 0}, "description": "Indexes of elements (harness: messages) kept after the summary, written fresh."}
            }
          }
        }
      },
      "CompactedConversation": {
        "type": "object",
        "required": ["format", "summary", "report"],
        "properties": {
          "format": {"type": "string", "enum": ["harness", "openai", "openai-responses", "anthropic"]},
          "messages": {"type": "array", "description": "The replacement (every format but openai-responses)."},
          "input": {"type": "array", "description": "openai-responses: the replacement."},
          "system": {"description": "anthropic: the request's system, as sent."},
          "summary": {"type": "string"},
          "report": {
            "type": "object",
            "required": ["messages_before", "tokens_before", "tokens_after", "input_limit", "retained", "retained_elements", "retained_verbatim", "pinned", "shortened", "repaired"],
            "properties": {
              "messages_before": {"type": "integer", "minimum": 0},
              "tokens_before": {"type": ["integer", "null"], "minimum": 0},
              "tokens_after": {"type": "integer", "minimum": 0},
              "input_limit": {"type": "integer", "minimum": 0},
              "retained": {"type": "integer", "minimum": 0, "description": "Retained tail messages."},
              "retained_elements": {"type": "integer", "minimum": 0, "description": "Elements after the summary and pins."},
              "retained_verbatim": {"type": "boolean", "description": "false: the tail was shortened to fit and is written fresh, as committed."},
              "pinned": {"type": "integer", "minimum": 0},
              "shortened": {"type": "integer", "minimum": 0},
              "repaired": {"type": "integer", "minimum": 0},
              "coverage": {"type": "object", "properties": {"found": {"type": "integer"}, "total": {"type": "integer"}, "missing": {"type": "integer"}}}
            }
          },
          "session_id": {"type": "string", "format": "uuid", "description": "store: the session."},
          "loop_id": {"type": "string", "format": "uuid", "description": "store: its loop."}
        }
      },
      "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
          "error": {
            "type": "object",
            "required": ["kind", "detail"],
            "properties": {
              "kind": {"type": "string", "enum": ["invalid_json", "invalid_request", "invalid_query", "invalid_id", "unknown_model", "invalid_argument", "unauthorized", "not_found", "session_not_found", "loop_not_found", "command_not_found", "tool_call_not_found", "method_not_allowed", "lease_held", "loop_exited", "compaction_unsupported", "session_faulted", "session_suspended", "restore_refused", "tool_call_answered", "too_large", "journal", "internal", "shutting_down", "too_many_sessions", "origin_not_allowed", "message_not_found", "not_pinnable", "nothing_to_undo", "loop_busy", "undo_refused", "no_proposal", "nothing_to_mask", "not_masked", "mask_refused", "invalid_header", "host_not_allowed", "unsupported_media_type", "compaction_rejected", "input_not_queued"]},
              "detail": {"type": "string", "description": "For a person; quotes at most a few bytes of the request."},
              "reason": {"type": "string", "description": "compaction_rejected: the rejection's reason (unavailable, invalid_summary, coverage_insufficient, ...; docs/runtime.md)."},
              "reason_detail": {"type": "string", "description": "compaction_rejected: the kind of the runtime's detail, when it gave one."},
              "holder": {
                "type": "object",
                "description": "lease_held: the server process that holds the session, when the journal named it.",
                "required": ["owner", "lease_expires_at_ms"],
                "properties": {
                  "owner": {"type": "string", "format": "uuid", "description": "The holder's lease owner id, which it prints when it starts."},
                  "lease_expires_at_ms": {"type": "integer", "description": "When the holder's lease ends unless it renews it: Unix milliseconds on the journal's clock."},
                  "url": {"type": "string", "format": "uri", "description": "Where the holder serves the session (its harness serve --advertise-url); absent when it advertises none."}
                }
              }
            }
          }
        }
      },
      "Empty": {"type": "object", "additionalProperties": false},
      "CompactRequest": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "instructions": {"type": "string", "description": "What the summary should favour; at most 2048 bytes of UTF-8, no control characters but tab and newline."},
          "preview": {"type": "boolean", "description": "Propose instead of committing: the attempt waits for approve or discard (CompactionProposed)."}
        }
      },
      "DelegateCancelled": {"type": "object", "required": ["cancelled"], "properties": {"cancelled": {"type": "string", "enum": ["queued", "active"]}}},
      "Undone": {"type": "object", "required": ["event_id"], "properties": {"event_id": {"type": "string", "format": "uuid"}}},
      "MaskedOriginal": {"type": "object", "required": ["message_id", "message"], "properties": {"message_id": {"type": "string", "format": "uuid"}, "message": {"$ref": "#/components/schemas/Message"}}},
      "PinChanged": {"type": "object", "required": ["pinned", "changed"], "properties": {"pinned": {"type": "boolean"}, "changed": {"type": "boolean"}}},
      "ProposalDecided": {"type": "object", "required": ["terminal_event_id"], "properties": {"terminal_event_id": {"type": "string", "format": "uuid"}}},
      "CreateSessionRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["loops"],
        "properties": {
          "loops": {"type": "array", "minItems": 1, "maxItems": 16, "items": {"$ref": "#/components/schemas/LoopRequest"}}
        }
      },
      "LoopRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["model"],
        "properties": {
          "model": {"type": "string", "minLength": 1, "description": "A model the server was configured with, by name, or \"offline\": the offline model, which only compacts (its loops refuse input)."},
          "compactor": {"type": "string", "minLength": 1, "default": "offline", "description": "\"offline\" (the extractive compactor) or a configured model's name."},
          "system_prompt": {"type": "string"},
          "tools": {"type": "array", "maxItems": 128, "items": {"$ref": "#/components/schemas/ClientTool"}},
          "history": {"type": "array", "items": {"$ref": "#/components/schemas/Message"}, "description": "The loop's initial history: a transcript in the harness codec (docs/content.md)."},
          "policy": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "automatic": {"type": "boolean", "default": true},
              "masking": {"type": "string", "enum": ["first", "off"], "default": "first", "description": "first: automatic compaction masks old tool output before it summarizes."},
              "coverage": {"type": "string", "enum": ["off", "report", "repair", "enforce"], "description": "The coverage gate (docs/compactors.md): repair writes the anchors a summary misses into it; enforce rejects it. Default: repair for a model compactor, report for the offline one."},
              "keep_recent_segments": {"type": "integer", "minimum": 0, "maximum": 1000000},
              "keep_recent_tokens": {"type": "integer", "minimum": 0, "maximum": 100000000},
              "max_steps_per_turn": {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 64, "description": "The model calls one turn may make; a turn that needs more fails with step_limit. Journaled with the loop: a restored session keeps it."}
            }
          }
        }
      },
      "ClientTool": {
        "type": "object",
        "additionalProperties": false,
        "required": ["name"],
        "description": "A tool the model may call and the client runs.",
        "properties": {
          "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
          "description": {"type": "string", "maxLength": 16384},
          "input_schema": {"type": "object", "description": "The tool's JSON Schema, at most 64 KiB."}
        }
      },
      "ToolCalls": {
        "type": "object",
        "required": ["loop_id", "turn_id", "calls"],
        "properties": {
          "loop_id": {"type": "string", "format": "uuid"},
          "turn_id": {"type": ["string", "null"], "format": "uuid"},
          "calls": {"type": "array", "items": {"type": "object", "required": ["tool_use_id", "name", "input", "waiting"], "properties": {"tool_use_id": {"type": "string"}, "name": {"type": "string"}, "input": {}, "waiting": {"type": "boolean"}}}}
        }
      },
      "ToolResultsRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["results"],
        "properties": {
          "results": {"type": "array", "minItems": 1, "maxItems": 128, "items": {"type": "object", "additionalProperties": false, "required": ["tool_use_id", "content"], "properties": {"tool_use_id": {"type": "string", "minLength": 1, "maxLength": 256}, "content": {"type": "string"}, "is_error": {"type": "boolean", "default": false}}}}
        }
      },
      "ToolResultsAnswered": {
        "type": "object",
        "required": ["answered"],
        "properties": {"answered": {"type": "array", "items": {"type": "string"}}}
      },
      "CreatedSession": {
        "type": "object",
        "required": ["session_id", "loops"],
        "properties": {
          "session_id": {"type": "string", "format": "uuid"},
          "loops": {"type": "array", "items": {"type": "string", "format": "uuid"}}
        }
      },
      "SessionList": {
        "type": "object",
        "required": ["sessions"],
        "properties": {
          "sessions": {"type": "array", "items": {"type": "object", "required": ["session_id", "in_memory"], "properties": {"session_id": {"type": "string", "format": "uuid"}, "in_memory": {"type": "boolean"}}}}
        }
      },
      "Session": {
        "type": "object",
        "required": ["session_id", "active_loop", "faulted", "loops"],
        "properties": {
          "session_id": {"type": "string", "format": "uuid"},
          "active_loop": {"type": ["string", "null"], "format": "uuid"},
          "faulted": {"type": "boolean"},
          "loops": {"type": "array", "items": {"$ref": "#/components/schemas/LoopSummary"}}
        }
      },
      "LoopSummary": {
        "type": "object",
        "required": ["loop_id", "status", "history_messages", "queued_inputs", "compacting"],
        "properties": {
          "loop_id": {"type": "string", "format": "uuid"},
          "status": {"$ref": "#/components/schemas/LoopStatus"},
          "history_messages": {"type": "integer", "minimum": 0},
          "queued_inputs": {"type": "integer", "minimum": 0},
          "compacting": {"type": "boolean"}
        }
      },
      "LoopStatus": {"type": "string", "enum": ["idle", "running", "exited"]},
      "InputRequest": {
        "type": "object",
        "additionalProperties": false,
        "required": ["text"],
        "properties": {"text": {"type": "string", "minLength": 1}, "origin": {"type": "string", "enum": ["direct", "delegate_request", "subagent_result"], "description": "Who the input is from; absent: direct. A delegate request runs as a turn of its own."}}
      },
      "CommandAccepted": {
        "type": "object",
        "required": ["command_id"],
        "properties": {"command_id": {"type": "string", "format": "uuid"}}
      },
      "CommandStatus": {
        "type": "object",
        "required": ["command_id", "session_id", "status"],
        "properties": {
          "command_id": {"type": "string", "format": "uuid"},
          "session_id": {"type": "string", "format": "uuid"},
          "status": {"type": "string", "enum": ["answered", "pending"]},
          "reply": {"$ref": "#/components/schemas/Event"}
        }
      },
      "TextDelta": {
        "type": "object",
        "description": "The data of a text_delta frame: a piece of a loop's answer as the model streams it, in order; the turn is null when the server did not see the turn start (one a restore resumed).",
        "required": ["loop_id", "turn_id", "text"],
        "properties": {
          "loop_id": {"type": "string", "format": "uuid"},
          "turn_id": {"type": ["string", "null"], "format": "uuid"},
          "text": {"type": "string"}
        }
      },
      "Event": {
        "type": "object",
        "description": "An event as the journal encodes it (docs/events.md): its type, its payload version and its members.",
        "required": ["type", "v"],
        "properties": {"type": {"type": "string"}, "v": {"type": "integer", "minimum": 1}}
      },
      "Message": {
        "type": "object",
        "description": "A message in the content codec (docs/content.md).",
        "required": ["role"],
        "properties": {"role": {"type": "string", "enum": ["user", "assistant", "system", "tool"]}}
      },
      "History": {
        "type": "object",
        "required": ["loop_id", "derived_prefix", "messages", "message_ids", "pinned", "masked", "undoable", "deferred_pins", "proposal"],
        "properties": {
          "loop_id": {"type": "string", "format": "uuid"},
          "derived_prefix": {"type": "integer", "minimum": 0},
          "messages": {"type": "array", "items": {"$ref": "#/components/schemas/Message"}},
          "message_ids": {"type": "array", "items": {"type": "string", "format": "uuid"}, "description": "The messages' ids, parallel to messages."},
          "pinned": {"type": "array", "items": {"type": "string", "format": "uuid"}},
          "masked": {"type": "array", "items": {"type": "string", "format": "uuid"}, "description": "The masked tool outputs' ids; GET masked/{message} shows an original."},
          "undoable": {"type": "integer", "minimum": 0, "description": "How many compactions and maskings an undo can still revert."},
          "deferred_pins": {"type": "integer", "minimum": 0, "description": "Pin and unpin requests waiting for the running compaction to end (docs/pins.md); each is answered once applied."},
          "proposal": {"description": "The CompactionProposed event waiting for approve or discard, or null.", "oneOf": [{"type": "null"}, {"type": "object"}]}
        }
      },
      "Context": {
        "type": "object",
        "required": ["loop_id", "derived_prefix", "status", "history_messages", "queued_inputs", "compacting", "pressure", "measurement", "categories", "estimates", "window", "compactor", "policy"],
        "properties": {
          "loop_id": {"type": "string", "format": "uuid"},
          "derived_prefix": {"type": "integer", "minimum": 0},
          "status": {"$ref": "#/components/schemas/LoopStatus"},
          "history_messages": {"type": "integer", "minimum": 0},
          "queued_inputs": {"type": "integer", "minimum": 0},
          "compacting": {"type": "boolean"},
          "pressure": {"type": "string"},
          "measurement": {
            "oneOf": [
              {"type": "null"},
              {"type": "object", "required": ["input_tokens", "input_limit"], "properties": {"input_tokens": {"type": "integer"}, "input_limit": {"type": "integer"}}}
            ]
          },
          "estimates": {
            "type": "object",
            "description": "Estimated tokens of each part of the context (4 bytes a token).",
            "required": ["system_prompt", "tools", "summary", "messages", "retained_tail"],
            "properties": {"system_prompt": {"type": "integer"}, "tools": {"type": "integer"}, "summary": {"type": "integer"}, "messages": {"type": "integer"}, "retained_tail": {"type": "integer"}}
          },
          "window": {
            "oneOf": [
              {"type": "null"},
              {"type": "object", "required": ["window_tokens", "input_limit", "reserved_output", "safety_margin", "free"], "properties": {"window_tokens": {"type": "integer"}, "input_limit": {"type": "integer"}, "reserved_output": {"type": "integer"}, "safety_margin": {"type": "integer"}, "free": {"type": "integer"}}}
            ]
          },
          "compactor": {"type": "string", "description": "The loop's compactor: offline, or model:NAME; empty when the journal that restored the loop recorded none."},
          "policy": {
            "oneOf": [
              {"type": "null"},
              {"type": "object", "required": ["automatic", "keep_recent_segments", "keep_recent_tokens"], "properties": {"automatic": {"type": "boolean"}, "keep_recent_segments": {"type": "integer"}, "keep_recent_tokens": {"type": "integer"}}}
            ]
          },
          "categories": {
            "type": "object",
            "additionalProperties": {"type": "object", "required": ["messages", "estimated_tokens"], "properties": {"messages": {"type": "integer"}, "estimated_tokens": {"type": "integer"}}}
          }
        }
      }
    }
  }
})openapi";

}  // namespace

std::string_view OpenApiDocument() {
  return kDocument;
}

}  // namespace harness::serve
