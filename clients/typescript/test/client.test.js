// harness-client against the real `harness serve` (server.js): a session created with a history
// and compacted, its events read from the journal and live, a message sent and its scripted
// answer awaited, the typed errors, and a token that is required and never shown.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { inspect } from "node:util";

import {
  BadRequest,
  Client,
  NoAnswer,
  CommandNotFound,
  HarnessError,
  LoopNotFound,
  NotFound,
  SessionNotFound,
  Timeout,
  Unauthorized,
  UnknownModel,
} from "../dist/index.js";
import { history, take } from "./helpers.js";
import { Server, answers, startServer } from "./server.js";

const UNKNOWN = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
// Bounds on waits: the replies come in milliseconds; these only end a broken run.
const WAIT = { timeoutMs: 20_000 };

describe("against harness serve", () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(answers("Answer 1.", "Answer 2.", "Answer 3."));
    client = new Client(server.url);
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.output());
  });

  test("a session created with a history compacts, and its events replay and stream", async () => {
    const spec = { model: "m", keepRecentSegments: 1, keepRecentTokens: 1, history: history(3) };
    const created = await client.createSession(spec);
    const { sessionId: sid, activeLoop: loop } = created;
    assert.deepEqual(created.loops, [loop]);
    assert.ok((await client.listSessions()).some((s) => s.sessionId === sid && s.inMemory));
    const before = await client.history(sid, loop);
    assert.equal(before.messages.length, 6);
    assert.equal(before.derivedPrefix, 0);
    assert.equal(before.messages[0].blocks[0].text, "Request 0: edit src/app.cc.");

    const stream = client.events(sid, { fromSeq: 1 });
    // The first event replayed: the subscription exists, so what follows arrives live.
    const first = await stream.next();
    assert.equal(first.value.seq, 1);
    const command = await client.compact(sid, loop);
    assert.equal(command.sessionId, sid);
    const reply = await client.wait(command, WAIT);
    assert.ok(reply.answered);
    assert.equal(reply.replyType, "CompactWaiterResolved", JSON.stringify(reply.reply));
    assert.equal(reply.reply.cause.command_id, command.commandId);
    const seen = [first.value, ...(await take(stream, (e) => e.type === "CompactWaiterResolved"))];
    await stream.close();

    const types = seen.map((e) => e.type);
    assert.ok(types.includes("CompactionStarted"), types.join(","));
    assert.ok(types.indexOf("CompactionStarted") < types.indexOf("CompactionCommitted"));
    const started = seen[types.indexOf("CompactionStarted")];
    assert.equal(started.seq, 0);
    assert.equal(started.enduring, false);
    assert.equal(seen[types.indexOf("CompactionCommitted")].data.loop_id, loop);
    // The enduring ones are the journal's events, in order, none missing.
    const durable = seen.filter((e) => e.enduring).map((e) => e.seq);
    const journal = (await client.export(sid)).filter((r) => r.kind === "event").map((r) => r.seq);
    assert.deepEqual(durable, journal.slice(0, durable.length));
    assert.equal(stream.lastEventId, durable.at(-1));

    // The loop and kind filters replay only the loop's compaction outcome.
    const only = client.events(sid, { fromSeq: 1, loop, kinds: ["CompactionCommitted", "CompactionRejected"] });
    const committed = await only.next();
    await only.close();
    assert.equal(committed.value.type, "CompactionCommitted");

    const after = await client.history(sid, loop);
    assert.equal(after.derivedPrefix, 1);
    assert.ok(after.messages.length < before.messages.length);
    assert.equal(after.messageIds.length, after.messages.length);
    const context = await client.context(sid, loop);
    assert.equal(context.derivedPrefix, 1);
    assert.equal(context.categories.summary.messages, 1);
    const state = await client.getSession(sid);
    assert.equal(state.activeLoop, loop);
    assert.equal(state.faulted, false);
    assert.equal(state.loops[0].loopId, loop);
  });

  test("a message is sent and its scripted answer awaited", async () => {
    const { sessionId: sid, activeLoop: loop } = await client.createSession("m");
    const answer = await client.ask(sid, loop, "Say hello.", WAIT);
    assert.equal(answer.text, "Answer 1.");
    assert.equal(answer.message.role, "assistant");
    assert.equal(answer.commandId.sessionId, sid);
    const accepted = await client.wait(answer.commandId, WAIT);
    assert.equal(accepted.replyType, "InputAccepted");
    const second = await client.ask(sid, loop, "And again.", WAIT);
    assert.equal(second.text, "Answer 2.");
    assert.notEqual(second.turnId, answer.turnId);
    const messages = (await client.history(sid, loop)).messages;
    assert.deepEqual(
      messages.map((m) => [m.role, m.blocks[0].text]),
      [["user", "Say hello."], ["assistant", "Answer 1."], ["user", "And again."], ["assistant", "Answer 2."]],
    );
    await client.deleteSession(sid);
    const restored = await client.getSession(sid);
    assert.equal(restored.loops[0].status, "exited");
  });

  test("an answer that does not come in time is a Timeout, and a caller's abort an Aborted", async () => {
    // 1 ms ends before the server can have answered anything.
    const { sessionId: sid, activeLoop: loop } = await client.createSession("m");
    await assert.rejects(client.ask(sid, loop, "Too quick.", { timeoutMs: 1 }), (e) => {
      assert.ok(e instanceof Timeout, String(e));
      assert.equal(e.kind, "timeout");
      return true;
    });
    const controller = new AbortController();
    controller.abort(new Error("changed my mind"));
    await assert.rejects(client.listSessions({ signal: controller.signal }), (e) => {
      assert.ok(e instanceof HarnessError);
      assert.equal(e.kind, "aborted");
      return true;
    });
  });

  test("refusals are typed with the server's kind and detail", async () => {
    await assert.rejects(client.getSession(UNKNOWN), (e) => {
      assert.ok(e instanceof SessionNotFound && e instanceof NotFound);
      assert.deepEqual([e.kind, e.status], ["session_not_found", 404]);
      assert.ok(e.detail.length > 0);
      return true;
    });
    const { sessionId: sid } = await client.createSession("m");
    await assert.rejects(client.history(sid, UNKNOWN), LoopNotFound);
    await assert.rejects(client.command(UNKNOWN), CommandNotFound);
    await assert.rejects(client.createSession("nope"), (e) => {
      assert.ok(e instanceof UnknownModel && e instanceof BadRequest);
      assert.equal(e.kind, "unknown_model");
      return true;
    });
    await assert.rejects(client.getSession("not-a-uuid"), (e) => {
      assert.ok(e instanceof BadRequest);
      assert.deepEqual([e.kind, e.status], ["invalid_id", 400]);
      return true;
    });
    assert.throws(() => client.events(".."), TypeError);
    const doc = await client.openApi();
    assert.match(String(doc.openapi), /^3\.1/);
  });
});

test("with a token set, a call without it or with another is Unauthorized, and the token is never shown", async () => {
  const token = "s3cret-token-4711";
  const guarded = new Server(answers("Hi."));
  guarded.extra = ["--token-file", guarded.file("token", token + "\n")];
  await guarded.start();
  try {
    for (const wrong of [undefined, "wrong-token"]) {
      const c = new Client(guarded.url, wrong === undefined ? {} : { token: wrong });
      await assert.rejects(c.listSessions(), (e) => {
        assert.ok(e instanceof Unauthorized);
        assert.deepEqual([e.kind, e.status], ["unauthorized", 401]);
        return true;
      });
      await assert.rejects(c.events(UNKNOWN).next(), Unauthorized);
    }
    const client = new Client(guarded.url, { token });
    const { sessionId: sid, activeLoop: loop } = await client.createSession("m");
    assert.equal((await client.ask(sid, loop, "Hello?", WAIT)).text, "Hi.");
    assert.ok(!inspect(client, { showHidden: true, depth: 5 }).includes(token));
    assert.ok(!JSON.stringify(client).includes(token));
    const refused = await client.getSession(UNKNOWN).catch((e) => e);
    assert.ok(refused instanceof SessionNotFound);
    assert.ok(!inspect(refused).includes(token) && !refused.message.includes(token));
  } finally {
    assert.equal(await guarded.stop(), 0, guarded.output());
  }
  assert.ok(!guarded.output().includes("s3cret"));
});

test("a failed turn and an interrupted one are a NoAnswer with the event that ended them", async () => {
  const server = await startServer(
    JSON.stringify([{ error: "refused" }, { raw: "Too late.", delay_ms: 30_000 }]),
  );
  try {
    const client = new Client(server.url);
    const { sessionId: sid, activeLoop: loop } = await client.createSession("m");
    await assert.rejects(client.ask(sid, loop, "Fail, please.", WAIT), (e) => {
      assert.ok(e instanceof NoAnswer, String(e));
      assert.equal(e.kind, "turn_failed");
      assert.equal(e.event.type, "TurnFailed");
      return true;
    });
    // The second call waits 30 s: interrupt it once its turn holds the input.
    const committed = client.events(sid, { loop, kinds: ["MessageCommitted"] });
    await committed.open();
    // Its outcome is taken at once: it settles while the interrupt is under way.
    const asked = client.ask(sid, loop, "Take your time.", WAIT).then(
      (answer) => answer,
      (e) => e,
    );
    const input = await committed.next();
    await committed.close();
    assert.equal(input.value.data.message.role, "user");
    await client.interrupt(sid, loop);
    const e = await asked;
    assert.ok(e instanceof NoAnswer, String(e));
    assert.equal(e.kind, "turn_interrupted");
    assert.equal(e.event.turn_id, input.value.data.turn_id);
  } finally {
    assert.equal(await server.stop(), 0, server.output());
  }
});
