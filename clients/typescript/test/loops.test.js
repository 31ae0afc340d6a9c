// The loop operations beyond input and compact, against the real `harness serve` (server.js):
// a previewed compaction approved and undone, pins, and client tools called by the scripted
// model and answered; each refusal typed (docs/preview.md, docs/undo.md, docs/pins.md,
// docs/serve.md "Client tools").

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  Client,
  MessageNotFound,
  NoProposal,
  NothingToUndo,
  ToolCallAnswered,
  ToolCallNotFound,
} from "../dist/index.js";
import { history } from "./helpers.js";
import { startServer } from "./server.js";

const UNKNOWN = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
const WAIT = { timeoutMs: 20_000 };
const SCRIPT = JSON.stringify([
  {
    message: {
      role: "assistant",
      usage: null,
      blocks: [
        { type: "tool_use", id: "call-1", name: "lookup", input: { q: "it" } },
        { type: "tool_use", id: "call-2", name: "lookup", input: { q: "that" } },
      ],
    },
  },
  { raw: "Both looked up." },
]);

let server;
let client;
before(async () => {
  server = await startServer(SCRIPT);
  client = new Client(server.url);
});
after(async () => {
  assert.equal(await server.stop(), 0, server.output());
});

test("a previewed compaction is approved and undone, and messages are pinned", async () => {
  const spec = { model: "m", keepRecentSegments: 1, keepRecentTokens: 1, history: history(3) };
  const { sessionId: sid, activeLoop: loop } = await client.createSession(spec);
  const stream = client.events(sid, { fromSeq: 1, kinds: ["CompactionProposed"] });
  await stream.open();
  const command = await client.compact(sid, loop, { instructions: "keep the file names", preview: true });
  const proposed = await stream.next();
  await stream.close();
  assert.equal(proposed.value.type, "CompactionProposed");

  const before = await client.history(sid, loop);
  assert.equal(before.proposal?.type, "CompactionProposed");
  assert.equal(before.messageIds.length, 6);
  const attempt = before.proposal.attempt_id;
  await assert.rejects(client.discard(sid, loop, UNKNOWN), NoProposal);
  const terminal = await client.approve(sid, loop, attempt);
  const reply = await client.wait(command, WAIT);
  assert.equal(reply.replyType, "CompactWaiterResolved", JSON.stringify(reply.reply));
  assert.equal(reply.reply.committed_event_id, terminal);
  const compacted = await client.history(sid, loop);
  assert.equal(compacted.proposal, null);
  assert.equal(compacted.undoable, 1);
  assert.equal(compacted.derivedPrefix, 1);
  await assert.rejects(client.approve(sid, loop, attempt), NoProposal);

  assert.equal(typeof (await client.undo(sid, loop)), "string");
  assert.deepEqual((await client.history(sid, loop)).messageIds, before.messageIds);
  await assert.rejects(client.undo(sid, loop), (e) => e instanceof NothingToUndo && e.status === 409);

  const last = before.messageIds.at(-1);
  assert.equal(await client.pin(sid, loop, last), true);
  assert.equal(await client.pin(sid, loop, last), false);
  assert.deepEqual((await client.history(sid, loop)).pinned, [last]);
  assert.equal(await client.unpin(sid, loop, last), true);
  await assert.rejects(client.pin(sid, loop, UNKNOWN), MessageNotFound);
});

test("a client tool is called by the model and answered, and the turn ends with the answer", async () => {
  const lookup = { name: "lookup", description: "looks a thing up", inputSchema: { type: "object" } };
  const { sessionId: sid, activeLoop: loop } = await client.createSession({ model: "m", tools: [lookup] });
  assert.deepEqual(await client.toolCalls(sid, loop), []);
  const stream = client.events(sid, { loop, kinds: ["MessageCommitted"] });
  await stream.open();
  // ask() resolves only when the turn ends, after the tools are answered below.
  const asked = client.ask(sid, loop, "Look them up.", WAIT).then(
    (answer) => answer,
    (e) => e,
  );
  for await (const event of stream) {
    if (event.data.message.role === "assistant") break;
  }
  const calls = await client.toolCalls(sid, loop);
  assert.deepEqual(
    calls.map((c) => [c.toolUseId, c.name, c.input]),
    [["call-1", "lookup", { q: "it" }], ["call-2", "lookup", { q: "that" }]],
  );
  await assert.rejects(client.answerTool(sid, loop, "call-9", "x"), ToolCallNotFound);
  assert.deepEqual(
    await client.toolResults(sid, loop, [
      { toolUseId: "call-1", content: "found it" },
      { toolUseId: "call-2", content: "no", isError: true },
    ]),
    ["call-1", "call-2"],
  );
  await assert.rejects(client.answerTool(sid, loop, "call-1", "twice"), ToolCallAnswered);
  const answer = await asked;
  assert.equal(answer.text, "Both looked up.", String(answer));
  const results = (await client.history(sid, loop)).messages.filter((m) => m.role === "tool");
  assert.deepEqual(
    results.map((r) => [r.tool_use_id, r.blocks[0].text, r.is_error]),
    [["call-1", "found it", false], ["call-2", "no", true]],
  );
});
