// The package as npm publishes it: `npm pack` holds only the compiled dist/, the README, the
// LICENSE and package.json, and what package.json's exports and types name is in it; the
// tarball installs in another project, where it is imported and type-checked by its name.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const PACKAGE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

test("npm pack holds only dist, README and LICENSE, and what exports names", () => {
  // --ignore-scripts: the build ran before the tests; --dry-run writes no tarball.
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: PACKAGE,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const files = JSON.parse(out)[0].files.map((f) => f.path).sort();
  for (const file of files) {
    assert.match(file, /^(dist\/[a-z]+\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/, file);
  }
  for (const needed of ["LICENSE", "README.md", "dist/index.js", "dist/index.d.ts", "dist/sse.js"]) {
    assert.ok(files.includes(needed), `${needed} is packed`);
  }
  const pkg = JSON.parse(readFileSync(path.join(PACKAGE, "package.json"), "utf8"));
  assert.equal(pkg.type, "module");
  assert.equal(pkg.license, "Apache-2.0");
  assert.equal(pkg.dependencies, undefined);
  assert.match(pkg.engines.node, />=\s*20/);
  assert.ok(files.includes(pkg.exports["."].import.replace(/^\.\//, "")));
  assert.ok(files.includes(pkg.exports["."].types.replace(/^\.\//, "")));
  assert.equal(pkg.types, pkg.exports["."].types);
  for (const [name, version] of Object.entries(pkg.devDependencies)) {
    assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is pinned exactly`);
  }
});

test("the packed tarball installs and is imported and type-checked by its name", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "harness-client-consumer-"));
  try {
    const run = (cmd, args) =>
      execFileSync(cmd, args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", dir], { cwd: PACKAGE, stdio: "ignore" });
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", type: "module", private: true }));
    // No dependency to fetch: the tarball is the whole install.
    run("npm", ["install", "--offline", "--no-audit", "--no-fund", "./harness-client-0.1.0.tgz"]);
    const names = run("node", ["-e", 'import("harness-client").then((m) => console.log(Object.keys(m).sort().join(" ")))']);
    const exported = ["Client", "EventStream", "AnswerStream", "HarnessError", "ResponseTooLarge", "NoAnswer", "SseParser"];
    for (const name of [...exported, "CompactionRejected"]) {
      assert.ok(names.split(" ").includes(name), `${name} in ${names}`);
    }
    writeFileSync(
      path.join(dir, "use.ts"),
      [
        'import { Client, HarnessError, type Answer, type HarnessEvent } from "harness-client";',
        "const client = new Client(undefined, { timeoutMs: 100 });",
        'export async function f(): Promise<Answer | HarnessEvent | string> {',
        '  try { return await client.ask("s", "l", "hi"); } catch (e) { return e instanceof HarnessError ? e.kind : ""; }',
        "}",
        "export async function g(): Promise<string> {",
        '  let text = "";',
        '  for await (const piece of client.askStream("s", "l", "hi")) text += typeof piece === "string" ? piece : piece.text;',
        '  for await (const item of client.events("s", { textDeltas: true })) if (item.kind === "text_delta") text += item.text;',
        "  // Without textDeltas the items' type holds no TextDelta.",
        '  // @ts-expect-error',
        '  for await (const item of client.events("s")) if (item.kind === "text_delta") text += "";',
        '  const done = await client.compactConversation("openai", [], { keepRecentSegments: 1, store: true });',
        "  return text + done.report.retainedElements + (done.sessionId ?? \"\");",
        "}",
        "",
      ].join("\n"),
    );
    const tsc = path.join(PACKAGE, "node_modules", "typescript", "bin", "tsc");
    run("node", [tsc, "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--strict",
      "--noEmit", "--types", "node", "--typeRoots", path.join(PACKAGE, "node_modules", "@types"), "use.ts"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
