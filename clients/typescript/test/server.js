// The real `harness serve` for the client's tests: on 127.0.0.1 port 0, over a temporary SQLite
// data directory, with a scripted model (docs/scripted.md). The binary is $HARNESS_BINARY, else
// the first of the repository's build directories that has one. Tests wait for what the server
// prints and for its exit, never for a fixed time; the bounds below only end a broken run.

import { spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const START_MS = 60_000;
const STOP_MS = 60_000;

export function harnessBinary() {
  if (process.env.HARNESS_BINARY) {
    accessSync(process.env.HARNESS_BINARY, constants.X_OK); // says why at once when it is not
    return process.env.HARNESS_BINARY;
  }
  for (const build of ["build-asan", "build-release", "build"]) {
    const candidate = path.join(ROOT, build, "harness");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // the next one
    }
  }
  throw new Error("no harness binary: build one (cmake --build build-asan --target harness) or set HARNESS_BINARY");
}

/** A script of plain answers, one a model call. */
export function answers(...texts) {
  return JSON.stringify(texts.map((raw) => ({ raw })));
}

/** One `harness serve` process over its own temporary directory. `url` is its base URL once
 * started; `output()` what it printed. */
export class Server {
  constructor(script, ...extra) {
    this.dir = mkdtempSync(path.join(tmpdir(), "harness-tsclient-"));
    this.script = path.join(this.dir, "script.json");
    writeFileSync(this.script, script);
    this.extra = extra;
    this.lines = [];
    this.url = "";
  }

  /** Writes a file into the server's directory and returns its path. */
  file(name, text) {
    const p = path.join(this.dir, name);
    writeFileSync(p, text);
    return p;
  }

  async start() {
    const args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", path.join(this.dir, "data"),
      "--model", `m=scripted:${this.script}`, ...this.extra];
    this.process = spawn(harnessBinary(), args, { stdio: ["ignore", "pipe", "pipe"] });
    // "exit", or "error" when the process could not be started (then no "exit" comes).
    this.exited = new Promise((resolve) => {
      this.process.on("exit", (code, signal) => resolve(code ?? signal));
      this.process.on("error", (e) => {
        this.lines.push(String(e));
        resolve(`not started: ${e.message}`);
      });
    });
    let pending = "";
    const ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("harness serve did not start:\n" + this.output())), START_MS);
      const take = (chunk) => {
        pending += chunk.toString("utf8");
        let nl;
        while ((nl = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          this.lines.push(line);
          const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        }
      };
      this.process.stdout.on("data", take);
      this.process.stderr.on("data", (chunk) => this.lines.push(chunk.toString("utf8")));
      this.exited.then(() => {
        clearTimeout(timer);
        reject(new Error("harness serve exited:\n" + this.output()));
      });
    });
    this.url = await ready;
    return this;
  }

  output() {
    return this.lines.join("\n");
  }

  /** SIGTERM, and the exit code (0 for a clean stop). */
  async stop() {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill("SIGTERM");
    let timer;
    const code = await Promise.race([
      this.exited,
      new Promise((resolve) => (timer = setTimeout(() => resolve("did not stop"), STOP_MS))),
    ]);
    clearTimeout(timer);
    if (code === "did not stop") this.process.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
    return code;
  }
}

export async function startServer(script, ...extra) {
  return new Server(script, ...extra).start();
}
