// The Server-Sent Events framing of GET /v1/sessions/{id}/events, read with bounds.
//
// SseParser takes the body's bytes as they come and hands back whole frames. It holds at most
// one partial line and one partial frame, each at most `limit` bytes: a line (its end included)
// or the lines of one frame together (comments and the blank line that ends it not counted) over
// the limit is ResponseTooLarge at once (a line's end counts as one byte), before more is kept,
// so a stream that never ends a line or a frame cannot make memory grow. A field that is not
// UTF-8 is a ProtocolError. The frames before an error are handed back all the same, so how the
// transport cut the bytes into chunks changes nothing. Lines end with LF, CRLF or a lone CR, as
// the SSE format allows.

import { HarnessError, ProtocolError, ResponseTooLarge } from "./errors.js";

/** One frame: its `event:` name ("message" when it has none), its `id:` (null when it has
 * none) and its `data:` lines joined with "\n". */
export interface Frame {
  name: string;
  id: string | null;
  data: string;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const SPACE = 0x20;

/** The bytes of `parts`, `length` of them in all, as one array. @internal */
export function concatBytes(parts: Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1 && parts[0] !== undefined && parts[0].length === length) return parts[0];
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export class SseParser {
  private readonly limit: number;
  private readonly option: string;
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  // The line read so far (no end seen yet), as the pieces it came in.
  private line: Uint8Array[] = [];
  private lineLength = 0;
  // A CR ended the last line: an LF right after it belongs to that line's end.
  private afterCr = false;
  // The frame read so far.
  private name: string | null = null;
  private id: string | null = null;
  private data: string[] = [];
  private seen = false;
  private frameSize = 0;
  private failure: HarnessError | null = null;

  /** `limit` caps a line and a frame in bytes; `option` names the Client option that raises
   * it, for the error's message. */
  constructor(limit: number, option = "maxEventBytes") {
    this.limit = limit;
    this.option = option;
  }

  /** Whether a frame or a line was begun and not ended: the stream was cut inside it. */
  get partial(): boolean {
    return this.lineLength > 0 || this.seen;
  }

  /** What ended the stream: a line or a frame over the cap (ResponseTooLarge) or a field that
   * is not UTF-8 (ProtocolError); null while there is none. */
  get error(): HarnessError | null {
    return this.failure;
  }

  /** The frames `chunk` completes, in order, up to the first error, which `error` then holds
   * (the frames before it are still returned: how the bytes were cut into chunks changes
   * nothing). Once there is an error, push throws it and reads nothing more. */
  push(chunk: Uint8Array): Frame[] {
    if (this.failure !== null) throw this.failure;
    const frames: Frame[] = [];
    try {
      this.read(chunk, frames);
    } catch (e) {
      if (!(e instanceof HarnessError)) throw e;
      this.failure = e;
      // The bytes held for a line or a frame that will never end are let go now.
      this.line = [];
      this.data = [];
    }
    return frames;
  }

  private read(chunk: Uint8Array, frames: Frame[]): void {
    let start = 0;
    if (this.afterCr && chunk.length > 0) {
      this.afterCr = false;
      if (chunk[0] === LF) start = 1;
    }
    while (start < chunk.length) {
      let end = start;
      while (end < chunk.length && chunk[end] !== LF && chunk[end] !== CR) end++;
      if (end === chunk.length) {
        this.keep(chunk.subarray(start));
        break;
      }
      let next = end + 1;
      if (chunk[end] === CR) {
        if (next < chunk.length) {
          if (chunk[next] === LF) next++;
        } else {
          this.afterCr = true;
        }
      }
      this.keep(chunk.subarray(start, end));
      const line = concatBytes(this.line, this.lineLength);
      this.line = [];
      this.lineLength = 0;
      const frame = this.onLine(line);
      if (frame !== null) frames.push(frame);
      start = next;
    }
  }

  private keep(piece: Uint8Array): void {
    if (piece.length === 0) return;
    // A line of `limit` bytes that has not ended is over the limit once its end comes.
    if (this.lineLength + piece.length >= this.limit) {
      throw new ResponseTooLarge("a line of the event stream", this.limit, this.option, 200);
    }
    // Copied: the transport may reuse the chunk's buffer.
    this.line.push(piece.slice());
    this.lineLength += piece.length;
  }

  private onLine(line: Uint8Array): Frame | null {
    if (line.length === 0) {
      if (!this.seen) return null;
      const frame = { name: this.name ?? "message", id: this.id, data: this.data.join("\n") };
      this.name = null;
      this.id = null;
      this.data = [];
      this.seen = false;
      this.frameSize = 0;
      return frame;
    }
    if (line[0] === COLON) return null; // a comment: the server's keepalive
    // A line's end counts as one byte whether it is LF, CR or CRLF, so that the count does not
    // depend on where the transport cut a CRLF in two.
    this.frameSize += line.length + 1;
    if (this.frameSize > this.limit) {
      throw new ResponseTooLarge("an event of the event stream", this.limit, this.option, 200);
    }
    const colon = line.indexOf(COLON);
    const field = this.text(colon < 0 ? line : line.subarray(0, colon));
    let value = colon < 0 ? new Uint8Array(0) : line.subarray(colon + 1);
    if (value[0] === SPACE) value = value.subarray(1);
    this.seen = true;
    if (field === "event") this.name = this.text(value);
    else if (field === "data") this.data.push(this.text(value));
    else if (field === "id") this.id = this.text(value);
    // Any other field (retry, or one this client does not know) is ignored, as SSE says.
    return null;
  }

  private text(bytes: Uint8Array): string {
    try {
      return this.decoder.decode(bytes);
    } catch {
      throw new ProtocolError("protocol", 200, "a line of the event stream is not UTF-8");
    }
  }
}
