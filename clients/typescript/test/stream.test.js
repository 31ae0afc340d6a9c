// What the real server cannot be made to do cheaply, against a tiny node:http server on
// 127.0.0.1: malformed and endless event streams and error bodies (each cap enforced, the
// connection closed, memory bounded), lag and drops resumed with no gap and no duplicate, and
// byte soup that ends or fails with a HarnessError, never anything else.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, describe, test } from "node:test";

import {
  Client,
  ConnectionFailed,
  HarnessError,
  MAX_EVENT_BYTES,
  ProtocolError,
  ResponseTooLarge,
  SseParser,
  Timeout,
} from "../dist/index.js";
import { parseChunked, seeded } from "./helpers.js";

const SID = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
const MiB = 1024 * 1024;
// What a fake server sends at most of an endless answer unless the client closes first.
const ENDLESS_BYTES = 300 * MiB;

function frame(seq, type = "InputAccepted") {
  const data = JSON.stringify({ seq, event: { type, v: 1 } });
  return `id: ${seq}\nevent: ${type}\ndata: ${data}\n\n`;
}

/** A server on 127.0.0.1 that answers request i with answers[i](req, res) (the last one again
 * for any request beyond) and records each request's path and Last-Event-ID. */
async function fake(...answers) {
  const requests = [];
  const server = createServer((req, res) => {
    requests.push({ path: req.url, lastEventId: req.headers["last-event-id"] ?? null, headers: req.headers });
    answers[Math.min(requests.length, answers.length) - 1](req, res);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${server.address().port}`, requests };
}

const servers = [];
after(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** An event stream that sends `body` and ends. */
function streamOf(body) {
  return (req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.end(body);
  };
}

/** An answer that writes `head` and then `piece` again and again, waiting for the socket to
 * drain, until ENDLESS_BYTES or until the client closes; `sent` resolves with what it wrote
 * and whether the client closed first. */
function endless(status, headers, head, piece) {
  let resolveSent;
  const sent = new Promise((resolve) => (resolveSent = resolve));
  const answer = async (req, res) => {
    res.writeHead(status, headers);
    let bytes = 0;
    let closed = false;
    res.on("close", () => (closed = true));
    const write = (chunk) =>
      new Promise((resolve) => {
        if (closed) return resolve(false);
        bytes += chunk.length;
        if (res.write(chunk)) return resolve(true);
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve(!closed);
        };
        res.on("drain", done);
        res.on("close", done);
      });
    if (head.length > 0) await write(Buffer.from(head));
    const chunk = Buffer.from(piece.repeat(Math.ceil((64 * 1024) / piece.length)));
    while (!closed && bytes < ENDLESS_BYTES) {
      if (!(await write(chunk))) break;
    }
    resolveSent({ bytes, closedByClient: closed });
    res.end();
  };
  return { answer, sent };
}

async function collect(stream, count = Infinity) {
  const out = [];
  for await (const item of stream) {
    out.push(item);
    if (out.length >= count) break;
  }
  return out;
}

describe("limits", () => {
  test("an endless line of an event stream is ResponseTooLarge at 16 MiB + 4 KiB, memory bounded", async () => {
    const { answer, sent } = endless(200, { "Content-Type": "text/event-stream" }, "data: ", "a");
    const { url } = await fake(answer);
    const rss = process.memoryUsage().rss;
    const stream = new Client(url).events(SID);
    const error = await stream.next().catch((e) => e);
    assert.ok(error instanceof ResponseTooLarge, String(error));
    assert.equal(error.what, "a line of the event stream");
    assert.equal(error.limit, MAX_EVENT_BYTES);
    assert.match(error.message, /16 MiB \+ 4 KiB/);
    assert.match(error.message, /maxEventBytes/);
    const { bytes, closedByClient } = await sent;
    assert.ok(closedByClient, "the client closed the connection");
    assert.ok(bytes < 64 * MiB, `the server wrote ${bytes} bytes`);
    assert.ok(process.memoryUsage().rss - rss < 128 * MiB);
    // Closed: no reconnection to meet the same line again.
    assert.deepEqual(await stream.next(), { done: true, value: undefined });
  });

  test("an endless event (lines without the blank line that ends it) is ResponseTooLarge", async () => {
    const { answer, sent } = endless(200, { "Content-Type": "text/event-stream" }, "event: X\n", "data: xxxxxxxx\n");
    const { url, requests } = await fake(answer);
    const error = await new Client(url).events(SID).next().catch((e) => e);
    assert.ok(error instanceof ResponseTooLarge, String(error));
    assert.equal(error.what, "an event of the event stream");
    assert.ok((await sent).closedByClient);
    assert.equal(requests.length, 1);
  });

  test("an event of exactly maxEventBytes is read and one byte more refused; so is a long comment", async () => {
    const limit = 300;
    const sized = (size) => {
      const head = `id: 1\nevent: InputAccepted\n`;
      const empty = `data: ${JSON.stringify({ seq: 1, event: { type: "InputAccepted", pad: "" } })}\n`;
      const pad = "p".repeat(size - head.length - empty.length);
      return `${head}data: ${JSON.stringify({ seq: 1, event: { type: "InputAccepted", pad } })}\n\n`;
    };
    assert.equal(sized(limit).length, limit + 1); // the blank line is not counted
    const { url } = await fake(streamOf(sized(limit)), streamOf(sized(limit + 1)), streamOf(`:${"c".repeat(limit)}\n`));
    const client = new Client(url, { maxEventBytes: limit });
    const [event] = await collect(client.events(SID), 1);
    assert.equal(event.seq, 1);
    assert.match(event.data.pad, /^p{200,}$/);
    const over = await client.events(SID).next().catch((e) => e);
    assert.ok(over instanceof ResponseTooLarge && over.what === "an event of the event stream", String(over));
    assert.match(over.message, /300 bytes/);
    const comment = await client.events(SID).next().catch((e) => e);
    assert.ok(comment instanceof ResponseTooLarge && comment.what === "a line of the event stream", String(comment));
  });

  test("an error body is capped: declared too large, and endless without a length", async () => {
    const declared = (req, res) => {
      res.writeHead(500, { "Content-Type": "application/json", "Content-Length": String(ENDLESS_BYTES) });
      res.write("x".repeat(1024));
    };
    const { answer, sent } = endless(500, { "Content-Type": "application/json" }, '{"error":{"kind":"internal","detail":"', "y");
    const { url } = await fake(declared, answer);
    const client = new Client(url);
    for (const attempt of [client.listSessions(), client.getSession(SID)]) {
      const error = await attempt.catch((e) => e);
      assert.ok(error instanceof ResponseTooLarge, String(error));
      assert.equal(error.status, 500);
      assert.equal(error.what, "the body of a 500 answer");
      assert.match(error.message, /64 KiB/);
    }
    const { bytes, closedByClient } = await sent;
    assert.ok(closedByClient);
    assert.ok(bytes < 64 * MiB, `the server wrote ${bytes} bytes`);
  });

  test("an ordinary answer over maxBodyBytes is refused, and read whole under it", async () => {
    const list = JSON.stringify({ sessions: [{ session_id: SID, in_memory: true }] });
    const send = (req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(list);
    };
    const { url } = await fake(send);
    const small = await new Client(url, { maxBodyBytes: list.length - 1 }).listSessions().catch((e) => e);
    assert.ok(small instanceof ResponseTooLarge, String(small));
    assert.deepEqual(await new Client(url, { maxBodyBytes: list.length }).listSessions(), [
      { sessionId: SID, inMemory: true },
    ]);
  });
});

describe("frames", () => {
  test("lagged is yielded, then the stream resumes after the last event with no duplicate", async () => {
    const { url, requests } = await fake(
      streamOf(frame(1) + frame(2) + 'event: lagged\ndata: {"last_seq":2}\n\n'),
      streamOf(frame(3) + 'event: end\ndata: {"reason":"hub_closed","last_seq":3}\n\n'),
    );
    const stream = new Client(url).events(SID, { fromSeq: 1 });
    const items = await collect(stream);
    assert.deepEqual(
      items.map((i) => (i.kind === "lagged" ? `lagged ${i.lastSeq}` : i.seq)),
      [1, 2, "lagged 2", 3],
    );
    assert.deepEqual(stream.end, { reason: "hub_closed", lastSeq: 3 });
    assert.equal(requests[1].lastEventId, "2");
    assert.equal(stream.reconnects, 1);
  });

  test("a frame cut short is fetched again after the last whole event", async () => {
    const whole = frame(1) + frame(2);
    const { url, requests } = await fake(
      streamOf(whole + "id: 3\nevent: InputAccepted\ndata: {\"seq\":3,"),
      streamOf(frame(3) + 'event: end\ndata: {"reason":"hub_closed","last_seq":3}\n\n'),
    );
    const items = await collect(new Client(url).events(SID, { fromSeq: 1 }));
    assert.deepEqual(items.map((i) => i.seq), [1, 2, 3]);
    assert.equal(requests[1].lastEventId, "2");
  });

  test("text_delta frames are yielded only when asked, move no resumption point, and are checked", async () => {
    const delta = (data) => `event: text_delta\ndata: ${JSON.stringify(data)}\n\n`;
    const body =
      frame(1) +
      delta({ loop_id: "l", turn_id: "t", text: "Hel" }) +
      delta({ loop_id: "l", turn_id: null, text: "lo" }) +
      'event: lagged\ndata: {"last_seq":1}\n\n';
    const ended = streamOf(frame(2) + 'event: end\ndata: {"reason":"hub_closed","last_seq":2}\n\n');
    const asked = await fake(streamOf(body), ended);
    const stream = new Client(asked.url).events(SID, { fromSeq: 1, textDeltas: true });
    const items = await collect(stream);
    assert.deepEqual(items.slice(1, 3), [
      { kind: "text_delta", loopId: "l", turnId: "t", text: "Hel" },
      { kind: "text_delta", loopId: "l", turnId: null, text: "lo" },
    ]);
    assert.deepEqual(
      items.map((i) => i.kind),
      ["event", "text_delta", "text_delta", "lagged", "event"],
    );
    assert.match(asked.requests[0].path, /[?&]text_deltas=true(&|$)/);
    assert.equal(asked.requests[1].lastEventId, "1", "resumed after the event, not a delta");
    // A stream that did not ask says nothing of deltas and yields none.
    const plain = await fake(streamOf(body), ended);
    const kinds = (await collect(new Client(plain.url).events(SID, { fromSeq: 1 }))).map((i) => i.kind);
    assert.deepEqual(kinds, ["event", "lagged", "event"]);
    assert.ok(!plain.requests[0].path.includes("text_deltas"));
    for (const [bad, why] of [
      [`id: 3\n${delta({ loop_id: "l", turn_id: "t", text: "x" })}`, /text_delta frame has an id/],
      [delta({ loop_id: "l", turn_id: "t" }), /has no member "text"/],
      [delta({ loop_id: "l", turn_id: 5, text: "x" }), /turn_id is not a string/],
    ]) {
      const { url } = await fake(streamOf(bad));
      const error = await new Client(url).events(SID, { textDeltas: true }).next().catch((e) => e);
      assert.ok(error instanceof ProtocolError, `${bad}: ${error}`);
      assert.match(error.message, why);
    }
  });

  test("a stream that keeps dropping ends with ConnectionFailed after maxReconnects", async () => {
    const { url, requests } = await fake(streamOf(""));
    const error = await collect(new Client(url).events(SID, { maxReconnects: 2 })).catch((e) => e);
    assert.ok(error instanceof ConnectionFailed, String(error));
    assert.equal(requests.length, 3);
  });

  test("malformed frames are ProtocolErrors that say why", async () => {
    const cases = [
      ["event: InputAccepted\ndata: {not json\n\n", /not JSON/],
      [`id: 7\nevent: Other\ndata: ${JSON.stringify({ seq: 7, event: { type: "InputAccepted" } })}\n\n`, /name is not its event's type/],
      [`id: 8\nevent: InputAccepted\ndata: ${JSON.stringify({ seq: 7, event: { type: "InputAccepted" } })}\n\n`, /id is not its sequence/],
      ["event: end\ndata: {}\n\n", /end frame has no reason/],
      ['event: lagged\ndata: {"last_seq":-1}\n\n', /not a sequence/],
      [Buffer.concat([Buffer.from("data: "), Buffer.from([0xff, 0xfe]), Buffer.from("\n\n")]), /not UTF-8/],
    ];
    for (const [body, why] of cases) {
      const { url } = await fake(streamOf(body));
      const error = await new Client(url).events(SID).next().catch((e) => e);
      assert.ok(error instanceof ProtocolError, `${body}: ${error}`);
      assert.match(error.message, why);
    }
    const { url } = await fake((req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end("{}");
    });
    const error = await new Client(url).events(SID).next().catch((e) => e);
    assert.ok(error instanceof ProtocolError && /not text\/event-stream/.test(error.message), String(error));
  });

  test("every request says what it accepts, a body is JSON, and the token goes only in its header", async () => {
    const { url, requests } = await fake((req, res) => {
      res.writeHead(202, { "Content-Type": "application/json" });
      res.end('{"command_id":"c"}');
    });
    const client = new Client(url + "/prefix/", { token: "t0ken" });
    await client.submitInput(SID, "loop", "hi");
    await client.interrupt(SID, "loop");
    const [input, interrupt] = requests;
    assert.equal(input.path, `/prefix/v1/sessions/${SID}/loops/loop/input`);
    assert.equal(input.headers["accept"], "application/json");
    assert.equal(input.headers["content-type"], "application/json");
    assert.equal(input.headers["authorization"], "Bearer t0ken");
    assert.equal(interrupt.headers["content-type"], "application/json");
    assert.equal(interrupt.headers["content-length"], "0");
    assert.equal(input.headers["origin"], undefined);
    // The server's own default address unless the caller names another; nothing but a plain
    // http(s) URL, and a token of one line.
    assert.equal(new Client().baseUrl, "http://127.0.0.1:8420");
    for (const bad of ["ftp://127.0.0.1/", "http://127.0.0.1:1/?q=1", "http://user:pw@127.0.0.1:1", "127.0.0.1:8420"]) {
      assert.throws(() => new Client(bad), TypeError, bad);
    }
    assert.throws(() => new Client(url, { token: "a\r\nX-Evil: 1" }), TypeError);
    assert.throws(() => new Client(url, { maxEventBytes: 0 }), RangeError);
    // Ids are one escaped path segment each.
    await client.submitInput("a/b?c", "l#1", "x").catch(() => {});
    assert.equal(requests[2].path, "/prefix/v1/sessions/a%2Fb%3Fc/loops/l%231/input");
  });
});

describe("transport", () => {
  test("no answer within timeoutMs is a Timeout, a refused connection ConnectionFailed", async () => {
    const { url } = await fake(() => {}); // takes the request and never answers
    const slow = await new Client(url, { timeoutMs: 200 }).listSessions().catch((e) => e);
    assert.ok(slow instanceof Timeout, String(slow));
    assert.match(slow.message, /no answer within 200 ms/);
    // An event stream's limit covers its connecting.
    const stream = await new Client(url, { timeoutMs: 200 }).events(SID).next().catch((e) => e);
    assert.ok(stream instanceof Timeout, String(stream));
    // A port nothing listens on: this server's, once it is closed.
    const closed = createServer();
    await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = closed.address().port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await new Client(`http://127.0.0.1:${port}`).listSessions().catch((e) => e);
    assert.ok(refused instanceof ConnectionFailed, String(refused));
    assert.equal(refused.status, null);
  });
});

describe("the SSE parser", () => {
  test("line ends LF, CRLF and CR, split anywhere, and data lines joined", () => {
    const text = "event: A\r\ndata: one\rdata: two\n\n: comment\nid: 5\r\ndata\n\nretry: 3\nevent: B\ndata: x\r\n\r\n";
    const expected = [
      { name: "A", id: null, data: "one\ntwo" },
      { name: "message", id: "5", data: "" },
      { name: "B", id: null, data: "x" },
    ];
    const bytes = new TextEncoder().encode(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const parser = new SseParser(1024);
      const frames = [...parser.push(bytes.subarray(0, cut)), ...parser.push(bytes.subarray(cut))];
      assert.deepEqual(frames, expected, `cut at ${cut}`);
      assert.equal(parser.partial, false);
    }
    const oneByOne = new SseParser(1024);
    const frames = [];
    for (const b of bytes) frames.push(...oneByOne.push(Uint8Array.of(b)));
    assert.deepEqual(frames, expected);
  });

  test("events before a bad frame are yielded, then its error ends the stream", async () => {
    const bad = Buffer.concat([Buffer.from(frame(1) + frame(2) + "data: "), Buffer.from([0xc3]), Buffer.from("\n\n")]);
    const { url, requests } = await fake(streamOf(bad));
    const stream = new Client(url).events(SID);
    assert.equal((await stream.next()).value.seq, 1);
    assert.equal((await stream.next()).value.seq, 2);
    await assert.rejects(stream.next(), ProtocolError);
    assert.deepEqual(await stream.next(), { done: true, value: undefined });
    assert.equal(requests.length, 1);
  });

  test("however the bytes are cut into chunks, the frames and the error are the same (5,000 seeded inputs)", () => {
    const random = seeded(4711);
    const pieces = ["data: ", "event: ", "id: ", ":", "\n", "\r", "\r\n", "x", "é", "\xff"].map((p) =>
      Buffer.from(p, p === "\xff" ? "latin1" : "utf8"),
    );
    const run = (bytes, cuts, limit) => {
      const { frames, error } = parseChunked(bytes, cuts, limit);
      return JSON.stringify({ frames, error: error?.kind ?? null });
    };
    for (let i = 0; i < 5000; i++) {
      const parts = [];
      for (let n = Math.floor(random() * 30); n > 0; n--) parts.push(pieces[Math.floor(random() * pieces.length)]);
      const bytes = Buffer.concat(parts);
      const cuts = [];
      for (let j = 1; j < bytes.length; j++) if (random() < 0.3) cuts.push(j);
      const limit = 1 + Math.floor(random() * 40);
      assert.equal(run(bytes, cuts, limit), run(bytes, [], limit), `input ${bytes.toString("hex")}, limit ${limit}`);
    }
  });

  test("byte soup ends or fails with a HarnessError, never another error (300 streams, fixed seed)", async () => {
    const random = seeded(20261206);
    const alphabet = ["data: ", "event: ", "id: ", ":", "\n", "\r", "\r\n", "{", "}", '"seq":', "1", "0", "lagged", "end",
      '"event":{"type":"X"}', ",", "X", "\xff", " "];
    const soups = [];
    for (let i = 0; i < 300; i++) {
      const parts = [];
      const n = Math.floor(random() * 40);
      for (let j = 0; j < n; j++) parts.push(alphabet[Math.floor(random() * alphabet.length)]);
      soups.push(Buffer.from(parts.join(""), "latin1"));
    }
    let next = 0;
    const { url } = await fake((req, res) => streamOf(soups[next++ % soups.length])(req, res));
    const client = new Client(url, { maxEventBytes: 64 });
    let ended = 0;
    let failed = 0;
    for (let i = 0; i < 300; i++) {
      try {
        for await (const item of client.events(SID, { maxReconnects: 0 })) void item;
        ended++;
      } catch (e) {
        assert.ok(e instanceof HarnessError, `soup ${i}: ${e}`);
        failed++;
      }
    }
    assert.equal(ended + failed, 300);
    assert.ok(failed > 0);
  });
});
