// The README's example, run as written against the real `harness serve` (server.js): only the
// package name and the URL are replaced, by the built dist/ and the test server's URL.

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { startServer } from "./server.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));

test("the README's example runs", async (t) => {
  const readme = readFileSync(path.join(HERE, "..", "README.md"), "utf8");
  const block = /## Example\n\n```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "the README has its example");
  // The second answer streams in pieces of at most 8 bytes: 4 text deltas.
  const script = [{ raw: "Hello from the script." }, { raw: "Streamed, piece by piece.", stream: { bytes: 8 } }];
  const server = await startServer(JSON.stringify(script));
  try {
    const dist = pathToFileURL(path.join(HERE, "..", "dist", "index.js")).href;
    let code = block[1].replace('"harness-client"', JSON.stringify(dist));
    code = code.replace('"http://127.0.0.1:8420"', JSON.stringify(server.url));
    assert.notEqual(code, block[1]);
    const logged = [];
    t.mock.method(console, "log", (...args) => logged.push(args.join(" ")));
    const file = server.file("example.mjs", code);
    await import(pathToFileURL(file).href);
    t.mock.restoreAll();
    assert.equal(logged[0], "Hello from the script.");
    assert.equal(logged[1], "true 4");
    assert.equal(logged[2], "CompactWaiterResolved");
    assert.match(logged[3], /^\d+ CompactionCommitted$/);
    assert.equal(logged[4], "4");
    assert.equal(logged.length, 5);
  } finally {
    assert.equal(await server.stop(), 0, server.output());
  }
});
