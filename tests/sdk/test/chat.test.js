// POST /v1/chat/completions as a compacting gateway, through the official `openai` SDK's
// chat.completions.create, unmodified: a client that knows nothing of compaction sends its whole
// history every time; harness (--gateway-compact-at 500) compacts it once it crosses the
// threshold and sends its later requests with the compacted prefix. The proof is what the
// upstream (llama-server) counts: usage.prompt_tokens through harness against the same requests
// sent to it directly, streaming and not.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { startStack } from "./servers.js";

/** A system prompt, then `turns` user/assistant exchanges (about 880 prompt tokens for 10). */
function conversation(turns) {
  const out = [{ role: "system", content: "You are a careful coding agent." }];
  for (let i = 0; i < turns; i++) {
    out.push({ role: "user", content: `Step ${i}: look at src/module_${i}.cc and tell me what the function parse_record does with an empty line.` });
    out.push({ role: "assistant", content: `In step ${i}, parse_record returns an error for an empty line; the caller at line ${100 + i} skips it and counts it.` });
  }
  return out;
}

/** Every byte of every file under `dir`, as latin1 text (for a search). */
function filesText(dir) {
  let text = "";
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    text += entry.isDirectory() ? filesText(full) : readFileSync(full).toString("latin1");
  }
  return text;
}

describe("chat completions: a compacting gateway for clients that know nothing of compaction", () => {
  let stack;
  let gateway;
  let direct;
  const ask = (client, messages, extra = {}) =>
    client.chat.completions.create({ model: "tiny", messages, max_tokens: 4, temperature: 0, ...extra });

  before(async () => {
    stack = await startStack("--gateway-compact-at", "500");
    gateway = new OpenAI({ apiKey: stack.key, baseURL: `${stack.harness.url}/v1`, maxRetries: 0 });
    direct = new OpenAI({ apiKey: stack.key, baseURL: `${stack.llama.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    if (stack) assert.equal(await stack.stop(), 0);
  });

  test("a short conversation reaches the upstream as sent", async () => {
    const messages = conversation(1);
    const [through, straight] = [await ask(gateway, messages), await ask(direct, messages)];
    assert.equal(through.object, "chat.completion");
    assert.equal(through.usage.prompt_tokens, straight.usage.prompt_tokens);
  });

  test("a long conversation is compacted, and its later requests carry the full history but reach the upstream compacted", async () => {
    const history = conversation(10);
    const straight = await ask(direct, history);
    const through = await ask(gateway, history);
    assert.equal(through.choices[0].message.role, "assistant");
    assert.ok(through.usage.prompt_tokens * 2 < straight.usage.prompt_tokens,
      `through harness ${through.usage.prompt_tokens}, directly ${straight.usage.prompt_tokens}`);

    // The client appends the answer as the SDK returned it, and a new request: the full history.
    history.push(through.choices[0].message, { role: "user", content: "Which step changed the caller?" });
    const straightNext = await ask(direct, history);
    const throughNext = await ask(gateway, history);
    assert.ok(throughNext.usage.prompt_tokens * 2 < straightNext.usage.prompt_tokens);
    // The same compacted prefix: both grew by the same two messages.
    assert.equal(throughNext.usage.prompt_tokens - through.usage.prompt_tokens,
      straightNext.usage.prompt_tokens - straight.usage.prompt_tokens);
  });

  test("stream: true relays the upstream's chunks of a compacted conversation", async () => {
    const history = conversation(12);
    const straight = await ask(direct, history);
    const stream = await ask(gateway, history, { stream: true, stream_options: { include_usage: true } });
    let chunks = 0;
    let usage;
    for await (const chunk of stream) {
      assert.equal(chunk.object, "chat.completion.chunk");
      chunks++;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(chunks > 1);
    assert.ok(usage && usage.prompt_tokens * 2 < straight.usage.prompt_tokens,
      `through harness ${usage?.prompt_tokens}, directly ${straight.usage.prompt_tokens}`);
  });

  test("a malformed conversation is refused in OpenAI's shape, read by the SDK as a BadRequestError", async () => {
    await assert.rejects(ask(gateway, [{ role: "wizard", content: "hi" }]), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.code, "invalid_messages");
      assert.ok(!JSON.stringify(e.error ?? {}).includes(stack.key));
      return true;
    });
  });

  test("the compactions are sessions in the journal, and the key is in neither the journal nor the log", () => {
    const stored = filesText(stack.harness.dataDir);
    assert.ok(stored.includes("conversation_summary"), "a compaction's summary is journaled");
    assert.ok(!stored.includes(stack.key));
    assert.ok(!stack.harness.output().includes(stack.key));
  });
});
