// The servers the SDK tests talk to, all on 127.0.0.1: the pinned llama-server with its tiny
// random-weight model (scripts/llama-server builds both into $HARNESS_LLAMA_DIR; docs/local-model.md)
// and, in front of it, `harness serve --upstream` over a temporary data directory. The harness
// binary is found as the TypeScript client's tests find it: $HARNESS_BINARY, else the first of
// the repository's build directories that has one.
// Tests wait for what a server prints or answers, never for a fixed time; the bounds below only
// end a broken run.
//
//   const stack = await startStack();          // llama-server + harness serve --upstream
//   const client = new OpenAI({ apiKey: stack.key, baseURL: stack.harness.url + "/v1" });
//   ...
//   await stack.stop();
//
// The llama-server's API key is fresh for each stack: a request without it is refused by the
// upstream, which is how the tests see the caller's credential pass through harness.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import OpenAI from "openai";
import { harnessBinary } from "../../../clients/typescript/test/server.js";

const START_MS = 120_000;
const STOP_MS = 30_000;

function llamaDir() {
  const dir = process.env.HARNESS_LLAMA_DIR;
  if (!dir) throw new Error("HARNESS_LLAMA_DIR is not set: run scripts/llama-server and export the directory it prints");
  for (const file of ["llama-server", "tiny-gpt2.gguf"]) accessSync(path.join(dir, file), constants.R_OK);
  return dir;
}

/** A free loopback port: bound, read and released (the caller retries if another takes it). */
async function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** One child process whose output is kept; `exited` settles with its exit code or signal. */
class Child {
  constructor(command, args, env) {
    this.lines = [];
    this.process = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env });
    this.exited = new Promise((resolve) => {
      this.process.on("exit", (code, signal) => resolve(code ?? signal));
      this.process.on("error", (e) => {
        this.lines.push(String(e));
        resolve(`not started: ${e.message}`);
      });
    });
    this.process.stderr.on("data", (chunk) => this.lines.push(chunk.toString("utf8")));
  }

  output() {
    return this.lines.join("");
  }

  /** SIGTERM, then SIGKILL after STOP_MS; the exit code or signal. */
  async stop() {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGTERM");
    let timer;
    const code = await Promise.race([
      this.exited,
      new Promise((resolve) => (timer = setTimeout(() => resolve("did not stop"), STOP_MS))),
    ]);
    clearTimeout(timer);
    if (code === "did not stop") {
      this.process.kill("SIGKILL");
      await this.exited;
    }
    return code;
  }
}

/** llama-server on a free port with a fresh API key, once GET /health answers 200; `context`
 * tokens of context shared by `parallel` slots (an agent CLI's first request alone is about 5k). */
export async function startLlama({ context = 4096, parallel = 2 } = {}) {
  const dir = llamaDir();
  const key = randomBytes(16).toString("hex");
  // The caller's LLAMA_* variables would change the server under test; the key goes in the
  // environment, not on a command line every process can read.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("LLAMA_")));
  env.LLAMA_API_KEY = key;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const child = new Child(path.join(dir, "llama-server"), [
      "-m", path.join(dir, "tiny-gpt2.gguf"), "--host", "127.0.0.1", "--port", String(port),
      "-c", String(context), "-np", String(parallel), "-t", "1", "--no-webui", "--chat-template", "chatml",
    ], env);
    child.process.stdout.on("data", (chunk) => child.lines.push(chunk.toString("utf8")));
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + START_MS;
    let exited = false;
    child.exited.then(() => (exited = true));
    while (!exited && Date.now() < deadline) {
      try {
        const health = await fetch(`${url}/health`);
        if (health.status === 200) return { url, key, stop: () => child.stop(), output: () => child.output() };
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100)); // polling a process we do not control
    }
    await child.stop();
    if (!/bind|address already in use/i.test(child.output()))
      throw new Error(`llama-server did not become ready:\n${child.output()}`);
  }
  throw new Error("llama-server: no free port after 3 attempts");
}

/** `harness serve --listen 127.0.0.1:0 --upstream UPSTREAM ...extra` over a temporary data
 * directory; `url` once it prints `listening on`. */
export async function startHarness(upstream, ...extra) {
  const dir = mkdtempSync(path.join(tmpdir(), "harness-sdk-"));
  const args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", path.join(dir, "data"), ...extra];
  if (upstream) args.push("--upstream", upstream);
  const child = new Child(harnessBinary(), args, process.env);
  let pending = "";
  const stdout = [];
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("harness serve did not start:\n" + child.output())), START_MS);
    child.process.stdout.on("data", (chunk) => {
      pending += chunk.toString("utf8");
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        stdout.push(line);
        const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      }
    });
    child.exited.then(() => {
      clearTimeout(timer);
      reject(new Error("harness serve exited:\n" + child.output()));
    });
  });
  return {
    url,
    dataDir: path.join(dir, "data"),
    output: () => stdout.join("\n") + "\n" + child.output(),
    async stop() {
      const code = await child.stop();
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}

/** llama-server, and harness in front of it: `key` is the upstream's API key. */
export async function startStack(...extra) {
  const llama = await startLlama();
  let harness;
  try {
    harness = await startHarness(`${llama.url}/v1`, ...extra);
  } catch (e) {
    await llama.stop();
    throw e;
  }
  return {
    llama,
    harness,
    key: llama.key,
    async stop() {
      const code = await harness.stop();
      await llama.stop();
      return code;
    },
  };
}

/** A stack for the suite (describe block) it is called in: started before its first test,
 * stopped after its last, which checks that harness exited 0 (under ASan, a leak fails it).
 * `fixture.stack` is the stack once started, `fixture.openai` an `openai` client of it;
 * `fixture.client(Sdk, path)` a client of another SDK class with the upstream's key and harness's
 * URL + path as its base URL, no retries. */
export function stackFixture(...extra) {
  const fixture = {
    stack: undefined,
    openai: undefined,
    client(Sdk, path = "") {
      return new Sdk({ apiKey: fixture.stack.key, baseURL: `${fixture.stack.harness.url}${path}`, maxRetries: 0 });
    },
  };
  before(async () => {
    fixture.stack = await startStack(...extra);
    fixture.openai = fixture.client(OpenAI, "/v1");
  });
  after(async () => {
    if (fixture.stack) assert.equal(await fixture.stack.stop(), 0);
  });
  return fixture;
}
