// POST /v1/messages with Anthropic's compaction edit (compact_20260112) through the official
// `@anthropic-ai/sdk`, unmodified, against `harness serve --upstream` in front of the local
// llama-server: a long conversation gets a compaction block with a summary a person can read,
// sending it back works and the content before it is dropped, streaming puts the block's events
// first, pause_after_compaction answers the block alone, and a block harness did not write is
// refused as Anthropic refuses a bad request. The caller's key passes to the upstream and is
// never written anywhere.

import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { stackFixture } from "./servers.js";

const BETAS = ["compact-2026-01-12"];
const FAR = 1_000_000; // a trigger no test conversation reaches

function edit(trigger, extra = {}) {
  return { edits: [{ type: "compact_20260112", trigger: { type: "input_tokens", value: trigger }, ...extra }] };
}

// A conversation of several requests, long enough to cross a trigger of 200 tokens.
function longConversation() {
  const turns = [
    ["The build of the billing service fails on the CI runner with a linker error.", "The linker cannot find libpq; the runner image lacks the PostgreSQL client library."],
    ["Install it in the image, then run the billing tests again.", "Installed libpq-dev in ci/Dockerfile; 212 tests pass, 3 fail in invoice_rounding_test.cc."],
    ["Why do the three rounding tests fail?", "They expect half-even rounding; the code rounds half up in money.cc line 88."],
    ["Switch money.cc to half-even rounding and keep the public API unchanged.", "Done: Round() uses half-even; the three tests pass and nothing else changed."],
  ];
  const messages = [];
  for (const [question, answer] of turns) {
    messages.push({ role: "user", content: question });
    messages.push({ role: "assistant", content: answer });
  }
  messages.push({ role: "user", content: "Now write the release note for this change." });
  return messages;
}

// Every file under `dir`, read as bytes: the journal is in it.
function filesUnder(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) out.push(...filesUnder(file));
    else out.push(readFileSync(file));
  }
  return out;
}

describe("messages: Anthropic's compaction through harness serve --upstream", () => {
  const f = stackFixture();
  const client = () => f.client(Anthropic);

  test("under the trigger the upstream answers and no compaction block comes back", async () => {
    const message = await client().beta.messages.create({
      model: "tiny", max_tokens: 8, betas: BETAS,
      messages: [{ role: "user", content: "Say hello." }],
      context_management: edit(FAR),
    });
    assert.equal(message.type, "message");
    assert.equal(message.role, "assistant");
    assert.ok(!message.content.some((block) => block.type === "compaction"));
  });

  test("a long conversation gets a compaction block first; sent back, the content before it is dropped", async () => {
    const history = longConversation();
    const first = await client().beta.messages.create({
      model: "tiny", max_tokens: 8, betas: BETAS, messages: history, context_management: edit(200),
    });
    assert.equal(first.content[0].type, "compaction", JSON.stringify(first.content));
    const summary = first.content[0].content;
    assert.match(summary, /^<conversation_summary>/);
    assert.match(summary, /billing|money\.cc|libpq/); // a summary of this conversation, readable
    assert.equal(typeof first.content[0].encrypted_content, "string");
    assert.ok(["end_turn", "max_tokens", "stop_sequence"].includes(first.stop_reason), first.stop_reason);

    // The next request carries the whole history, the answer as it came (block first) and a new
    // question, as Anthropic's documentation says; the upstream gets the compacted conversation.
    const next = [...history, { role: "assistant", content: first.content }, { role: "user", content: "Thanks. Is anything left to do?" }];
    const resumed = await client().beta.messages.create({
      model: "tiny", max_tokens: 8, betas: BETAS, messages: next, context_management: edit(FAR),
    });
    assert.ok(!resumed.content.some((block) => block.type === "compaction"));
    // The same conversation without the block: the upstream reads it all, so it counts more.
    const answerText = first.content.filter((block) => block.type === "text").map((block) => block.text).join("");
    const whole = [...history, { role: "assistant", content: answerText || "…" }, { role: "user", content: "Thanks. Is anything left to do?" }];
    const uncompacted = await client().messages.create({ model: "tiny", max_tokens: 8, messages: whole });
    assert.ok(resumed.usage.input_tokens < uncompacted.usage.input_tokens,
      `resumed ${resumed.usage.input_tokens} tokens, whole ${uncompacted.usage.input_tokens}`);
  });

  test("stream: true sends the compaction block's events before the upstream's", async () => {
    const stream = await client().beta.messages.create({
      model: "tiny", max_tokens: 8, betas: BETAS, messages: longConversation(), context_management: edit(200), stream: true,
    });
    const events = [];
    for await (const event of stream) events.push(event);
    assert.equal(events[0].type, "message_start");
    assert.equal(events[1].type, "content_block_start");
    assert.equal(events[1].index, 0);
    assert.equal(events[1].content_block.type, "compaction");
    assert.equal(events[2].delta.type, "compaction_delta");
    assert.match(events[2].delta.content, /^<conversation_summary>/);
    assert.equal(events.at(-1).type, "message_stop");
    // The upstream's own blocks follow at the next indexes.
    assert.ok(events.filter((e) => e.type === "content_block_start").every((e, i) => e.index === i));
  });

  test("pause_after_compaction answers the block alone with stop_reason compaction", async () => {
    const message = await client().beta.messages.create({
      model: "tiny", max_tokens: 8, betas: BETAS, messages: longConversation(),
      context_management: edit(200, { pause_after_compaction: true, instructions: "Keep the file names." }),
    });
    assert.equal(message.stop_reason, "compaction");
    assert.equal(message.content.length, 1);
    assert.equal(message.content[0].type, "compaction");
    assert.match(message.content[0].content, /money\.cc|ci\/Dockerfile/);
  });

  test("a compaction block harness did not write is refused as a BadRequestError", async () => {
    const messages = [...longConversation(),
      { role: "assistant", content: [{ type: "compaction", content: "A summary from elsewhere.", encrypted_content: "EqQBCkYIBRgC" }] },
      { role: "user", content: "Go on." }];
    await assert.rejects(client().beta.messages.create({ model: "tiny", max_tokens: 8, betas: BETAS, messages }), (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.error.type, "error");
      assert.equal(e.error.error.type, "invalid_request_error");
      assert.match(e.error.error.message, /did not write/);
      return true;
    });
  });

  test("a wrong key is the upstream's 401, an AuthenticationError, and no key is written anywhere", async () => {
    const wrong = "sk-ant-wrong-0123456789abcdef";
    const other = new Anthropic({ apiKey: wrong, baseURL: f.stack.harness.url, maxRetries: 0 });
    await assert.rejects(other.beta.messages.create({
      model: "tiny", max_tokens: 8, betas: BETAS, messages: longConversation(), context_management: edit(200),
    }), (e) => {
      assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
      assert.ok(!JSON.stringify(e.error ?? {}).includes(wrong));
      return true;
    });
    for (const secret of [wrong, f.stack.key]) {
      assert.ok(!f.stack.harness.output().includes(secret));
      for (const bytes of filesUnder(f.stack.harness.dataDir)) assert.equal(bytes.indexOf(secret), -1);
    }
  });
});
