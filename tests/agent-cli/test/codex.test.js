// Codex CLI, as a user installs it from npm (@openai/codex, pinned in ../package.json), runs
// headless tasks (`codex exec`) through `harness serve --upstream` to the local llama.cpp server
// and its tiny random-weight model: no OpenAI account, no network beyond 127.0.0.1.
//
// Codex is configured the way a user points it at any Responses-compatible server: a model
// provider whose base URL is harness. The provider is named "azure", the name for which Codex
// compacts remotely: when its context passes `model_auto_compact_token_limit` it sends the
// history to POST /v1/responses ending in a `compaction_trigger` item and expects one
// `compaction` item back, which it keeps in place of the history and sends on every later
// request. harness answers that item with its own summary (readable, journaled, undoable) and,
// on the later requests, gives the upstream model the summary text in its place
// (docs/spec/gateway.md). The turn after the compaction can only succeed if it does: llama-server
// refuses an input item of a type it does not know.
//
// Codex's own network features (plugins, apps, update checks, analytics) are turned off below;
// with them off, `strace -f -e connect` of these runs shows connections to 127.0.0.1 only.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { startHarness, startLlama } from "../../sdk/test/servers.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CODEX = path.join(HERE, "..", "node_modules", ".bin", "codex");
const RUN_MS = 180_000;

let llama;
let harness;
let home;
let work;

/** `codex exec ...args` in the work directory; resolves with its exit code and output. */
function codex(...args) {
  return new Promise((resolve) => {
    const env = { ...process.env, CODEX_HOME: home, HARNESS_AGENT_TEST_KEY: llama.key };
    for (const name of Object.keys(env)) if (name.startsWith("OPENAI_")) delete env[name];
    const child = spawn(CODEX, [
      "exec", "--skip-git-repo-check",
      "--disable", "plugins", "--disable", "apps", "--disable", "remote_plugin",
      "--disable", "plugin_sharing", "--disable", "in_app_updates",
      "-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false",
      ...args,
    ], { cwd: work, env, stdio: ["ignore", "pipe", "pipe"] });
    const out = [];
    child.stdout.on("data", (c) => out.push(c.toString("utf8")));
    child.stderr.on("data", (c) => out.push(c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_MS);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, output: out.join("") });
    });
  });
}

/** Every line of Codex's rollout files (its own record of the session), parsed. */
function rolloutRecords() {
  const records = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.startsWith("rollout-") && name.endsWith(".jsonl"))
        for (const line of readFileSync(full, "utf8").split("\n")) if (line.trim()) records.push(JSON.parse(line));
    }
  };
  walk(path.join(home, "sessions"));
  return records;
}

before(async () => {
  // Codex's first request (its instructions and tool list) is about 5k tokens of this model's
  // vocabulary: a 32k context with one slot holds it and the turns after it.
  llama = await startLlama({ context: 32768, parallel: 1 });
  harness = await startHarness(`${llama.url}/v1`);
  home = mkdtempSync(path.join(tmpdir(), "harness-codex-home-"));
  work = mkdtempSync(path.join(tmpdir(), "harness-codex-work-"));
  mkdirSync(path.join(home, "sessions"), { recursive: true });
  writeFileSync(path.join(home, "config.toml"), [
    'model = "tiny-gpt2"',
    'model_provider = "azure"',
    "model_context_window = 30000",
    // Past this many tokens of context Codex compacts before its next turn: the first turn alone
    // passes it, so the second one starts with a compaction.
    "model_auto_compact_token_limit = 3000",
    "[model_providers.azure]",
    'name = "azure"',
    `base_url = "${harness.url}/v1"`,
    'env_key = "HARNESS_AGENT_TEST_KEY"',
    'wire_api = "responses"',
    "",
  ].join("\n"));
});

after(async () => {
  const code = harness ? await harness.stop() : 0;
  if (llama) await llama.stop();
  for (const dir of [home, work]) if (dir) rmSync(dir, { recursive: true, force: true });
  assert.equal(code, 0, "harness serve exits 0 on SIGTERM");
});

test("codex exec answers through harness, then compacts through it and goes on", async () => {
  const first = await codex("Write a haiku about compaction.");
  assert.equal(first.code, 0, `the first turn:\n${first.output}`);

  const second = await codex("resume", "--last", "Now one about journals.");
  assert.equal(second.code, 0, `the second turn, after a compaction:\n${second.output}`);
  assert.doesNotMatch(second.output, /Error running remote compact task/);

  // Codex recorded the compaction: its replacement history ends in the compaction item harness
  // wrote, whose content is harness's summary, readable.
  const compacted = rolloutRecords().filter((r) => r.type === "compacted");
  assert.equal(compacted.length, 1, "one compaction in Codex's rollout");
  const replacement = compacted[0].payload.replacement_history;
  const item = replacement.at(-1);
  assert.equal(item.type, "compaction");
  const content = JSON.parse(item.encrypted_content);
  assert.match(content.summary, /^<conversation_summary>/, "the compaction item carries harness's summary, readable");

  // Codex sends `store: false` with every request, and harness honours it: the compaction
  // left no session behind (docs/spec/gateway.md §2.4).
  const sessions = await (await fetch(`${harness.url}/v1/sessions`)).json();
  assert.deepEqual(sessions.sessions, [], JSON.stringify(sessions));

  const third = await codex("resume", "--last", "And one about undo.");
  assert.equal(third.code, 0, `the turn after the compaction, whose input holds the compaction item:\n${third.output}`);
});
