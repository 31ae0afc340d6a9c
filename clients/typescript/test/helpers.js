// What several tests share: a history to start a loop from, a seeded random source, the items
// of a stream up to one, and the parser run over bytes cut into chunks.

import { SseParser } from "../dist/index.js";

/** `turns` exchanges of a user's request and an assistant's answer, in the transcript codec. */
export function history(turns) {
  const messages = [];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: "user", blocks: [{ type: "text", text: `Request ${i}: edit src/app.cc.` }] });
    messages.push({ role: "assistant", blocks: [{ type: "text", text: `Edited, step ${i}.` }], usage: null });
  }
  return messages;
}

/** A random source in [0, 1) that is the same for the same seed (Park and Miller's). */
export function seeded(seed) {
  let state = seed % 2147483647 || 1;
  return () => {
    state = (state * 48271) % 2147483647;
    return state / 2147483647;
  };
}

/** The frames an SseParser with cap `limit` reads from `bytes` pushed in the chunks `cuts`
 * (offsets) makes, and the kind of the error that stopped it (null when none did). */
export function parseChunked(bytes, cuts, limit) {
  const parser = new SseParser(limit);
  const frames = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    frames.push(...parser.push(bytes.subarray(at, cut)));
    at = cut;
    if (parser.error !== null) break;
  }
  return { frames, error: parser.error };
}

/** The items of `stream` up to and including the first that `predicate` accepts. */
export async function take(stream, predicate) {
  const taken = [];
  for await (const item of stream) {
    taken.push(item);
    if (predicate(item)) return taken;
  }
  throw new Error(`the stream ended first: ${JSON.stringify(stream.end)}`);
}
