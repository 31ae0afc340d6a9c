// The JavaScript tokenizers the C++ BPE is checked and measured against (docs/tokenizer.md).
//
//   node tools/tiktoken_oracle.js DIR LIBRARY ENCODING INPUT OUTPUT
//     Encodes INPUT (UTF-8) as ordinary text and writes the token ids to OUTPUT as little-endian
//     uint32. LIBRARY is js-tiktoken (encode(text, [], []): special-token strings are text) or
//     tiktoken (the WASM build of OpenAI's Rust tokenizer, encode_ordinary). DIR holds the
//     node_modules that scripts/fetch-tokenizers installed.
//   node tools/tiktoken_oracle.js DIR LIBRARY ENCODING INPUT --time RUNS
//     Encodes INPUT once to warm up, then RUNS times, timing only the encode calls; prints one
//     JSON line {"library","encoding","bytes","tokens","seconds":[...]}.
'use strict';
const fs = require('fs');
const path = require('path');

function usage(message) {
  process.stderr.write(`tiktoken_oracle: ${message}\n`);
  process.exit(2);
}

const [dir, library, encoding, input, output, runsArg] = process.argv.slice(2);
if (!dir || !library || !encoding || !input || !output) usage('missing arguments');

function load(name) {
  try {
    return require(path.join(dir, 'node_modules', name));
  } catch (e) {
    usage(`cannot load ${name} from ${dir}/node_modules (run scripts/fetch-tokenizers): ${e.message}`);
  }
  return null;
}

let encode;
if (library === 'js-tiktoken') {
  const enc = load('js-tiktoken').getEncoding(encoding);
  encode = (text) => enc.encode(text, [], []);
} else if (library === 'tiktoken') {
  const enc = load('tiktoken').get_encoding(encoding);
  encode = (text) => enc.encode_ordinary(text);
} else {
  usage(`unknown library ${library}`);
}

const bytes = fs.readFileSync(input);
const text = bytes.toString('utf8');

if (output === '--time') {
  const runs = Number(runsArg || '3');
  let ids = encode(text);
  const seconds = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    ids = encode(text);
    seconds.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  process.stdout.write(JSON.stringify({library, encoding, bytes: bytes.length,
                                       tokens: ids.length, seconds}) + '\n');
} else {
  const ids = encode(text);
  const out = Buffer.alloc(ids.length * 4);
  for (let i = 0; i < ids.length; i++) out.writeUInt32LE(ids[i], i * 4);
  fs.writeFileSync(output, out);
}
