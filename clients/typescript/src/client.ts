// The client of `harness serve` (docs/serve.md): one Client per server, and EventStream, the
// resuming async iterator over a session's Server-Sent Events. Requests go through Node's global
// fetch; every answer is read with a cap, every request has a time limit and takes the caller's
// AbortSignal.

import {
  Aborted,
  CommandTimeout,
  ConnectionFailed,
  HarnessError,
  NoAnswer,
  ProtocolError,
  ResponseTooLarge,
  Timeout,
  errorFromResponse,
} from "./errors.js";
import {
  type Answer,
  type CompactConversationOptions,
  type CompactedConversation,
  type ConversationFormat,
  type CommandId,
  type CommandStatus,
  type Context,
  type CreatedSession,
  type HarnessEvent,
  type History,
  type JsonObject,
  type Lagged,
  type LoopSpec,
  type Session,
  type SessionSummary,
  type StreamEnd,
  type TextDelta,
  type ToolCall,
  compactConversationJson,
  isObject,
  loopSpecJson,
  parseCommandStatus,
  parseCompactedConversation,
  parseContext,
  parseCreatedSession,
  parseFrame,
  parseHistory,
  parseSession,
  parseSessionList,
  parseToolCalls,
} from "./models.js";
import { SseParser, concatBytes } from "./sse.js";

/** The server's longest command wait (GET /v1/commands/{id}?wait_ms=N, N at most 30000). */
export const MAX_WAIT_MS = 30_000;
// How long wait() pauses before asking again when the server answered "pending" well before the
// wait it was asked for: it does so when another server holds the session, and then only that
// server's journal writes change the answer.
const PENDING_PAUSE_MS = 500;

// What the client reads of an answer at most (each a Client option, to raise or lower it); one
// more byte is ResponseTooLarge and the connection is closed, so a hostile or broken server
// cannot make the client's memory grow without bound. The same caps as the Python client's.
//
// An event of the event stream: the server's largest is 16 MiB (a journal record's limit); its
// frame adds an id, a name and {"seq":N,"event":…} around it, which 4 KiB holds with room. One
// line holds at most as much (a data line may be the whole event).
export const MAX_EVENT_BYTES = 16 * 1024 * 1024 + 4 * 1024;
// An error body: the server's is {"error":{"kind","detail"[,"holder"]}} with a detail of at most
// a few KiB.
export const MAX_ERROR_BYTES = 64 * 1024;
// Any other answer, read whole before it is parsed: the largest the server sends are a loop's
// history and a session's export; 256 MiB holds either for any session short of an extreme one.
export const MAX_BODY_BYTES = 256 * 1024 * 1024;

/** The address `harness serve` listens on by default. */
export const DEFAULT_URL = "http://127.0.0.1:8420";

/** What every method takes besides its arguments. */
export interface CallOptions {
  /** Ends the request (or the stream, or the wait) when it fires: an Aborted error. */
  signal?: AbortSignal;
  /** Overrides the Client's timeoutMs for this request. */
  timeoutMs?: number;
}

export interface ClientOptions {
  /** Sent as `Authorization: Bearer …` on every request; never logged, never in an error. */
  token?: string;
  /** The limit of an ordinary request, connecting and reading its answer included (a command
   * wait adds its own wait to it; an event stream's limit covers its connecting only). */
  timeoutMs?: number;
  maxBodyBytes?: number;
  maxErrorBytes?: number;
  maxEventBytes?: number;
}

export interface EventsOptions {
  /** Keeps that loop's events and the session's own. */
  loop?: string;
  /** Keeps those event types. */
  kinds?: readonly string[];
  /** Resumes after that sequence. */
  lastEventId?: number;
  /** Replays the journal from that sequence, then goes on live. Neither: the live stream. */
  fromSeq?: number;
  /** Failed connection attempts in a row before ConnectionFailed (default 5). */
  maxReconnects?: number;
  /** Closes the stream when it fires: the pending next() rejects with Aborted. */
  signal?: AbortSignal;
  /** true: the stream also yields TextDelta, the loops' answers as the model streams them
   * (whatever `kinds` keeps; `loop` keeps that loop's). Default false: none. */
  textDeltas?: boolean;
}

/** The items of an event stream opened with `textDeltas: true`. */
export type StreamItem = HarnessEvent | Lagged | TextDelta;

function checkId(value: string, what: string): string {
  if (typeof value !== "string" || value === "" || value === "." || value === "..") {
    // A URL parser resolves "." and ".." (escaped or not) as path steps: never send one.
    throw new TypeError(`${what} is not an id`);
  }
  return value;
}

/** A path segment: every character that could end it or start another is escaped, so an id
 * from anywhere (a transcript, an event) can only ever name one segment. */
function segment(value: string, what = "an id"): string {
  return encodeURIComponent(checkId(value, what));
}

function checkCap(name: string, cap: number | undefined, fallback: number): number {
  if (cap === undefined) return fallback;
  if (!Number.isSafeInteger(cap) || cap < 1) throw new RangeError(`${name} is a number of bytes, at least 1`);
  return cap;
}

function parseJson(bytes: Uint8Array | string, status: number, what: string): unknown {
  try {
    return JSON.parse(typeof bytes === "string" ? bytes : new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw new ProtocolError("protocol", status, `${what} is not JSON`, { cause: e });
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** One request's abort: the caller's signal and a time limit, told apart when it fires. */
class Deadline {
  readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timedOut = false;
  private readonly caller: AbortSignal | undefined;
  private readonly onAbort = (): void => this.controller.abort(this.caller?.reason);

  constructor(caller: AbortSignal | undefined, timeoutMs: number | null) {
    this.caller = caller;
    if (caller?.aborted) this.controller.abort(caller.reason);
    else caller?.addEventListener("abort", this.onAbort, { once: true });
    if (timeoutMs !== null) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.controller.abort();
      }, timeoutMs);
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The time limit no longer applies (an event stream once connected). */
  stopTimer(): void {
    clearTimeout(this.timer);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.caller?.removeEventListener("abort", this.onAbort);
  }

  /** The error to throw for `e`, which a fetch or a read threw. */
  error(e: unknown, what: string, timeoutMs: number | null): HarnessError {
    if (e instanceof HarnessError) return e;
    if (this.timedOut) return new Timeout("timeout", null, `${what}: no answer within ${timeoutMs} ms`);
    if (this.caller?.aborted) {
      return new Aborted("aborted", null, `${what}: the caller aborted it`, { cause: this.caller.reason });
    }
    const reason = e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);
    return new ConnectionFailed("connection", null, `${what}: ${reason}`, { cause: e });
  }
}

/** Reads `response`'s body whole, or throws ResponseTooLarge (naming `what` and the `option`
 * that raises `limit`) once it is over `limit` bytes: at once when its Content-Length says so,
 * else as soon as a read passes it, and then the connection is cancelled. */
async function readCapped(response: Response, limit: number, option: string, what: string): Promise<Uint8Array> {
  const declared = response.headers.get("Content-Length");
  if (declared !== null && Number(declared) > limit) {
    await response.body?.cancel().catch(() => {});
    throw new ResponseTooLarge(what, limit, option, response.status);
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.length;
    if (length > limit) {
      await reader.cancel().catch(() => {});
      throw new ResponseTooLarge(what, limit, option, response.status);
    }
    parts.push(value);
  }
  return concatBytes(parts, length);
}

/**
 * A client of one `harness serve`.
 *
 * `baseUrl` is `http://HOST:PORT` (or https, optionally with a path prefix): the server the
 * caller names (DEFAULT_URL, the server's own default, when none), the only one this client
 * talks to (it follows no redirect and no lease holder's URL). Every method resolves with a
 * typed result or rejects with a HarnessError (errors.ts); an argument that cannot be sent (an
 * empty id, a cap below 1) throws a TypeError or RangeError at once. One Client may serve any
 * number of concurrent calls.
 */
export class Client {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  readonly maxErrorBytes: number;
  readonly maxEventBytes: number;
  // Private, so that neither util.inspect nor JSON.stringify of a Client shows it.
  readonly #token: string | null;
  readonly #origin: string;
  readonly #prefix: string;

  constructor(baseUrl: string = DEFAULT_URL, options: ClientOptions = {}) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new TypeError("baseUrl must be http://HOST:PORT or https://HOST:PORT");
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
      throw new TypeError("baseUrl must be http://HOST:PORT or https://HOST:PORT");
    }
    if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
      throw new TypeError("baseUrl has no query, fragment or credentials (give a token instead)");
    }
    const token = options.token;
    if (token !== undefined && (typeof token !== "string" || /[\r\n]/.test(token))) {
      throw new TypeError("a token is one line of text");
    }
    const timeoutMs = options.timeoutMs ?? 30_000;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError("timeoutMs is a positive number");
    this.#origin = url.origin;
    this.#prefix = url.pathname.replace(/\/+$/, "");
    this.baseUrl = this.#origin + this.#prefix;
    this.#token = token ?? null;
    this.timeoutMs = timeoutMs;
    this.maxBodyBytes = checkCap("maxBodyBytes", options.maxBodyBytes, MAX_BODY_BYTES);
    this.maxErrorBytes = checkCap("maxErrorBytes", options.maxErrorBytes, MAX_ERROR_BYTES);
    this.maxEventBytes = checkCap("maxEventBytes", options.maxEventBytes, MAX_EVENT_BYTES);
  }

  // ---- transport ----

  private target(path: string, query?: ReadonlyArray<[string, string]>): string {
    let target = this.#origin + this.#prefix + path;
    if (query !== undefined && query.length > 0) target += "?" + new URLSearchParams([...query]).toString();
    return target;
  }

  private headers(accept: string, extra?: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { Accept: accept };
    if (this.#token !== null) headers["Authorization"] = "Bearer " + this.#token;
    return { ...headers, ...extra };
  }

  /** Sends a request and returns its response (status below 400), or throws the typed error of
   * the response or of the transport. The caller disposes of the Deadline.
   * @internal */
  async open(
    method: string,
    target: string,
    body: string | null,
    headers: Record<string, string>,
    deadline: Deadline,
    timeoutMs: number | null,
    what: string,
  ): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(target, {
        method,
        headers,
        redirect: "manual",
        signal: deadline.signal,
        ...(body !== null ? { body } : {}),
      });
    } catch (e) {
      throw deadline.error(e, what, timeoutMs);
    }
    if (response.status >= 400) {
      let bytes: Uint8Array;
      try {
        const body = `the body of a ${response.status} answer`;
        bytes = await readCapped(response, this.maxErrorBytes, "maxErrorBytes", body);
      } catch (e) {
        throw deadline.error(e, what, timeoutMs);
      }
      throw errorFromResponse(response.status, bytes);
    }
    if (response.status >= 300) {
      await response.body?.cancel().catch(() => {});
      throw new ProtocolError("protocol", response.status, `${what}: a redirect, which the API never sends`);
    }
    return response;
  }

  private async call(
    method: string,
    path: string,
    payload: unknown,
    opts: CallOptions & { query?: ReadonlyArray<[string, string]>; accept?: string; extraMs?: number } = {},
  ): Promise<{ status: number; body: Uint8Array }> {
    let body: string | null = null;
    const extra: Record<string, string> = {};
    if (payload !== undefined) body = JSON.stringify(payload);
    else if (method === "POST" || method === "PUT") body = ""; // these always send a body
    if (body !== null) extra["Content-Type"] = "application/json";
    const timeoutMs = (opts.timeoutMs ?? this.timeoutMs) + (opts.extraMs ?? 0);
    const deadline = new Deadline(opts.signal, timeoutMs);
    const what = `${method} ${this.#prefix + path}`;
    try {
      const target = this.target(path, opts.query);
      const headers = this.headers(opts.accept ?? "application/json", extra);
      const response = await this.open(method, target, body, headers, deadline, timeoutMs, what);
      try {
        const answer = `the body of the answer to ${what}`;
        const bytes = await readCapped(response, this.maxBodyBytes, "maxBodyBytes", answer);
        return { status: response.status, body: bytes };
      } catch (e) {
        throw deadline.error(e, what, timeoutMs);
      }
    } finally {
      deadline.dispose();
    }
  }

  private async json(
    method: string,
    path: string,
    payload?: unknown,
    opts?: CallOptions & { query?: ReadonlyArray<[string, string]>; extraMs?: number },
  ): Promise<unknown> {
    const { status, body } = await this.call(method, path, payload, opts);
    return parseJson(body, status, `${method} ${path}: the body`);
  }

  private loopPath(sessionId: string, loopId: string): string {
    return `/v1/sessions/${segment(sessionId, "a session id")}/loops/${segment(loopId, "a loop id")}`;
  }

  private static member(obj: unknown, name: string): string {
    const value = isObject(obj) ? obj[name] : undefined;
    if (typeof value !== "string") throw new ProtocolError("protocol", 200, `$.${name} is not a string`);
    return value;
  }

  private static changed(obj: unknown): boolean {
    const value = isObject(obj) ? obj["changed"] : undefined;
    if (typeof value !== "boolean") throw new ProtocolError("protocol", 200, "$.changed is not a boolean");
    return value;
  }

  // ---- sessions ----

  /** POST /v1/sessions: one loop per model name or LoopSpec (1 to 16), the first active. */
  async createSession(
    loops: string | LoopSpec | ReadonlyArray<string | LoopSpec>,
    opts?: CallOptions,
  ): Promise<CreatedSession> {
    const list = typeof loops === "string" || !Array.isArray(loops) ? [loops as string | LoopSpec] : loops;
    const specs = list.map((loop) => loopSpecJson(typeof loop === "string" ? { model: loop } : loop));
    return parseCreatedSession(await this.json("POST", "/v1/sessions", { loops: specs }, opts));
  }

  /** GET /v1/sessions: every session of the journal. */
  async listSessions(opts?: CallOptions): Promise<SessionSummary[]> {
    return parseSessionList(await this.json("GET", "/v1/sessions", undefined, opts));
  }

  /** GET /v1/sessions/{id} (restoring the session from the journal when needed). */
  async getSession(sessionId: string, opts?: CallOptions): Promise<Session> {
    return parseSession(await this.json("GET", `/v1/sessions/${segment(sessionId, "a session id")}`, undefined, opts));
  }

  /** DELETE /v1/sessions/{id}: ends every loop and drops the session from the server's memory;
   * the journal keeps it. */
  async deleteSession(sessionId: string, opts?: CallOptions): Promise<void> {
    await this.call("DELETE", `/v1/sessions/${segment(sessionId, "a session id")}`, undefined, opts);
  }

  /** GET /v1/sessions/{id}/export: the journal's records of the session, in order, each as
   * `harness journal show --json` writes it. */
  async export(sessionId: string, opts?: CallOptions): Promise<JsonObject[]> {
    const path = `/v1/sessions/${segment(sessionId, "a session id")}/export`;
    const { body } = await this.call("GET", path, undefined, { ...opts, accept: "application/x-ndjson" });
    const records: JsonObject[] = [];
    let start = 0;
    let line = 0;
    while (start < body.length) {
      let end = body.indexOf(0x0a, start);
      if (end < 0) end = body.length;
      line++;
      if (end > start) {
        const record = parseJson(body.subarray(start, end), 200, `export line ${line}`);
        if (!isObject(record)) throw new ProtocolError("protocol", 200, `export line ${line} is not an object`);
        records.push(record);
      }
      start = end + 1;
    }
    return records;
  }

  /** GET /v1/openapi.json: the API as an OpenAPI 3.1 document. */
  async openApi(opts?: CallOptions): Promise<JsonObject> {
    const doc = await this.json("GET", "/v1/openapi.json", undefined, opts);
    if (!isObject(doc)) throw new ProtocolError("protocol", 200, "the OpenAPI document is not an object");
    return doc;
  }

  // ---- conversations the client holds ----

  /** POST /v1/compact: one compaction of `conversation`, which the caller holds, in `format`
   * (docs/serve.md "Compacting a conversation the client holds"). Resolves with the
   * replacement in the same format: the retained elements as sent, the summary written fresh.
   * A rejected compaction is CompactionRejected (its `reason`), a conversation the server
   * cannot read a BadRequest that names the element, its JSONPath and the rule. `timeoutMs`
   * (default the client's) bounds the wait for the answer, a model compactor's call included. */
  async compactConversation(
    format: ConversationFormat,
    conversation: readonly unknown[],
    options: CompactConversationOptions = {},
    opts?: CallOptions,
  ): Promise<CompactedConversation> {
    if (!Array.isArray(conversation)) throw new TypeError("conversation is an array of the format's elements");
    const payload = compactConversationJson(format, conversation, options);
    return parseCompactedConversation(await this.json("POST", "/v1/compact", payload, opts));
  }

  // ---- loops ----

  /** POST …/input: the user's text to a loop. Resolves with the command id once its intent is
   * durable; wait() gets its reply, ask() the model's answer. */
  async submitInput(sessionId: string, loopId: string, text: string, opts?: CallOptions): Promise<CommandId> {
    const obj = await this.json("POST", this.loopPath(sessionId, loopId) + "/input", { text }, opts);
    return { commandId: Client.member(obj, "command_id"), sessionId };
  }

  /** POST …/compact: asks the loop for a compaction, with `instructions` for the summarizer
   * (docs/compact-focus.md) and, with `preview`, a proposal that waits for approve() or
   * discard() (docs/preview.md; it shows in history().proposal). */
  async compact(
    sessionId: string,
    loopId: string,
    args: { instructions?: string; preview?: boolean } = {},
    opts?: CallOptions,
  ): Promise<CommandId> {
    const body: JsonObject = {};
    if (args.instructions !== undefined) body["instructions"] = args.instructions;
    if (args.preview === true) body["preview"] = true;
    const payload = Object.keys(body).length > 0 ? body : undefined;
    const obj = await this.json("POST", this.loopPath(sessionId, loopId) + "/compact", payload, opts);
    return { commandId: Client.member(obj, "command_id"), sessionId };
  }

  /** PUT …/pins/{message}: no compaction summarizes the message (docs/pins.md). Resolves with
   * whether anything changed (false: it was pinned already). */
  async pin(sessionId: string, loopId: string, messageId: string, opts?: CallOptions): Promise<boolean> {
    const path = this.loopPath(sessionId, loopId) + "/pins/" + segment(messageId, "a message id");
    return Client.changed(await this.json("PUT", path, undefined, opts));
  }

  /** DELETE …/pins/{message}. Resolves with whether anything changed. */
  async unpin(sessionId: string, loopId: string, messageId: string, opts?: CallOptions): Promise<boolean> {
    const path = this.loopPath(sessionId, loopId) + "/pins/" + segment(messageId, "a message id");
    return Client.changed(await this.json("DELETE", path, undefined, opts));
  }

  /** POST …/undo: reverts the latest compaction or masking (docs/undo.md). Resolves with the
   * HistoryReverted event's id; NothingToUndo, LoopBusy or UndoRefused otherwise. */
  async undo(sessionId: string, loopId: string, opts?: CallOptions): Promise<string> {
    const obj = await this.json("POST", this.loopPath(sessionId, loopId) + "/undo", undefined, opts);
    return Client.member(obj, "event_id");
  }

  /** POST …/mask: old tool output becomes stubs (docs/masking.md). Resolves with the
   * ToolOutputsMasked event's id; NothingToMask or LoopBusy otherwise. */
  async mask(sessionId: string, loopId: string, opts?: CallOptions): Promise<string> {
    const obj = await this.json("POST", this.loopPath(sessionId, loopId) + "/mask", undefined, opts);
    return Client.member(obj, "event_id");
  }

  /** Puts back the original of masked tool output `messageId` (DELETE …/masked/{message}), or
   * of every one (POST …/unmask, when `messageId` is undefined). Resolves with the
   * ToolOutputsUnmasked event's id; NotMasked or MaskRefused otherwise. */
  async unmask(sessionId: string, loopId: string, messageId?: string, opts?: CallOptions): Promise<string> {
    const loop = this.loopPath(sessionId, loopId);
    const obj =
      messageId === undefined
        ? await this.json("POST", loop + "/unmask", undefined, opts)
        : await this.json("DELETE", loop + "/masked/" + segment(messageId, "a message id"), undefined, opts);
    return Client.member(obj, "event_id");
  }

  /** GET …/masked/{message}: the original tool result a stub replaced (docs/content.md). */
  async maskedOriginal(sessionId: string, loopId: string, messageId: string, opts?: CallOptions): Promise<JsonObject> {
    const path = this.loopPath(sessionId, loopId) + "/masked/" + segment(messageId, "a message id");
    const obj = await this.json("GET", path, undefined, opts);
    const message = isObject(obj) ? obj["message"] : undefined;
    if (!isObject(message)) throw new ProtocolError("protocol", 200, "$.message is not an object");
    return message;
  }

  /** POST …/proposals/{attempt}/approve: commits the proposal. Resolves with its terminal
   * event's id; NoProposal when none of that attempt waits. */
  async approve(sessionId: string, loopId: string, attemptId: string, opts?: CallOptions): Promise<string> {
    const path = this.loopPath(sessionId, loopId) + "/proposals/" + segment(attemptId, "an attempt id") + "/approve";
    return Client.member(await this.json("POST", path, undefined, opts), "terminal_event_id");
  }

  /** POST …/proposals/{attempt}/discard: rejects the proposal; the history stays. */
  async discard(sessionId: string, loopId: string, attemptId: string, opts?: CallOptions): Promise<string> {
    const path = this.loopPath(sessionId, loopId) + "/proposals/" + segment(attemptId, "an attempt id") + "/discard";
    return Client.member(await this.json("POST", path, undefined, opts), "terminal_event_id");
  }

  /** POST …/interrupt: done when accepted (what it ended shows in the events); the server
   * does not keep its id for wait(). */
  async interrupt(sessionId: string, loopId: string, opts?: CallOptions): Promise<string> {
    const obj = await this.json("POST", this.loopPath(sessionId, loopId) + "/interrupt", undefined, opts);
    return Client.member(obj, "command_id");
  }

  /** GET …/history. */
  async history(sessionId: string, loopId: string, opts?: CallOptions): Promise<History> {
    return parseHistory(await this.json("GET", this.loopPath(sessionId, loopId) + "/history", undefined, opts));
  }

  /** GET …/context. */
  async context(sessionId: string, loopId: string, opts?: CallOptions): Promise<Context> {
    const obj = await this.json("GET", this.loopPath(sessionId, loopId) + "/context", undefined, opts);
    return parseContext(obj);
  }

  // ---- client tools ----

  /** GET …/tool_calls: the calls of the loop's client tools that wait for a result. */
  async toolCalls(sessionId: string, loopId: string, opts?: CallOptions): Promise<ToolCall[]> {
    return parseToolCalls(await this.json("GET", this.loopPath(sessionId, loopId) + "/tool_calls", undefined, opts));
  }

  /** POST …/tool_results: answers calls, all or none. Resolves with the ids answered. */
  async toolResults(
    sessionId: string,
    loopId: string,
    results: ReadonlyArray<{ toolUseId: string; content: string; isError?: boolean }>,
    opts?: CallOptions,
  ): Promise<string[]> {
    const payload = {
      results: results.map((r) => ({ tool_use_id: r.toolUseId, content: r.content, is_error: r.isError ?? false })),
    };
    const obj = await this.json("POST", this.loopPath(sessionId, loopId) + "/tool_results", payload, opts);
    const answered = isObject(obj) ? obj["answered"] : undefined;
    if (!Array.isArray(answered) || !answered.every((a) => typeof a === "string")) {
      throw new ProtocolError("protocol", 200, "$.answered is not a list of ids");
    }
    return answered as string[];
  }

  /** Answers one call of a client tool (toolResults with one result). */
  async answerTool(
    sessionId: string,
    loopId: string,
    toolUseId: string,
    content: string,
    isError = false,
    opts?: CallOptions,
  ): Promise<void> {
    await this.toolResults(sessionId, loopId, [{ toolUseId, content, isError }], opts);
  }

  // ---- commands ----

  /** The command's state, waiting up to `waitMs` for its reply. A CommandId asks the session's
   * form, GET /v1/sessions/{session}/commands/{id}, which the server answers from the journal
   * too; a bare id asks GET /v1/commands/{id}, which knows only what this server accepted. */
  async command(commandId: CommandId | string, waitMs = 0, opts?: CallOptions): Promise<CommandStatus> {
    if (!Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > MAX_WAIT_MS) {
      throw new RangeError(`waitMs is an integer from 0 to ${MAX_WAIT_MS}`);
    }
    const path =
      typeof commandId === "string"
        ? `/v1/commands/${segment(commandId, "a command id")}`
        : `/v1/sessions/${segment(commandId.sessionId, "a session id")}` +
          `/commands/${segment(commandId.commandId, "a command id")}`;
    const query: Array<[string, string]> = [["wait_ms", String(waitMs)]];
    const obj = await this.json("GET", path, undefined, { ...opts, query, extraMs: waitMs });
    return parseCommandStatus(obj);
  }

  /** The command's reply: the server's bounded wait (at most 30 s a request), asked again until
   * it answers or `timeoutMs` (default 60 s) passed: then CommandTimeout, and waiting again may
   * still get the reply. When the server answers pending long before the wait it was asked for
   * (another server holds the session), it pauses half a second before asking again. */
  async wait(commandId: CommandId | string, opts: CallOptions = {}): Promise<CommandStatus> {
    const limit = opts.timeoutMs ?? 60_000;
    const deadline = performance.now() + limit;
    const id = typeof commandId === "string" ? commandId : commandId.commandId;
    for (;;) {
      const remaining = deadline - performance.now();
      const waitMs = Math.max(0, Math.min(MAX_WAIT_MS, Math.floor(remaining)));
      const asked = performance.now();
      const status = await this.command(commandId, waitMs, opts.signal !== undefined ? { signal: opts.signal } : {});
      if (status.answered) return status;
      const now = performance.now();
      if (now >= deadline) throw new CommandTimeout(id, limit);
      if (now - asked < waitMs / 2) await sleep(Math.min(PENDING_PAUSE_MS, deadline - now), opts.signal);
      if (opts.signal?.aborted) {
        const detail = `waiting for command ${id}: the caller aborted it`;
        throw new Aborted("aborted", null, detail, { cause: opts.signal.reason });
      }
    }
  }

  /** Sends `text` to the loop and resolves with the model's answer when its turn ends: the text
   * of the turn's last assistant message (askStream, read to its end). A refused or cancelled
   * input, a failed or interrupted turn, or a stream that ends first is a NoAnswer; no answer
   * within `timeoutMs` (default 60 s) a Timeout (the turn goes on: interrupt() ends it). */
  async ask(sessionId: string, loopId: string, text: string, opts: CallOptions = {}): Promise<Answer> {
    const stream = this.askStream(sessionId, loopId, text, opts);
    try {
      for await (const piece of stream) if (typeof piece !== "string") return piece;
    } finally {
      await stream.close();
    }
    throw new ProtocolError("protocol", null, "the answer stream ended without an answer");
  }

  /** Sends `text` to the loop at once and returns an AnswerStream: an async iterator over the
   * answer's text as the model streams it (strings, from the text deltas), then the Answer
   * itself, its last item. It fails as ask() does; `timeoutMs` (default 60 s) bounds the whole
   * answer. */
  askStream(sessionId: string, loopId: string, text: string, opts: CallOptions = {}): AnswerStream {
    return new AnswerStream(this, sessionId, loopId, text, opts);
  }

  // ---- events ----

  /** GET /v1/sessions/{id}/events as an async iterator of HarnessEvent (and Lagged, and with
   * `textDeltas` TextDelta): see EventStream. */
  events(sessionId: string, opts: EventsOptions & { textDeltas: true }): EventStream<StreamItem>;
  events(sessionId: string, opts?: EventsOptions & { textDeltas?: false }): EventStream;
  events(sessionId: string, opts?: EventsOptions): EventStream<StreamItem>;
  events(sessionId: string, opts: EventsOptions = {}): EventStream<StreamItem> {
    return new EventStream<StreamItem>(this, `/v1/sessions/${segment(sessionId, "a session id")}/events`, opts, {
      target: (path, query) => this.target(path, query),
      headers: (extra) => this.headers("text/event-stream", extra),
    });
  }
}

// What an answer's stream keeps: the loop's events of these types (and its text deltas).
const ANSWER_KINDS = [
  "InputRejected",
  "InputCancelled",
  "MessageCommitted",
  "TurnCompleted",
  "TurnFailed",
  "TurnInterrupted",
];

/**
 * The answer to one input, as Client.askStream returns it: an async iterator over the answer's
 * text as the model streams it (each item a string), then the Answer (the last item; `answer`
 * holds it too).
 *
 * - The loop's event stream (with text deltas) is open, the server subscribed, before the input
 *   is sent: no event of its turn can be missed. The input's MessageCommitted names the turn;
 *   that turn's deltas are yielded, its assistant messages kept, and its TurnCompleted ends the
 *   iteration with the Answer, whose text is the last assistant message's (whole even when
 *   deltas were lost to a dropped connection: the stream resumes after its last event, and
 *   deltas are never replayed). A model that does not stream yields the Answer alone.
 * - Fails as Client.ask: NoAnswer (a refused or cancelled input, a failed or interrupted turn,
 *   the session leaving the server's memory first), Timeout when `timeoutMs` passes first (the
 *   turn goes on), Aborted when the caller's signal fires; the stream is closed then.
 * - close() (or leaving a for-await loop) closes the stream; the input, once sent, stays. A
 *   stream neither read to its end nor closed holds its connection until `timeoutMs` passes.
 */
export class AnswerStream implements AsyncIterableIterator<string | Answer> {
  /** The Answer, once the turn completed. */
  answer: Answer | null = null;
  /** The input's command id, once it was sent. */
  commandId: CommandId | null = null;
  /** The turn's text deltas yielded so far. */
  deltas = 0;
  readonly #loopId: string;
  readonly #limit: number;
  readonly #deadline: Deadline;
  readonly #stream: EventStream<StreamItem>;
  readonly #sent: Promise<CommandId>;
  #turn: string | null = null;
  #last: JsonObject | null = null;
  #finished = false;

  constructor(client: Client, sessionId: string, loopId: string, text: string, opts: CallOptions) {
    this.#loopId = loopId;
    this.#limit = opts.timeoutMs ?? 60_000;
    this.#deadline = new Deadline(opts.signal, this.#limit);
    const signal = this.#deadline.signal;
    try {
      this.#stream = client.events(sessionId, { loop: loopId, kinds: ANSWER_KINDS, textDeltas: true, signal });
    } catch (e) {
      this.#deadline.dispose();
      throw e;
    }
    this.#sent = this.#stream.open().then(() => client.submitInput(sessionId, loopId, text, { signal }));
    // Its failure is next()'s to report; until then it is not an unhandled rejection.
    this.#sent.catch(() => {});
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async close(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    await this.#stream.close();
    this.#deadline.dispose();
  }

  async return(): Promise<IteratorResult<string | Answer>> {
    await this.close();
    return { done: true, value: undefined };
  }

  async next(): Promise<IteratorResult<string | Answer>> {
    if (this.#finished) return { done: true, value: undefined };
    try {
      const command = await this.#sent;
      this.commandId = command;
      for (;;) {
        const step = await this.#stream.next();
        if (step.done === true) {
          const reason = this.#stream.end?.reason ?? "no reason";
          const why = `the session left the server's memory before the turn ended (${reason})`;
          throw new NoAnswer("stream_ended", why, null);
        }
        const item = step.value;
        if (item.kind === "lagged") continue; // the stream resumes with nothing enduring missed
        if (item.kind === "text_delta") {
          if (this.#turn === null || item.turnId !== this.#turn || item.loopId !== this.#loopId) continue;
          this.deltas++;
          return { done: false, value: item.text };
        }
        const answer = this.#take(item, command);
        if (answer !== null) {
          this.answer = answer;
          await this.close();
          return { done: false, value: answer };
        }
      }
    } catch (e) {
      const error = this.#error(e);
      await this.close();
      throw error;
    }
  }

  /** Applies one event of the loop; the Answer once the turn completed, else null. */
  #take(item: HarnessEvent, command: CommandId): Answer | null {
    const data = item.data;
    const cause = isObject(data["cause"]) ? data["cause"]["command_id"] : undefined;
    if ((item.type === "InputRejected" || item.type === "InputCancelled") && cause === command.commandId) {
      const kind = item.type === "InputRejected" ? "input_rejected" : "input_cancelled";
      const how = kind === "input_rejected" ? "rejected" : "cancelled";
      throw new NoAnswer(kind, `the input was ${how} (reason ${String(data["reason"])})`, data);
    }
    if (item.type === "MessageCommitted") {
      const turn = data["turn_id"];
      if (this.#turn === null && data["input_command_id"] === command.commandId && typeof turn === "string") {
        this.#turn = turn;
      } else if (this.#turn !== null && data["turn_id"] === this.#turn) {
        const message = data["message"];
        if (isObject(message) && message["role"] === "assistant") this.#last = message;
      }
      return null;
    }
    if (this.#turn === null || data["turn_id"] !== this.#turn) return null;
    if (item.type === "TurnCompleted") {
      if (this.#last === null) throw new NoAnswer("turn_failed", "the turn ended without an assistant message", data);
      const text = textOf(this.#last);
      return { text, message: this.#last, turnId: this.#turn, commandId: command, deltas: this.deltas };
    }
    if (item.type === "TurnFailed") {
      const why = `${String(data["reason"])}: ${String(data["detail"] ?? "")}`;
      throw new NoAnswer("turn_failed", `the turn failed: ${why}`, data);
    }
    if (item.type === "TurnInterrupted") {
      const why = `the turn was interrupted (reason ${String(data["reason"])})`;
      throw new NoAnswer("turn_interrupted", why, data);
    }
    return null;
  }

  /** The error to throw for `e`: the stream and the input saw only the deadline's signal, so an
   * Aborted is the time limit or the caller's signal, told apart here. */
  #error(e: unknown): unknown {
    if (e instanceof HarnessError && !(e instanceof Aborted)) return e;
    const what = `an answer to the input to loop ${this.#loopId}`;
    const error = this.#deadline.error(e instanceof Aborted ? null : e, what, this.#limit);
    if (error instanceof Timeout) {
      return new Timeout("timeout", null, `no answer within ${this.#limit} ms (the turn goes on; interrupt() ends it)`);
    }
    return error;
  }
}

/** The text of a message: its text blocks, joined. */
function textOf(message: JsonObject): string {
  const blocks = Array.isArray(message["blocks"]) ? message["blocks"] : [];
  return blocks
    .filter((b): b is JsonObject => isObject(b) && b["type"] === "text" && typeof b["text"] === "string")
    .map((b) => b["text"] as string)
    .join("");
}

interface StreamTransport {
  target(path: string, query: ReadonlyArray<[string, string]>): string;
  headers(extra: Record<string, string>): Record<string, string>;
}

/**
 * An async iterator over a session's events that resumes across dropped connections.
 *
 * - Yields HarnessEvent in the server's order. `lastEventId` is the sequence of the last
 *   enduring event yielded (or the one the stream was started after).
 * - When the connection drops (an error, or the body ends without an `end` frame), the next
 *   next() reconnects with `Last-Event-ID: lastEventId`: the server replays from the next
 *   sequence, so no enduring event is missed or yielded twice. Ephemeral events (seq 0) live
 *   only on live streams; those published while disconnected are not replayed.
 * - Opened with `textDeltas: true` it also yields TextDelta, in the server's order among the
 *   events (a message's deltas before its MessageCommitted); deltas are never replayed, so those
 *   sent while disconnected are missed, and they move no `lastEventId`.
 * - A `lagged` frame is yielded as a Lagged object, then the stream resumes as after a drop.
 * - An `end` frame ends the iteration; `end` holds it.
 * - An HTTP refusal rejects next() with its HarnessError; a line or an event over the Client's
 *   maxEventBytes with ResponseTooLarge, and the stream is closed (reading again would meet it
 *   again). `maxReconnects` failed attempts in a row reject with ConnectionFailed.
 * - close() (or leaving a for-await loop) closes the connection.
 */
export class EventStream<Item extends StreamItem = HarnessEvent | Lagged> implements AsyncIterableIterator<Item> {
  lastEventId: number | null;
  end: StreamEnd | null = null;
  /** Connections opened after the first. */
  reconnects = 0;
  private readonly client: Client;
  private readonly path: string;
  private readonly loop: string | undefined;
  private readonly kinds: readonly string[] | undefined;
  private readonly fromSeq: number | undefined;
  private readonly maxReconnects: number;
  private readonly signal: AbortSignal | undefined;
  private readonly textDeltas: boolean;
  private readonly transport: StreamTransport;
  private deadline: Deadline | null = null;
  private reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  private parser: SseParser | null = null;
  private pending: Array<StreamItem | StreamEnd | HarnessError> = [];
  private connectedOnce = false;
  private failures = 0;
  private closed = false;

  constructor(client: Client, path: string, opts: EventsOptions, transport: StreamTransport) {
    this.client = client;
    this.path = path;
    this.loop = opts.loop;
    this.kinds = opts.kinds;
    this.fromSeq = opts.fromSeq;
    this.lastEventId = opts.lastEventId ?? null;
    this.maxReconnects = opts.maxReconnects ?? 5;
    this.signal = opts.signal;
    this.textDeltas = opts.textDeltas === true;
    this.transport = transport;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Connects now, if not connected: once it resolves the server has subscribed the stream, so
   * every event published afterwards reaches it. */
  async open(): Promise<void> {
    if (this.reader === null && !this.closed) await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.disconnect();
  }

  async return(): Promise<IteratorResult<Item>> {
    await this.close();
    return { done: true, value: undefined };
  }

  private async disconnect(): Promise<void> {
    const reader = this.reader;
    const deadline = this.deadline;
    this.reader = null;
    this.parser = null;
    this.pending = [];
    this.deadline = null;
    if (reader !== null) await reader.cancel().catch(() => {});
    deadline?.controller.abort();
    deadline?.dispose();
  }

  private async connect(): Promise<void> {
    const query: Array<[string, string]> = [];
    if (this.fromSeq !== undefined) query.push(["from", String(this.fromSeq)]);
    if (this.loop !== undefined) query.push(["loop", this.loop]);
    if (this.kinds !== undefined) query.push(["kind", this.kinds.join(",")]);
    if (this.textDeltas) query.push(["text_deltas", "true"]);
    const extra: Record<string, string> = {};
    if (this.lastEventId !== null && this.lastEventId > 0) {
      extra["Last-Event-ID"] = String(this.lastEventId);
    } else if (this.lastEventId === 0) {
      // After nothing (a Lagged before any enduring event): the journal from its start.
      const rest = query.filter(([k]) => k !== "from");
      query.length = 0;
      query.push(["from", "1"], ...rest);
    }
    const what = `GET ${this.path}`;
    for (;;) {
      const deadline = new Deadline(this.signal, this.client.timeoutMs);
      try {
        const target = this.transport.target(this.path, query);
        const headers = this.transport.headers(extra);
        const response = await this.client.open("GET", target, null, headers, deadline, this.client.timeoutMs, what);
        const type = response.headers.get("Content-Type") ?? "";
        if (!type.startsWith("text/event-stream") || response.body === null) {
          await response.body?.cancel().catch(() => {});
          deadline.dispose();
          throw new ProtocolError("protocol", response.status, "the events answer is not text/event-stream");
        }
        // Connected: an idle stream may wait for events as long as it likes.
        deadline.stopTimer();
        this.deadline = deadline;
        this.reader = response.body.getReader();
        this.parser = new SseParser(this.client.maxEventBytes);
        if (this.connectedOnce) this.reconnects++;
        this.connectedOnce = true;
        return;
      } catch (e) {
        deadline.dispose();
        if (!(e instanceof ConnectionFailed)) throw e;
        this.failures++;
        if (!this.connectedOnce || this.failures > this.maxReconnects) throw e;
        // The first retry is immediate; the server may be restarting after that.
        await sleep(Math.min(2000, 50 * 2 ** (this.failures - 1)), this.signal);
      }
    }
  }

  async next(): Promise<IteratorResult<Item>> {
    try {
      return await this.step();
    } catch (e) {
      await this.close();
      if (e instanceof HarnessError) throw e;
      const why = e instanceof Error ? e.message : String(e);
      throw new ConnectionFailed("connection", null, `the event stream: ${why}`, { cause: e });
    }
  }

  private async step(): Promise<IteratorResult<Item>> {
    for (;;) {
      if (this.closed || this.end !== null) return { done: true, value: undefined };
      const item = this.pending.shift();
      if (item !== undefined) {
        if (item instanceof HarnessError) throw item;
        if ("reason" in item) {
          this.end = item;
          await this.close();
          return { done: true, value: undefined };
        }
        if (item.kind === "lagged") {
          await this.disconnect();
          return { done: false, value: item as Item };
        }
        if (item.kind === "text_delta") {
          // Transient: it moves no resumption point. A stream that did not ask yields none.
          if (!this.textDeltas) continue;
          return { done: false, value: item as Item };
        }
        if (item.enduring) this.lastEventId = item.seq;
        return { done: false, value: item as Item };
      }
      if (this.reader === null) {
        if (this.connectedOnce && this.failures > this.maxReconnects) {
          throw new ConnectionFailed("connection", null, "the event stream keeps dropping");
        }
        await this.connect();
      }
      const reader = this.reader;
      const parser = this.parser;
      if (reader === null || parser === null) continue;
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (e) {
        if (this.signal?.aborted) {
          throw new Aborted("aborted", null, "the event stream: the caller aborted it", { cause: this.signal.reason });
        }
        chunk = { done: true, value: undefined }; // a drop: reconnect
      }
      if (chunk.done) {
        await this.disconnect();
        this.failures++;
        continue;
      }
      const frames = parser.push(chunk.value);
      if (frames.length > 0) this.failures = 0;
      for (const frame of frames) {
        const payload = parseJson(frame.data, 200, `a "${frame.name}" frame's data`);
        this.pending.push(parseFrame(frame.name, frame.id, payload));
      }
      // The frames before an error are yielded first; the error then ends the stream.
      if (parser.error !== null) this.pending.push(parser.error);
    }
  }
}
