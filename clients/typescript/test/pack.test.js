// The package as npm publishes it: `npm pack` holds only the compiled dist/, the README, the
// LICENSE and package.json, and what package.json's exports and types name is in it.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
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
