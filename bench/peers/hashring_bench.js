// SPDX-License-Identifier: Apache-2.0
// node `hashring` (npm, the version in tests/compat/node-hashring) with its defaults (md5), as the
// node-hashring preset; WARMUP untimed passes let V8 optimize first.
//
//   NODE_PATH=tests/compat/node-hashring/node_modules node hashring_bench.js NODES KEYS ROUNDS
//     -> "node-hashring\t<ns per key>\t<checksum>"
'use strict';
const fs = require('fs');
const HashRing = require('hashring');

const WARMUP = 10;
const lines = (p) => fs.readFileSync(p, 'utf8').split('\n').filter((l) => l.length > 0);
const nodes = lines(process.argv[2]);
const keys = lines(process.argv[3]);
const rounds = parseInt(process.argv[4], 10);
const index = new Map(nodes.map((n, i) => [n, i]));
const ring = new HashRing(nodes);
let best = Infinity;
let checksum = 0;
const owners = new Array(keys.length);
for (let r = 0; r < WARMUP + rounds; ++r) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < keys.length; ++i) owners[i] = ring.get(keys[i]);
  const ns = Number(process.hrtime.bigint() - t0) / keys.length;
  let sum = 0;
  for (let i = 0; i < keys.length; ++i) sum += index.get(owners[i]) * ((i % 1000) + 1);
  checksum = sum;
  if (r >= WARMUP && ns < best) best = ns;
}
console.log(`node-hashring\t${best.toFixed(2)}\t${checksum}`);
