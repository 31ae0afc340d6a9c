// Typed errors of the `harness serve` client.
//
// Every refusal of the server is {"error":{"kind":"…","detail":"…"}} with the HTTP status of its
// kind (docs/serve.md "Errors"); a lease_held one may also name the "holder". errorFromResponse
// turns one into the most specific class below: first by kind, then by status, else HarnessError
// itself. The detail is the server's text for a person: it is kept as data, never parsed or
// formatted into anything but a message. No message ever holds the client's token.

/** Any failure of a request or of a stream: `kind` is the server's error kind, or one of the
 * client's own ("connection", "protocol", "timeout", "aborted", "response_too_large", and the
 * kinds of NoAnswer); `status` the HTTP status (null when there was no answer); `detail` text for
 * a person. */
export class HarnessError extends Error {
  readonly kind: string;
  readonly status: number | null;
  readonly detail: string;

  constructor(kind: string, status: number | null, detail: string, options?: { cause?: unknown }) {
    super(status !== null ? `${kind} (${status}): ${detail}` : `${kind}: ${detail}`, options);
    this.kind = kind;
    this.status = status;
    this.detail = detail;
    // The class's own name in stack traces and util.inspect, for every subclass alike.
    this.name = new.target.name;
  }
}

/** 400: invalid_json, invalid_request, invalid_header, invalid_query, invalid_id,
 * unknown_model, invalid_argument. */
export class BadRequest extends HarnessError {}
/** 400 unknown_model: the request names a model the server was not configured with. */
export class UnknownModel extends BadRequest {}
/** 401: the bearer token is missing or wrong. */
export class Unauthorized extends HarnessError {}
/** 403: origin_not_allowed and any other refusal of who asks rather than what. */
export class Forbidden extends HarnessError {}
/** 403 origin_not_allowed: a change whose Origin is neither the server's own nor allowed. */
export class OriginNotAllowed extends Forbidden {}
/** 404: not_found (no such route) and the more specific kinds below. */
export class NotFound extends HarnessError {}
/** 404 session_not_found. */
export class SessionNotFound extends NotFound {}
/** 404 loop_not_found. */
export class LoopNotFound extends NotFound {}
/** 404 command_not_found: an unknown id, or one older than the server remembers. */
export class CommandNotFound extends NotFound {}
/** 404 tool_call_not_found: no call of a client tool with that id waits in the loop. */
export class ToolCallNotFound extends NotFound {}
/** 404 message_not_found: no message of the loop's history has that id. */
export class MessageNotFound extends NotFound {}
/** 404 no_proposal: no proposal of that attempt waits (none was made, decided, or expired). */
export class NoProposal extends NotFound {}
/** 404 not_masked: that message is not a masked tool output (or nothing is masked). */
export class NotMasked extends NotFound {}
/** 405. */
export class MethodNotAllowed extends HarnessError {}
/** 409: loop_exited, compaction_unsupported, session_faulted, session_suspended,
 * restore_refused, and the more specific kinds below. */
export class Conflict extends HarnessError {}

/** The server holding a session's lease, as a lease_held refusal names it. */
export interface LeaseHolder {
  owner?: unknown;
  lease_expires_at_ms?: unknown;
  url?: unknown;
}

/** 409 lease_held: another writer holds the session's lease. When the server named the holder,
 * `holderOwner` is its lease owner id, `leaseExpiresAtMs` when its lease ends unless renewed
 * (Unix milliseconds on the journal's clock) and `holderUrl` the URL it advertises (its
 * --advertise-url); each is null when the server did not give it. The client does not follow it:
 * going there is the caller's choice. */
export class LeaseHeld extends Conflict {
  readonly holderOwner: string | null;
  readonly leaseExpiresAtMs: number | null;
  readonly holderUrl: string | null;

  constructor(kind: string, status: number | null, detail: string, holder?: unknown) {
    super(kind, status, detail);
    const h = isObject(holder) ? (holder as LeaseHolder) : {};
    this.holderOwner = typeof h.owner === "string" ? h.owner : null;
    this.leaseExpiresAtMs = Number.isSafeInteger(h.lease_expires_at_ms) ? (h.lease_expires_at_ms as number) : null;
    this.holderUrl = typeof h.url === "string" ? h.url : null;
  }
}

/** 409 loop_exited: the loop takes no more work. */
export class LoopExited extends Conflict {}
/** 409 tool_call_answered: the call already has its result. */
export class ToolCallAnswered extends Conflict {}
/** 409 not_pinnable: the summary, or one pin more than a loop may hold. */
export class NotPinnable extends Conflict {}
/** 409 nothing_to_undo: no compaction or masking left to undo. */
export class NothingToUndo extends Conflict {}
/** 409 loop_busy: a turn or a compaction runs; undo once the loop is idle. */
export class LoopBusy extends Conflict {}
/** 409 undo_refused: the history before the compaction would not fit. */
export class UndoRefused extends Conflict {}
/** 409 nothing_to_mask: no old tool output is large enough and still unmasked. */
export class NothingToMask extends Conflict {}
/** 409 mask_refused: the changed history could not be counted, or would not fit. */
export class MaskRefused extends Conflict {}
/** 422 compaction_rejected: POST /v1/compact ran and the compaction was rejected; nothing was
 * installed (a stored session keeps the conversation as given). `reason` is the rejection's
 * ("unavailable", "invalid_summary", "coverage_insufficient", "interrupted", …) and
 * `reasonDetail` the kind of the runtime's detail ("history_fits_tail_target", …); each is null
 * when the server did not give it. */
export class CompactionRejected extends HarnessError {
  readonly reason: string | null;
  readonly reasonDetail: string | null;

  constructor(kind: string, status: number | null, detail: string, reason?: unknown, reasonDetail?: unknown) {
    super(kind, status, detail);
    this.reason = typeof reason === "string" ? reason : null;
    this.reasonDetail = typeof reasonDetail === "string" ? reasonDetail : null;
  }
}
/** 413: the body is over the server's --max-body-bytes. */
export class TooLarge extends HarnessError {}
/** 415 unsupported_media_type. */
export class UnsupportedMediaType extends HarnessError {}
/** 421 host_not_allowed: a server without a token refused a Host that is not loopback. */
export class HostNotAllowed extends HarnessError {}
/** 500: journal, internal. */
export class ServerError extends HarnessError {}
/** 503: shutting_down, too_many_sessions. */
export class Unavailable extends HarnessError {}
/** 503 shutting_down: the server is stopping. */
export class ShuttingDown extends Unavailable {}

/** No answer: the server could not be reached or the connection broke (kind "connection"). */
export class ConnectionFailed extends HarnessError {}
/** An answer the API does not define (kind "protocol"): not JSON, not UTF-8, another shape. */
export class ProtocolError extends HarnessError {}

/** A time limit passed (kind "timeout", status null): a request's `timeoutMs`, or the limit of
 * `wait` or `ask` (the subclasses). */
export class Timeout extends HarnessError {}

/** `Client.wait`'s limit passed while the command was still pending; waiting again may still
 * get its reply. */
export class CommandTimeout extends Timeout {
  readonly commandId: string;

  constructor(commandId: string, timeoutMs: number) {
    super("timeout", null, `command ${commandId} still pending after ${timeoutMs} ms`);
    this.commandId = commandId;
  }
}

/** The caller's AbortSignal fired (kind "aborted"); `cause` is the signal's reason. */
export class Aborted extends HarnessError {}

/** An answer larger than the client reads (kind "response_too_large", `status` the answer's
 * HTTP status): a line or an event of an event stream, an error body, or any other body, over
 * its cap (the Client options maxEventBytes, maxErrorBytes, maxBodyBytes). `what` says which,
 * `limit` is the cap in bytes. The client read at most the cap (and one read more) and closed
 * the connection; the message names the option that raises it. */
export class ResponseTooLarge extends HarnessError {
  readonly what: string;
  readonly limit: number;

  constructor(what: string, limit: number, option: string, status: number | null) {
    super(
      "response_too_large",
      status,
      `${what} is over the client's limit of ${formatBytes(limit)} (the Client option ${option}` +
        " raises it); the connection is closed",
    );
    this.what = what;
    this.limit = limit;
  }
}

/** `Client.ask` got no answer because the turn did not end with one: kind "input_rejected" or
 * "input_cancelled" (the input's reply), "turn_failed" or "turn_interrupted" (the turn's end), or
 * "stream_ended" (the session left the server's memory first). `event` is the event that said
 * so (its JSON), null for "stream_ended". */
export class NoAnswer extends HarnessError {
  readonly event: Record<string, unknown> | null;

  constructor(kind: string, detail: string, event: Record<string, unknown> | null) {
    super(kind, null, detail);
    this.event = event;
  }
}

/** A size as a person reads it and exactly: "16 MiB + 4 KiB", "64 KiB", "100 bytes". */
export function formatBytes(n: number): string {
  const parts: string[] = [];
  for (const [unit, size] of [
    ["MiB", 1 << 20],
    ["KiB", 1 << 10],
    ["bytes", 1],
  ] as const) {
    if (n >= size || (size === 1 && parts.length === 0)) {
      const count = Math.floor(n / size);
      parts.push(`${count} ${size === 1 && count === 1 ? "byte" : unit}`);
      n %= size;
    }
  }
  return parts.join(" + ");
}

type ErrorClass = new (kind: string, status: number | null, detail: string) => HarnessError;

const BY_KIND: Record<string, ErrorClass> = {
  unknown_model: UnknownModel,
  session_not_found: SessionNotFound,
  loop_not_found: LoopNotFound,
  command_not_found: CommandNotFound,
  lease_held: LeaseHeld,
  loop_exited: LoopExited,
  tool_call_not_found: ToolCallNotFound,
  tool_call_answered: ToolCallAnswered,
  shutting_down: ShuttingDown,
  message_not_found: MessageNotFound,
  no_proposal: NoProposal,
  not_pinnable: NotPinnable,
  nothing_to_undo: NothingToUndo,
  loop_busy: LoopBusy,
  undo_refused: UndoRefused,
  nothing_to_mask: NothingToMask,
  not_masked: NotMasked,
  mask_refused: MaskRefused,
  origin_not_allowed: OriginNotAllowed,
  unsupported_media_type: UnsupportedMediaType,
  host_not_allowed: HostNotAllowed,
  compaction_rejected: CompactionRejected,
};

const BY_STATUS: Record<number, ErrorClass> = {
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
};

// A detail quoted from a body that is not the API's error: enough to recognise, never the lot.
const MAX_QUOTED = 200;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The typed error of a response with a status of 400 or more, from its (already capped) body. */
export function errorFromResponse(status: number, body: Uint8Array): HarnessError {
  let kind = `http_${status}`;
  let detail = new TextDecoder().decode(body.subarray(0, MAX_QUOTED));
  let holder: unknown;
  let reason: unknown;
  let reasonDetail: unknown;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
    const error = isObject(parsed) ? parsed["error"] : undefined;
    if (isObject(error) && typeof error["kind"] === "string") {
      kind = error["kind"];
      detail = typeof error["detail"] === "string" ? error["detail"] : "";
      holder = error["holder"];
      reason = error["reason"];
      reasonDetail = error["reason_detail"];
    }
  } catch {
    // Not the API's error (a proxy's page, say): keep the status and a few bytes.
  }
  const cls = BY_KIND[kind] ?? BY_STATUS[status] ?? HarnessError;
  if (cls === LeaseHeld) return new LeaseHeld(kind, status, detail, holder);
  if (cls === CompactionRejected) return new CompactionRejected(kind, status, detail, reason, reasonDetail);
  return new cls(kind, status, detail);
}
