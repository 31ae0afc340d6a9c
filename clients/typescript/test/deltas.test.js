// Text deltas against the real `harness serve` (server.js) with a scripted model whose steps
// stream their text (docs/scripted.md "stream"): askStream's pieces and then its Answer, ask's
// count of deltas, the text_delta items of a stream that asks for them (and none on one that
// does not), and an answer stream left early or ended by a failed turn.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { AnswerStream, Client, NoAnswer } from "../dist/index.js";
import { take } from "./helpers.js";
import { startServer } from "./server.js";

const WAIT = { timeoutMs: 20_000 };
const LOOP = { model: "m", automatic: false };
const UNICODE = "Streaming: ünïcödé and ASCII, in small pieces.";

/** A scripted step whose answer streams in pieces of at most `bytes` bytes. */
function streamed(raw, bytes) {
  return { raw, stream: { bytes } };
}

/** `body` run with a client of a server of its own, whose every loop follows `steps`. */
async function withServer(steps, body) {
  const server = await startServer(JSON.stringify(steps));
  try {
    await body(new Client(server.url));
  } finally {
    assert.equal(await server.stop(), 0, server.output());
  }
}

describe("text deltas against harness serve", () => {
  test("askStream yields the answer's text as the model streams it, then the Answer", () =>
    withServer([streamed(UNICODE, 3)], async (client) => {
      const { sessionId: sid, activeLoop: loop } = await client.createSession(LOOP);
      const stream = client.askStream(sid, loop, "Stream.", WAIT);
      assert.ok(stream instanceof AnswerStream);
      const items = [];
      for await (const item of stream) items.push(item);
      const answer = items.pop();
      assert.equal(typeof answer, "object", "the Answer is the last item");
      assert.ok(items.every((p) => typeof p === "string"));
      assert.equal(items.join(""), UNICODE);
      // Pieces of at most 3 bytes, never cutting a character (a wider one alone).
      assert.ok(items.every((p) => Buffer.byteLength(p) <= 3 || [...p].length === 1), JSON.stringify(items));
      assert.ok(items.length > 10);
      assert.equal(answer.text, UNICODE);
      assert.equal(answer.deltas, items.length);
      assert.deepEqual(answer.message.blocks, [{ type: "text", text: UNICODE }]);
      assert.equal(stream.answer, answer);
      assert.equal(stream.commandId, answer.commandId);
      assert.deepEqual(await stream.next(), { done: true, value: undefined });
    }));

  test("ask counts the deltas of a streamed answer, and none of a plain one", () =>
    withServer([streamed("Hello there, world.", 4), { raw: "Plain." }], async (client) => {
      const { sessionId: sid, activeLoop: loop } = await client.createSession(LOOP);
      const answer = await client.ask(sid, loop, "Say hello.", WAIT);
      assert.equal(answer.text, "Hello there, world.");
      assert.equal(answer.deltas, 5); // 19 bytes in pieces of at most 4
      const plain = await client.ask(sid, loop, "Again.", WAIT);
      assert.deepEqual([plain.text, plain.deltas], ["Plain.", 0]);
      assert.notEqual(plain.turnId, answer.turnId);
    }));

  test("text deltas come only on streams that ask, before their message, and are not journaled", () =>
    withServer([streamed("One two three.", 5)], async (client) => {
      const { sessionId: sid, activeLoop: loop } = await client.createSession(LOOP);
      const withDeltas = client.events(sid, { textDeltas: true });
      const without = client.events(sid);
      try {
        await withDeltas.open();
        await without.open();
        await client.ask(sid, loop, "Count.", WAIT);
        const isEnd = (i) => i.kind === "event" && i.type === "TurnCompleted";
        const seen = await take(withDeltas, isEnd);
        const plain = await take(without, isEnd);
        const deltas = seen.filter((i) => i.kind === "text_delta");
        assert.equal(deltas.map((d) => d.text).join(""), "One two three.");
        const turn = seen.find((i) => i.kind === "event" && i.type === "TurnStarted").data.turn_id;
        assert.deepEqual([...new Set(deltas.map((d) => `${d.loopId} ${d.turnId}`))], [`${loop} ${turn}`]);
        // Every delta before the assistant's message, which holds the whole text.
        const committed = seen.findIndex(
          (i) => i.kind === "event" && i.type === "MessageCommitted" && i.data.message.role === "assistant",
        );
        assert.ok(Math.max(...deltas.map((d) => seen.indexOf(d))) < committed);
        // The same events without a single delta; no delta moved the resumption point.
        assert.ok(!plain.some((i) => i.kind === "text_delta"));
        const events = seen.filter((i) => i.kind === "event");
        assert.deepEqual(
          plain.map((i) => i.type),
          events.map((i) => i.type),
        );
        assert.equal(withDeltas.lastEventId, events.filter((e) => e.enduring).at(-1).seq);
        assert.ok((await client.export(sid)).every((r) => !JSON.stringify(r).includes("text_delta")));
      } finally {
        await withDeltas.close();
        await without.close();
      }
    }));

  test("an answer stream left early is closed, and a failed turn ends one with a NoAnswer", () =>
    withServer([streamed("Left early, still committed.", 2), { error: "refused" }], async (client) => {
      const { sessionId: sid, activeLoop: loop } = await client.createSession(LOOP);
      const stream = client.askStream(sid, loop, "Go.", WAIT);
      let first;
      for await (const piece of stream) {
        first = piece;
        break; // closes the stream; the turn goes on
      }
      assert.equal(typeof first, "string");
      assert.equal(stream.answer, null);
      assert.deepEqual(await stream.next(), { done: true, value: undefined });
      // The turn completed on the server all the same.
      const done = client.events(sid, { fromSeq: 1, loop, kinds: ["TurnCompleted"] });
      await done.next();
      await done.close();
      const messages = (await client.history(sid, loop)).messages;
      assert.equal(messages.at(-1).blocks[0].text, "Left early, still committed.");

      const failing = client.askStream(sid, loop, "Fail, please.", WAIT);
      await assert.rejects(
        (async () => {
          for await (const piece of failing) assert.equal(typeof piece, "string");
        })(),
        (e) => {
          assert.ok(e instanceof NoAnswer, String(e));
          assert.equal(e.kind, "turn_failed");
          assert.equal(e.event.type, "TurnFailed");
          return true;
        },
      );
      assert.deepEqual(await failing.next(), { done: true, value: undefined });
    }));
});
