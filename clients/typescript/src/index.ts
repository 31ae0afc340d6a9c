// A client of `harness serve` (docs/serve.md) for Node.js 20 and later, with no runtime
// dependency: Node's global fetch and web streams. See README.md. Licensed under the Apache
// License 2.0, as harness is.

export {
  AnswerStream,
  Client,
  DEFAULT_URL,
  EventStream,
  MAX_BODY_BYTES,
  MAX_ERROR_BYTES,
  MAX_EVENT_BYTES,
  MAX_WAIT_MS,
} from "./client.js";
export type { CallOptions, ClientOptions, EventsOptions, StreamItem } from "./client.js";
export * from "./errors.js";
export type {
  Answer,
  Category,
  CommandId,
  CommandStatus,
  CompactConversationOptions,
  CompactedConversation,
  Context,
  ConversationFormat,
  ConversationReport,
  CreatedSession,
  EventJson,
  HarnessEvent,
  History,
  JsonObject,
  Lagged,
  LoopSpec,
  LoopState,
  Measurement,
  Session,
  SessionSummary,
  StreamEnd,
  TextDelta,
  ToolCall,
  ToolSpec,
} from "./models.js";
export { SseParser } from "./sse.js";
export type { Frame } from "./sse.js";
