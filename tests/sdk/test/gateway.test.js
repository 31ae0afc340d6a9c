// The gateway's shared behaviour through the official `openai` SDK, unmodified: a request
// forwarded to the llama-server upstream and its answer relayed, streaming or not; the caller's
// key passed through and never echoed; refusals the SDK reads as the provider's own errors.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { stackFixture, startHarness } from "./servers.js";

describe("gateway: forwarding through harness serve --upstream", () => {
  const f = stackFixture();

  test("responses.create is answered by the upstream through harness", async () => {
    const response = await f.openai.responses.create({ model: "tiny", input: "Say hello.", max_output_tokens: 8 });
    assert.equal(response.object, "response");
    assert.equal(response.status, "completed");
    assert.equal(response.output[0].type, "message");
    assert.equal(typeof response.output_text, "string");
  });

  test("responses.create with stream: true relays the upstream's events in order", async () => {
    const stream = await f.openai.responses.create({ model: "tiny", input: "Say hello.", max_output_tokens: 8, stream: true });
    const types = [];
    let text = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    assert.equal(types[0], "response.created");
    assert.equal(types.at(-1), "response.completed");
    assert.ok(types.includes("response.output_text.delta"));
    assert.ok(text.length > 0);
  });

  test("a wrong key is the upstream's 401, read by the SDK as an AuthenticationError, and never echoed", async () => {
    const wrong = "sk-wrong-0123456789abcdef";
    const other = new OpenAI({ apiKey: wrong, baseURL: `${f.stack.harness.url}/v1`, maxRetries: 0 });
    await assert.rejects(other.responses.create({ model: "tiny", input: "Hi.", max_output_tokens: 4 }), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, String(e));
      assert.equal(e.status, 401);
      assert.ok(!JSON.stringify(e.error ?? {}).includes(wrong));
      return true;
    });
    assert.ok(!f.stack.harness.output().includes(wrong));
    assert.ok(!f.stack.harness.output().includes(f.stack.key));
  });

  test("a request without a credential is the upstream's 401 in its error shape", async () => {
    const reply = await fetch(`${f.stack.harness.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny", input: "Hi.", max_output_tokens: 4 }),
    });
    assert.equal(reply.status, 401);
    const body = await reply.json();
    assert.equal(typeof body.error.message, "string");
  });

  test("a malformed body is refused in OpenAI's shape", async () => {
    const reply = await fetch(`${f.stack.harness.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${f.stack.key}` },
      body: '{"model":',
    });
    assert.equal(reply.status, 400);
    const body = await reply.json();
    assert.equal(body.error.type, "invalid_request_error");
    assert.equal(body.error.code, "invalid_json");
    assert.ok(!JSON.stringify(body).includes(f.stack.key));
  });
});

describe("gateway: a server started with a token", () => {
  let harness;
  before(async () => {
    process.env.HARNESS_SERVE_TOKEN = "sdk-test-token";
    try {
      harness = await startHarness("http://127.0.0.1:9/v1");
    } finally {
      delete process.env.HARNESS_SERVE_TOKEN;
    }
  });
  after(async () => {
    if (harness) assert.equal(await harness.stop(), 0);
  });

  test("a caller without the token is refused as the SDK reads an authentication error", async () => {
    const client = new OpenAI({ apiKey: "sk-caller-key-1", baseURL: `${harness.url}/v1`, maxRetries: 0 });
    await assert.rejects(client.responses.create({ model: "tiny", input: "Hi." }), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, String(e));
      assert.equal(e.error?.code ?? e.code, "unauthorized");
      return true;
    });
  });
});
