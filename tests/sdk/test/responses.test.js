// OpenAI Responses compaction through harness, with the official `openai` SDK unmodified:
// responses.compact, and responses.create with context_management compaction, streaming and
// not, against the llama-server upstream. The compacted items go back to the model and work.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import OpenAI from "openai";
import { stackFixture } from "./servers.js";

// A coding conversation of several requests, long enough that the offline compactor has old
// segments to summarize and a newest one to keep.
function conversation() {
  const items = [];
  const tasks = [
    "Fix the failing test in src/net/client.cc: RetriesOn503 fails after the refactor.",
    "Now make the retry delay configurable through RetryPolicy::delay.",
    "Add a unit test for a delay of zero in tests/net/retry_test.cc.",
    "Rename RetryPolicy::delay to RetryPolicy::initial_delay everywhere.",
  ];
  tasks.forEach((task, i) => {
    items.push({ type: "message", role: "user", content: task });
    items.push({ type: "function_call", call_id: `call_${i}`, name: "run", arguments: JSON.stringify({ command: "ctest -R Retry" }) });
    items.push({ type: "function_call_output", call_id: `call_${i}`, output: `test ${i}: 1 test failed: RetriesOn503 (src/net/client.cc:${120 + i})` });
    items.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: `Step ${i} done: the change is in src/net/client.cc and the test passes.` }] });
  });
  items.push({ type: "message", role: "user", content: "Summarize what changed in one line." });
  return items;
}

// The summary message harness writes first: readable text holding the summary document.
function summaryText(item) {
  assert.equal(item.type, "message");
  assert.equal(item.role, "user");
  const text = typeof item.content === "string" ? item.content : item.content.map((part) => part.text ?? "").join("");
  assert.match(text, /<conversation_summary>/);
  return text;
}

describe("responses compaction through harness serve --upstream", () => {
  const f = stackFixture();

  test("responses.compact answers readable items that responses.create takes back", async () => {
    const input = conversation();
    const compacted = await f.openai.responses.compact({ model: "tiny", input });
    assert.equal(compacted.object, "response.compaction");
    assert.match(compacted.id, /^cmp_/);
    assert.ok(compacted.output.length < input.length, `${compacted.output.length} items`);
    summaryText(compacted.output[0]);
    // The retained items are the conversation's last ones, exactly as sent.
    const retained = compacted.output.slice(1);
    assert.deepEqual(retained, input.slice(input.length - retained.length));
    assert.ok(compacted.usage.input_tokens > compacted.usage.output_tokens);
    // Journaled as a session of the server's journal, visible to the inspector.
    assert.ok(compacted.harness.session_id);
    const sessions = await (await fetch(`${f.stack.harness.url}/v1/sessions`)).json();
    assert.ok(JSON.stringify(sessions).includes(compacted.harness.session_id));
    // The compacted items are a conversation any model takes.
    const next = await f.openai.responses.create({
      model: "tiny",
      input: [...compacted.output, { type: "message", role: "user", content: "Go on." }],
      max_output_tokens: 8,
    });
    assert.equal(next.status, "completed");
    assert.ok(!f.stack.harness.output().includes(f.stack.key));
  });

  test("responses.compact of an unknown item type is refused in OpenAI's shape", async () => {
    await assert.rejects(
      f.openai.responses.compact({ model: "tiny", input: [{ type: "no_such_item", id: "x" }] }),
      (e) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.error?.type ?? e.type, "invalid_request_error");
        assert.match(e.message, /no_such_item|unknown|type/);
        return true;
      },
    );
  });

  test("under the threshold responses.create is forwarded as sent", async () => {
    const response = await f.openai.responses.create({
      model: "tiny",
      input: "Say hello.",
      max_output_tokens: 8,
      context_management: [{ type: "compaction", compact_threshold: 100000 }],
    });
    assert.equal(response.status, "completed");
    assert.ok(response.output.every((item) => item.type !== "compaction"));
  });

  test("over the threshold the input is compacted first and the compaction item leads the output", async () => {
    const before = await (await fetch(`${f.stack.harness.url}/v1/sessions`)).json();
    const input = conversation();
    const response = await f.openai.responses.create({
      model: "tiny",
      input,
      max_output_tokens: 8,
      context_management: [{ type: "compaction", compact_threshold: 200 }],
    });
    assert.equal(response.status, "completed");
    const item = response.output[0];
    assert.equal(item.type, "compaction");
    const carried = JSON.parse(item.encrypted_content); // readable
    assert.match(carried.summary, /<conversation_summary>/);
    assert.equal(response.output[1].type, "message");
    const afterList = await (await fetch(`${f.stack.harness.url}/v1/sessions`)).json();
    assert.ok(JSON.stringify(afterList).length > JSON.stringify(before).length, "a session was journaled");
    // The next turn, as a client loop sends it (everything so far, the output, a new request),
    // is served from the compaction: the upstream sees the summary, not the old items.
    const next = await f.openai.responses.create({
      model: "tiny",
      input: [...input, ...response.output, { type: "message", role: "user", content: "And then?" }],
      max_output_tokens: 8,
      context_management: [{ type: "compaction", compact_threshold: 100000 }],
    });
    assert.equal(next.status, "completed");
  });

  test("over the threshold with stream: true the compaction item comes first in the stream", async () => {
    const stream = await f.openai.responses.create({
      model: "tiny",
      input: conversation(),
      max_output_tokens: 8,
      stream: true,
      store: false,
      context_management: [{ type: "compaction", compact_threshold: 200 }],
    });
    const events = [];
    for await (const event of stream) events.push(event);
    assert.equal(events[0].type, "response.created");
    const added = events.find((e) => e.type === "response.output_item.added");
    assert.equal(added.item.type, "compaction");
    assert.equal(added.output_index, 0);
    const completed = events.at(-1);
    assert.equal(completed.type, "response.completed");
    assert.equal(completed.response.output[0].type, "compaction");
    assert.equal(completed.response.output[1].type, "message");
    // An upstream that numbers its output (llama-server does not) has it moved past the item.
    const text = events.filter((e) => e.type === "response.output_text.delta");
    assert.ok(text.length > 0);
    assert.ok(text.every((e) => e.output_index === undefined || e.output_index === 1));
  });

  test("the journal holds the compactions and never the caller's key", async () => {
    const files = readdirSync(f.stack.harness.dataDir, { recursive: true })
      .map((name) => path.join(f.stack.harness.dataDir, String(name)));
    let bytes = 0;
    for (const file of files) {
      let data;
      try {
        data = readFileSync(file);
      } catch {
        continue; // a directory
      }
      bytes += data.length;
      assert.ok(!data.includes(f.stack.key), `${file} holds the key`);
    }
    assert.ok(bytes > 0);
  });

  test("a compaction item harness did not write is refused in OpenAI's shape", async () => {
    await assert.rejects(
      f.openai.responses.create({
        model: "tiny",
        input: [{ type: "compaction", id: "cmp_0123", encrypted_content: "gAAAAB-opaque" }, { type: "message", role: "user", content: "Hi." }],
        context_management: [{ type: "compaction", compact_threshold: 1000 }],
      }),
      (e) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.code, "invalid_compaction_item");
        return true;
      },
    );
  });
});
