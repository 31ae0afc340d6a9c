// The typed objects of the `harness serve` API (docs/serve.md).
//
// Each parse function checks the shape it reads and throws ProtocolError on anything else, so a
// caller never meets a half-filled object. Text from the server (ids, event bodies, messages) is
// kept as data: strings and the plain objects JSON.parse makes. Results use camelCase names;
// what the server sends inside them (messages, events, replies) keeps the API's own names.

import { ProtocolError } from "./errors.js";

/** A JSON object as JSON.parse makes it. */
export type JsonObject = { [key: string]: unknown };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shapeError(where: string, what: string, status: number | null = 200): ProtocolError {
  return new ProtocolError("protocol", status, `${where} ${what}`);
}

function member(obj: unknown, name: string, where: string): unknown {
  if (!isObject(obj)) throw shapeError(where, "is not a JSON object");
  if (!(name in obj)) throw shapeError(where, `has no member "${name}"`);
  return obj[name];
}

export function str(obj: unknown, name: string, where = "$"): string {
  const value = member(obj, name, where);
  if (typeof value !== "string") throw shapeError(`${where}.${name}`, "is not a string");
  return value;
}

export function int(obj: unknown, name: string, where = "$"): number {
  const value = member(obj, name, where);
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw shapeError(`${where}.${name}`, "is not an integer");
  }
  return value;
}

export function bool(obj: unknown, name: string, where = "$"): boolean {
  const value = member(obj, name, where);
  if (typeof value !== "boolean") throw shapeError(`${where}.${name}`, "is not a boolean");
  return value;
}

export function array(obj: unknown, name: string, where = "$"): unknown[] {
  const value = member(obj, name, where);
  if (!Array.isArray(value)) throw shapeError(`${where}.${name}`, "is not an array");
  return value;
}

export function object(obj: unknown, name: string, where = "$"): JsonObject {
  const value = member(obj, name, where);
  if (!isObject(value)) throw shapeError(`${where}.${name}`, "is not an object");
  return value;
}

function strings(obj: unknown, name: string, where = "$"): string[] {
  const values = array(obj, name, where);
  if (!values.every((v) => typeof v === "string")) {
    throw shapeError(`${where}.${name}`, "is not an array of strings");
  }
  return values as string[];
}

function nullable<T>(obj: unknown, name: string, read: (value: unknown) => T, where = "$"): T | null {
  if (!isObject(obj)) throw shapeError(where, "is not a JSON object");
  const value = obj[name];
  return value === undefined || value === null ? null : read(value);
}

/** A tool that runs on the client (docs/serve.md "Client tools"). */
export interface ToolSpec {
  /** 1 to 64 characters of A-Z a-z 0-9 _ - */
  name: string;
  description?: string;
  /** A JSON Schema object; absent: {"type":"object"}. */
  inputSchema?: JsonObject;
}

/** One loop of POST /v1/sessions. Only `model` (a name the server was configured with) is
 * required; an absent member leaves it to the server's default. */
export interface LoopSpec {
  model: string;
  /** "offline" (the extractive compactor, the default here) or a configured model's name. */
  compactor?: string;
  systemPrompt?: string;
  /** Automatic compaction (the server's default: on). */
  automatic?: boolean;
  /** "first" (old tool output is masked before compacting) or "off" (docs/masking.md). */
  masking?: string;
  /** "off", "report", "repair" or "enforce" (docs/compactors.md). */
  coverage?: string;
  keepRecentSegments?: number;
  keepRecentTokens?: number;
  tools?: readonly ToolSpec[];
  /** The loop's initial history: messages in the harness transcript codec (docs/content.md);
   * empty leaves the member out. */
  history?: readonly JsonObject[];
}

/** The JSON of a LoopSpec, as POST /v1/sessions takes it. */
export function loopSpecJson(spec: LoopSpec): JsonObject {
  const out: JsonObject = { model: spec.model, compactor: spec.compactor ?? "offline" };
  if (spec.systemPrompt !== undefined) out["system_prompt"] = spec.systemPrompt;
  const policy: JsonObject = {};
  if (spec.automatic !== undefined) policy["automatic"] = spec.automatic;
  if (spec.masking !== undefined) policy["masking"] = spec.masking;
  if (spec.coverage !== undefined) policy["coverage"] = spec.coverage;
  if (spec.keepRecentSegments !== undefined) policy["keep_recent_segments"] = spec.keepRecentSegments;
  if (spec.keepRecentTokens !== undefined) policy["keep_recent_tokens"] = spec.keepRecentTokens;
  if (Object.keys(policy).length > 0) out["policy"] = policy;
  if (spec.tools !== undefined && spec.tools.length > 0) {
    out["tools"] = spec.tools.map((tool) => {
      const t: JsonObject = { name: tool.name };
      if (tool.description !== undefined) t["description"] = tool.description;
      if (tool.inputSchema !== undefined) t["input_schema"] = tool.inputSchema;
      return t;
    });
  }
  if (spec.history !== undefined && spec.history.length > 0) out["history"] = [...spec.history];
  return out;
}

/** 201 of POST /v1/sessions: the session and its loops' ids, the first the active one. */
export interface CreatedSession {
  sessionId: string;
  loops: string[];
  activeLoop: string;
}

export function parseCreatedSession(obj: unknown): CreatedSession {
  const loops = strings(obj, "loops");
  const first = loops[0];
  if (first === undefined) throw shapeError("$.loops", "is empty");
  return { sessionId: str(obj, "session_id"), loops, activeLoop: first };
}

/** One entry of GET /v1/sessions. */
export interface SessionSummary {
  sessionId: string;
  inMemory: boolean;
}

export function parseSessionList(obj: unknown): SessionSummary[] {
  return array(obj, "sessions").map((s, i) => ({
    sessionId: str(s, "session_id", `$.sessions[${i}]`),
    inMemory: bool(s, "in_memory", `$.sessions[${i}]`),
  }));
}

export interface LoopState {
  loopId: string;
  /** "idle", "running" or "exited" */
  status: string;
  historyMessages: number;
  queuedInputs: number;
  compacting: boolean;
}

/** GET /v1/sessions/{id}. */
export interface Session {
  sessionId: string;
  activeLoop: string | null;
  faulted: boolean;
  loops: LoopState[];
}

export function parseSession(obj: unknown): Session {
  return {
    sessionId: str(obj, "session_id"),
    activeLoop: nullable(obj, "active_loop", (v) => {
      if (typeof v !== "string") throw shapeError("$.active_loop", "is not a string");
      return v;
    }),
    faulted: bool(obj, "faulted"),
    loops: array(obj, "loops").map((loop, i) => {
      const where = `$.loops[${i}]`;
      return {
        loopId: str(loop, "loop_id", where),
        status: str(loop, "status", where),
        historyMessages: int(loop, "history_messages", where),
        queuedInputs: int(loop, "queued_inputs", where),
        compacting: bool(loop, "compacting", where),
      };
    }),
  };
}

/** GET …/loops/{loop}/history: the messages in the content codec (docs/content.md). */
export interface History {
  loopId: string;
  /** 1 when the first message is a compaction's summary. */
  derivedPrefix: number;
  messages: JsonObject[];
  /** The messages' ids, parallel to `messages`. */
  messageIds: string[];
  pinned: string[];
  /** How many compactions and maskings an undo can still revert (docs/undo.md). */
  undoable: number;
  /** The CompactionProposed event waiting for a decision, or null (docs/preview.md). */
  proposal: JsonObject | null;
  /** The masked tool outputs' ids (docs/masking.md). */
  masked: string[];
  /** Pin changes sent while a compaction ran or a proposal waited (docs/pins.md). */
  deferredPins: number;
}

export function parseHistory(obj: unknown): History {
  const messages = array(obj, "messages");
  if (!messages.every(isObject)) throw shapeError("$.messages", "is not an array of objects");
  return {
    loopId: str(obj, "loop_id"),
    derivedPrefix: int(obj, "derived_prefix"),
    messages: messages as JsonObject[],
    messageIds: strings(obj, "message_ids"),
    pinned: strings(obj, "pinned"),
    undoable: int(obj, "undoable"),
    proposal: nullable(obj, "proposal", (v) => {
      if (!isObject(v)) throw shapeError("$.proposal", "is neither an object nor null");
      return v;
    }),
    masked: strings(obj, "masked"),
    deferredPins: int(obj, "deferred_pins"),
  };
}

export interface Measurement {
  inputTokens: number;
  inputLimit: number;
}

export interface Category {
  messages: number;
  estimatedTokens: number;
}

/** GET …/loops/{loop}/context: the latest measurement (null before the first) and, per category
 * ("summary", "user", "assistant", "tool"), the messages and their estimate. `raw` is the whole
 * answer, for the members this type does not name (estimates, window, compactor, policy). */
export interface Context {
  loopId: string;
  derivedPrefix: number;
  status: string;
  historyMessages: number;
  queuedInputs: number;
  compacting: boolean;
  pressure: string;
  measurement: Measurement | null;
  categories: Record<string, Category>;
  raw: JsonObject;
}

export function parseContext(obj: unknown): Context {
  const categories: Record<string, Category> = {};
  for (const [name, c] of Object.entries(object(obj, "categories"))) {
    const where = `$.categories.${name}`;
    categories[name] = { messages: int(c, "messages", where), estimatedTokens: int(c, "estimated_tokens", where) };
  }
  return {
    loopId: str(obj, "loop_id"),
    derivedPrefix: int(obj, "derived_prefix"),
    status: str(obj, "status"),
    historyMessages: int(obj, "history_messages"),
    queuedInputs: int(obj, "queued_inputs"),
    compacting: bool(obj, "compacting"),
    pressure: str(obj, "pressure"),
    measurement: nullable(obj, "measurement", (m) => ({
      inputTokens: int(m, "input_tokens", "$.measurement"),
      inputLimit: int(m, "input_limit", "$.measurement"),
    })),
    categories,
    raw: obj as JsonObject,
  };
}

/** A command's id as submitInput and compact return it, with its session's id, so that wait
 * and command ask the session's form of the lookup (GET /v1/sessions/{id}/commands/{command}),
 * which the server answers from the session's journal too: after a restart, or on another
 * server over the same journal. */
export interface CommandId {
  commandId: string;
  sessionId: string;
}

/** GET /v1/commands/{id} (or the session's form): "answered" with `reply`, the reply event's
 * JSON (CompactWaiterResolved or CompactWaiterRejected, InputAccepted, InputRejected or
 * InputCancelled), or "pending" with `reply` null. */
export interface CommandStatus {
  commandId: string;
  sessionId: string;
  status: string;
  answered: boolean;
  reply: JsonObject | null;
  /** The reply event's type, e.g. "CompactWaiterResolved"; null while pending. */
  replyType: string | null;
}

export function parseCommandStatus(obj: unknown): CommandStatus {
  const status = str(obj, "status");
  const answered = status === "answered";
  const reply = answered ? object(obj, "reply") : null;
  const type = reply !== null ? reply["type"] : null;
  return {
    commandId: str(obj, "command_id"),
    sessionId: str(obj, "session_id"),
    status,
    answered,
    reply,
    replyType: typeof type === "string" ? type : null,
  };
}

/** A call of a client tool that waits for its result (GET …/tool_calls). `waiting` is true for
 * the call whose wait has begun (a loop runs a message's calls one at a time). */
export interface ToolCall {
  toolUseId: string;
  name: string;
  input: unknown;
  waiting: boolean;
  turnId: string;
}

export function parseToolCalls(obj: unknown): ToolCall[] {
  const calls = array(obj, "calls");
  const turn = nullable(obj, "turn_id", (v) => {
    if (typeof v !== "string") throw shapeError("$.turn_id", "is not a string");
    return v;
  });
  return calls.map((call, i) => {
    const where = `$.calls[${i}]`;
    if (!isObject(call) || !("input" in call) || turn === null) throw shapeError(where, "is not a tool call");
    return {
      toolUseId: str(call, "tool_use_id", where),
      name: str(call, "name", where),
      input: call["input"],
      waiting: bool(call, "waiting", where),
      turnId: turn,
    };
  });
}

/** An event's JSON (include/harness/event/json.h): an enduring event's durable encoding. */
export interface EventJson extends JsonObject {
  type: string;
}

/** One event of a stream: `seq` is its journal sequence (0 for an ephemeral event, which only
 * live streams carry), `type` its type name, `data` the event's JSON. */
export interface HarnessEvent {
  kind: "event";
  seq: number;
  type: string;
  data: EventJson;
  /** Whether the journal holds it (seq is not 0). */
  enduring: boolean;
}

/** The server ended the stream because the client fell behind: `lastSeq` is the last event it
 * delivered. The iterator yields this, then reconnects from the last event it yielded, so
 * nothing is missed; a caller that cannot keep up may stop there instead. */
export interface Lagged {
  kind: "lagged";
  lastSeq: number;
}

/** The server ended the stream because the session left its memory: `reason` "hub_closed"
 * (deleted, or the server stopping) or "idle_released". The iterator stops. */
export interface StreamEnd {
  reason: string;
  lastSeq: number;
}

/** A piece of a loop's answer as the model streams it: a `text_delta` frame of a stream opened
 * with `textDeltas: true` (docs/serve.md "Text deltas"). Never journaled and never replayed: the
 * assistant's MessageCommitted holds the whole text. `turnId` is null for a turn the server did
 * not see start (one a restore resumed). */
export interface TextDelta {
  kind: "text_delta";
  loopId: string;
  turnId: string | null;
  text: string;
}

/** What `Client.ask` resolves with (and `Client.askStream` yields last): the text of the turn's
 * last assistant message, that message, its turn, the input command's id, and how many text
 * deltas of the turn arrived (0 when the model does not stream). */
export interface Answer {
  text: string;
  message: JsonObject;
  turnId: string;
  commandId: CommandId;
  deltas: number;
}

/** The shapes POST /v1/compact reads and answers: the harness transcript codec
 * (docs/content.md), Chat Completions, Responses, Anthropic Messages. */
export type ConversationFormat = "harness" | "openai" | "openai-responses" | "anthropic";

/** What `Client.compactConversation` sends besides the conversation; an absent member leaves it
 * to the server's default (docs/serve.md "Compacting a conversation the client holds"). */
export interface CompactConversationOptions {
  /** Anthropic's system prompt, a string or text blocks ("anthropic" only). */
  system?: unknown;
  /** A configured model whose window, counter and policy the compaction takes ("offline" by
   * default). */
  model?: string;
  /** "offline" (the extractive compactor, the default) or a configured model's name. */
  compactor?: string;
  contextWindow?: number;
  maxOutputTokens?: number;
  keepRecentSegments?: number;
  keepRecentTokens?: number;
  maxSummaryTokens?: number;
  /** What the summary should favour (docs/compact-focus.md). */
  instructions?: string;
  /** "off", "report", "repair" or "enforce". */
  coverage?: string;
  /** Indexes of elements (harness: of messages) kept after the summary (docs/pins.md). */
  pins?: readonly number[];
  /** true: the compaction is a session of the server's journal (default false, in memory). */
  store?: boolean;
}

/** The body of POST /v1/compact for `conversation` in `format`. */
export function compactConversationJson(
  format: ConversationFormat,
  conversation: readonly unknown[],
  options: CompactConversationOptions,
): JsonObject {
  const out: JsonObject = { format };
  out[format === "openai-responses" ? "input" : "messages"] = [...conversation];
  if (options.system !== undefined) out["system"] = options.system;
  const named: Array<[string, unknown]> = [
    ["model", options.model],
    ["compactor", options.compactor],
    ["context_window", options.contextWindow],
    ["max_output_tokens", options.maxOutputTokens],
    ["keep_recent_segments", options.keepRecentSegments],
    ["keep_recent_tokens", options.keepRecentTokens],
    ["max_summary_tokens", options.maxSummaryTokens],
    ["instructions", options.instructions],
    ["coverage", options.coverage],
    ["pins", options.pins === undefined ? undefined : [...options.pins]],
  ];
  const set = named.filter(([, value]) => value !== undefined);
  if (set.length > 0) out["options"] = Object.fromEntries(set);
  if (options.store === true) out["store"] = true;
  return out;
}

/** What a POST /v1/compact changed: the messages before, the tokens before (null when not
 * measured) and after, the input limit, the retained tail's messages and the elements written
 * after the summary (`retainedVerbatim` false when the tail was shortened and written fresh),
 * the pinned, shortened and repaired counts, and coverage when it is on. */
export interface ConversationReport {
  messagesBefore: number;
  tokensBefore: number | null;
  tokensAfter: number;
  inputLimit: number;
  retained: number;
  retainedElements: number;
  retainedVerbatim: boolean;
  pinned: number;
  shortened: number;
  repaired: number;
  coverage: { found: number; total: number; missing: number } | null;
}

/** The answer of POST /v1/compact: the replacement conversation in the request's format (its
 * `messages`, or the `input` items for "openai-responses": the leading system elements and the
 * retained elements as sent, the summary written fresh), Anthropic's `system` as sent (null
 * otherwise), the summary's text, the report, and with `store` the session and loop in the
 * server's journal (null without). */
export interface CompactedConversation {
  format: string;
  messages: unknown[];
  system: unknown;
  summary: string;
  report: ConversationReport;
  sessionId: string | null;
  loopId: string | null;
}

function optionalString(obj: unknown, name: string, where = "$"): string | null {
  return nullable(obj, name, (v) => {
    if (typeof v !== "string") throw shapeError(`${where}.${name}`, "is not a string");
    return v;
  });
}

export function parseCompactedConversation(obj: unknown): CompactedConversation {
  const format = str(obj, "format");
  const report = object(obj, "report");
  const where = "$.report";
  const coverage = nullable(report, "coverage", (c) => ({
    found: int(c, "found", `${where}.coverage`),
    total: int(c, "total", `${where}.coverage`),
    missing: int(c, "missing", `${where}.coverage`),
  }), where);
  return {
    format,
    messages: array(obj, format === "openai-responses" ? "input" : "messages"),
    system: isObject(obj) && obj["system"] !== undefined ? obj["system"] : null,
    summary: str(obj, "summary"),
    report: {
      messagesBefore: int(report, "messages_before", where),
      tokensBefore: nullable(report, "tokens_before", () => int(report, "tokens_before", where), where),
      tokensAfter: int(report, "tokens_after", where),
      inputLimit: int(report, "input_limit", where),
      retained: int(report, "retained", where),
      retainedElements: int(report, "retained_elements", where),
      retainedVerbatim: bool(report, "retained_verbatim", where),
      pinned: int(report, "pinned", where),
      shortened: int(report, "shortened", where),
      repaired: int(report, "repaired", where),
      coverage,
    },
    sessionId: optionalString(obj, "session_id"),
    loopId: optionalString(obj, "loop_id"),
  };
}

function seqOf(payload: unknown, name: string): number {
  const value = isObject(payload) ? payload[name] : undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw shapeError(`a frame's ${name}`, "is not a sequence");
  }
  return value;
}

/** A frame of the stream turned into what it means: an event, a text delta, a lag, or the
 * stream's end. */
export function parseFrame(
  name: string,
  frameId: string | null,
  payload: unknown,
): HarnessEvent | TextDelta | Lagged | StreamEnd {
  if (name === "text_delta") {
    // Transient: the server never gives one an id, and a resumption must not start after one.
    if (frameId !== null) throw shapeError("a text_delta frame", "has an id");
    return {
      kind: "text_delta",
      loopId: str(payload, "loop_id", "data"),
      turnId: optionalString(payload, "turn_id", "data"),
      text: str(payload, "text", "data"),
    };
  }
  if (name === "lagged") return { kind: "lagged", lastSeq: seqOf(payload, "last_seq") };
  if (name === "end") {
    const reason = isObject(payload) ? payload["reason"] : undefined;
    if (typeof reason !== "string") throw shapeError("an end frame", "has no reason");
    return { reason, lastSeq: seqOf(payload, "last_seq") };
  }
  const seq = int(payload, "seq", "data");
  const event = object(payload, "event", "data");
  if (str(event, "type", "data.event") !== name) throw shapeError("an event frame's name", "is not its event's type");
  if (seq < 0 || (frameId === null) !== (seq === 0) || (frameId !== null && frameId !== String(seq))) {
    throw shapeError("an event frame's id", "is not its sequence");
  }
  return { kind: "event", seq, type: name, data: event as EventJson, enduring: seq !== 0 };
}
