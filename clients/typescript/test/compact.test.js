// compactConversation against the real `harness serve` (server.js): a conversation the client
// holds, compacted in each format and answered in the same format with the retained elements as
// sent; a stored one is a session of the journal; a rejection and a malformed conversation are
// typed errors. Against a node:http server on 127.0.0.1: answers of another shape.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { createServer } from "node:http";

import {
  BadRequest,
  Client,
  CompactionRejected,
  HarnessError,
  ProtocolError,
  errorFromResponse,
} from "../dist/index.js";
import { history, seeded } from "./helpers.js";
import { answers, startServer } from "./server.js";

// Keeps only the newest segment, so that a short conversation has something to summarize.
const OPTIONS = { keepRecentSegments: 1 };

const CHAT = [
  { role: "system", content: "You are a coding agent." },
  { role: "user", content: "Fix the failing test in src/net/client.cc." },
  { role: "assistant", content: "RetriesOn503 fails; the fake server closes early." },
  { role: "user", content: "Now make the retry delay configurable." },
  { role: "assistant", content: "Done: RetryPolicy::delay is a parameter." },
];
const RESPONSES = [
  { type: "message", role: "user", content: "Fix the failing test in src/net/client.cc." },
  { type: "function_call", call_id: "c1", name: "run", arguments: '{"command":"ctest"}' },
  { type: "function_call_output", call_id: "c1", output: "1 failed: RetriesOn503" },
  { type: "message", role: "user", content: "Now make the retry delay configurable." },
  {
    type: "message",
    role: "assistant",
    content: [{ type: "output_text", text: "Done: RetryPolicy::delay is a parameter." }],
  },
];
const ANTHROPIC = [
  { role: "user", content: "Fix the failing test in src/net/client.cc." },
  { role: "assistant", content: "RetriesOn503 fails; the fake server closes early." },
  { role: "user", content: "Now make the retry delay configurable." },
  { role: "assistant", content: [{ type: "text", text: "Done: RetryPolicy::delay is a parameter." }] },
];
const SYSTEM = "You are a coding agent.";

/** The summary's text in a provider's element, or in a harness message. */
function summaryText(element) {
  if (Array.isArray(element.blocks)) return element.blocks[0].text;
  return typeof element.content === "string" ? element.content : element.content[0].text;
}

describe("compactConversation against harness serve", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(answers("unused"));
    client = new Client(server.url);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.output());
  });

  test("each format comes back in that format with the retained elements as sent", async () => {
    const cases = [
      ["harness", history(3), undefined],
      ["openai", CHAT, undefined],
      ["openai-responses", RESPONSES, undefined],
      ["anthropic", ANTHROPIC, SYSTEM],
    ];
    for (const [format, conversation, system] of cases) {
      const options = system === undefined ? OPTIONS : { ...OPTIONS, system };
      const result = await client.compactConversation(format, conversation, options);
      assert.equal(result.format, format);
      assert.match(result.summary, /^<conversation_summary>/, format);
      assert.equal(result.sessionId, null);
      assert.equal(result.loopId, null);
      const report = result.report;
      assert.ok(report.messagesBefore >= 3, format);
      assert.ok(report.tokensAfter > 0 && report.inputLimit > report.tokensAfter, format);
      assert.ok(report.retained >= 1 && report.retainedVerbatim, format);
      assert.deepEqual([report.pinned, report.shortened], [0, 0], format);
      assert.equal(report.coverage === null || Number.isInteger(report.coverage.total), true, format);
      const kept = report.retainedElements;
      assert.ok(kept >= 1, format);
      // The retained elements are the ones sent; the summary is written fresh just before them.
      assert.deepEqual(result.messages.slice(-kept), conversation.slice(-kept), format);
      const head = result.messages.at(-kept - 1);
      assert.equal(head.role, "user", format);
      assert.match(summaryText(head), /^<conversation_summary>/, format);
      assert.ok(result.messages.length < conversation.length + 1, format);
      if (format === "openai") assert.deepEqual(result.messages[0], CHAT[0], "the system prompt stays first");
      assert.equal(result.system, system ?? null, format);
    }
    assert.deepEqual(await client.listSessions(), [], "nothing is stored without store");
  });

  test("a stored compaction is a session of the journal", async () => {
    const result = await client.compactConversation("openai", CHAT, { ...OPTIONS, store: true });
    assert.equal(typeof result.sessionId, "string");
    assert.equal(typeof result.loopId, "string");
    assert.deepEqual(
      (await client.listSessions()).map((s) => s.sessionId),
      [result.sessionId],
    );
    const stored = await client.history(result.sessionId, result.loopId);
    assert.equal(stored.derivedPrefix, 1);
    assert.equal(stored.messages.length, 1 + result.report.retained);
  });

  test("a rejection is a CompactionRejected with its reason, a malformed conversation a BadRequest", async () => {
    const sessions = (await client.listSessions()).length;
    // Two messages fit the retained tail whole: nothing to summarize.
    await assert.rejects(client.compactConversation("openai", CHAT.slice(1, 3)), (e) => {
      assert.ok(e instanceof CompactionRejected && e instanceof HarnessError, String(e));
      assert.deepEqual([e.kind, e.status], ["compaction_rejected", 422]);
      assert.equal(e.reason, "unavailable");
      assert.equal(e.reasonDetail, "history_fits_tail_target");
      assert.ok(e.detail.length > 0);
      return true;
    });
    await assert.rejects(
      client.compactConversation("openai", [{ role: "function", name: "f", content: "x" }], OPTIONS),
      (e) => {
        assert.ok(e instanceof BadRequest, String(e));
        assert.deepEqual([e.kind, e.status], ["invalid_request", 400]);
        assert.ok(e.detail.startsWith("element 0: $.messages[0]"), e.detail);
        return true;
      },
    );
    assert.equal((await client.listSessions()).length, sessions, "a refused compaction stores nothing");
    await assert.rejects(client.compactConversation("openai", "not an array"), TypeError);
  });
});

test("a compaction_rejected body without a reason is a CompactionRejected with null reasons", () => {
  const body = (error) => new TextEncoder().encode(JSON.stringify({ error }));
  const bare = errorFromResponse(422, body({ kind: "compaction_rejected", detail: "rejected" }));
  assert.ok(bare instanceof CompactionRejected);
  assert.deepEqual([bare.reason, bare.reasonDetail], [null, null]);
  // An unknown kind with status 422 takes the status's class; a reason of another type is null.
  const other = errorFromResponse(422, body({ kind: "something_new", detail: "d", reason: 7 }));
  assert.ok(other instanceof CompactionRejected);
  assert.deepEqual([other.kind, other.reason], ["something_new", null]);
});

/** `value` with one member somewhere in it dropped or replaced by a value of another type. */
function mutate(value, random) {
  const paths = [];
  const walk = (v, path) => {
    if (v !== null && typeof v === "object") {
      for (const key of Object.keys(v)) {
        paths.push([...path, key]);
        walk(v[key], [...path, key]);
      }
    }
  };
  walk(value, []);
  const copy = structuredClone(value);
  const path = paths[Math.floor(random() * paths.length)];
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key];
  const others = [null, -1, 1.5, "x", true, [], {}, 2 ** 60];
  const last = path.at(-1);
  if (random() < 0.3) delete parent[last];
  else parent[last] = others[Math.floor(random() * others.length)];
  return copy;
}

test("an answer of POST /v1/compact of another shape is a ProtocolError, never half a result (500 seeded)", async () => {
  const valid = {
    format: "openai",
    messages: [{ role: "user", content: "<conversation_summary>…" }],
    summary: "<conversation_summary>…",
    report: {
      messages_before: 5,
      tokens_before: 80,
      tokens_after: 40,
      input_limit: 9000,
      retained: 1,
      retained_elements: 1,
      retained_verbatim: true,
      pinned: 0,
      shortened: 0,
      repaired: 0,
      coverage: { found: 1, total: 1, missing: 0 },
    },
    session_id: null,
    loop_id: null,
  };
  let body = "";
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const client = new Client(`http://127.0.0.1:${server.address().port}`);
    body = JSON.stringify(valid);
    const whole = await client.compactConversation("openai", []);
    assert.equal(whole.report.coverage.total, 1);
    const random = seeded(4711);
    let refused = 0;
    for (let i = 0; i < 500; i++) {
      const answer = mutate(valid, random);
      body = JSON.stringify(answer);
      try {
        const result = await client.compactConversation("openai", []);
        // Accepted: then every member the type promises is of its type.
        assert.equal(typeof result.summary, "string", body);
        assert.ok(Array.isArray(result.messages), body);
        for (const [name, value] of Object.entries(result.report)) {
          if (name === "coverage" || name === "tokensBefore") continue;
          assert.ok(typeof value === (name === "retainedVerbatim" ? "boolean" : "number"), body);
        }
      } catch (e) {
        assert.ok(e instanceof ProtocolError, `${body}: ${e}`);
        refused++;
      }
    }
    assert.ok(refused > 250, `${refused} refused`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
