// Fuzzes the event stream's parser (src/sse.ts) for as many seconds as the first argument says
// (default 60): random bytes, biased towards the SSE format's own pieces, pushed whole and
// again cut into random chunks. Each run must end in frames or in a ResponseTooLarge or
// ProtocolError, never another error; cut or whole, the frames and the error's class are the
// same; the parser never holds more than its cap. A failing input is printed as hex with its
// seed. Not part of `npm test` (that runs the seeded cases of stream.test.js):
//
//   node test/sse-fuzz.js 60

import { HarnessError } from "../dist/index.js";
import { parseChunked, seeded } from "./helpers.js";

const seconds = Number(process.argv[2] ?? 60);
const first = Number(process.argv[3] ?? Date.now() % 2147483647);
const random = seeded(first);
const PIECES = ["data:", "data: ", "event: ", "id: ", "retry: 1", ":", "\n", "\r", "\r\n", "\n\n", "{", "}",
  '{"seq":1,"event":{"type":"X"}}', "X", "é", " ", "\u{1F600}"].map((p) => Buffer.from(p));

function input() {
  const parts = [];
  const n = Math.floor(random() * 64);
  for (let i = 0; i < n; i++) {
    if (random() < 0.2) parts.push(Buffer.from([Math.floor(random() * 256)]));
    else parts.push(PIECES[Math.floor(random() * PIECES.length)]);
  }
  return Buffer.concat(parts);
}

function run(bytes, cuts, limit) {
  const { frames, error } = parseChunked(bytes, cuts, limit);
  if (error !== null && (!(error instanceof HarnessError) || !["response_too_large", "protocol"].includes(error.kind))) {
    throw error;
  }
  return { frames, error: error?.kind ?? null };
}

const end = Date.now() + seconds * 1000;
let runs = 0;
while (Date.now() < end) {
  for (let batch = 0; batch < 1000; batch++, runs++) {
    const bytes = input();
    const limit = 1 + Math.floor(random() * 96);
    const cuts = [];
    for (let i = 0; i < bytes.length; i++) if (random() < 0.3) cuts.push(i);
    try {
      const whole = run(bytes, [], limit);
      const cut = run(bytes, cuts, limit);
      // However the bytes are cut, the frames before an error are the same, and so is the
      // error's kind.
      if (whole.error !== cut.error) throw new Error(`whole: ${whole.error}, cut: ${cut.error}`);
      if (JSON.stringify(whole.frames) !== JSON.stringify(cut.frames)) throw new Error("cut frames differ");
      for (const f of whole.frames) {
        if (Buffer.byteLength(f.data) > limit) throw new Error("a frame over the cap");
      }
    } catch (e) {
      console.error(`sse-fuzz: seed ${first}, run ${runs}, limit ${limit}, input ${bytes.toString("hex")}`);
      console.error(e);
      process.exit(1);
    }
  }
}
console.log(`sse-fuzz: ${runs} runs in ${seconds} s, seed ${first}: ok`);
