// SPDX-License-Identifier: Apache-2.0
// The Node binding next to the npm package hashring in one process (bench/bindings/run.sh,
// docs/BENCHMARKS.md): on the same keys, alternating round by round, hashring's per-key get loop,
// the drop-in's per-key get loop (one N-API call each) and its getAll (one call for all keys).
// Each round's answers are compared with hashring's. hashring keeps an LRU cache of 5000 keys:
// every pass walks 100,000 distinct keys, so it misses, as a cache of many distinct keys does.
'use strict';

const path = require('path');
const nodeDir = path.join(__dirname, '..', '..', '..', 'bindings', 'node');
const PeerRing = require(path.join(nodeDir, 'node_modules', 'hashring'));
const { HashRing } = require(nodeDir);

const ROUNDS = 9;
const count = +(process.argv[2] || 100000);
const keys = [];
for (let i = 0; i < count; i++) keys.push(i % 10 === 0 ? `ключ-${i}-ü€` : `user:${i}`);

// The least time of the rounds: the round least disturbed by the other processes on this shared
// machine (docs/BENCHMARKS.md, "The machine").
const least = (v) => Math.min(...v);
const now = () => process.hrtime.bigint();

for (const n of [10, 100, 1000]) {
  const servers = [];
  for (let i = 0; i < n; i++) servers.push(`10.0.${Math.floor(i / 250)}.${(i % 250) + 1}:11211`);
  const peer = new PeerRing(servers);
  const mine = new HashRing(servers);
  const want = new Array(count);
  const got = new Array(count);
  const tp = [], ts = [], tb = [];
  for (let r = -2; r < ROUNDS; r++) {
    const t0 = now();
    for (let i = 0; i < count; i++) want[i] = peer.get(keys[i]);
    const t1 = now();
    for (let i = 0; i < count; i++) got[i] = mine.get(keys[i]);
    const t2 = now();
    const all = mine.getAll(keys);
    const t3 = now();
    for (let i = 0; i < count; i++) {
      if (got[i] !== want[i] || all[i] !== want[i]) {
        throw new Error(`${n} servers: key ${keys[i]}: ${got[i]} / ${all[i]}, hashring ${want[i]}`);
      }
    }
    if (r >= 0) {
      tp.push(Number(t1 - t0) / count);
      ts.push(Number(t2 - t1) / count);
      tb.push(Number(t3 - t2) / count);
    }
  }
  const p = least(tp), s = least(ts), b = least(tb);
  console.log(`| Node | hashring | ${n} | ${p.toFixed(0)} | ${s.toFixed(0)} | ${(p / s).toFixed(2)}× | ${b.toFixed(0)} | ${(p / b).toFixed(1)}× |`);
  mine.end();
}
