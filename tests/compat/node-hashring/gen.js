#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Writes tests/compat/vectors/node-hashring__*.tsv with the real npm package `hashring`
// (installed here by generate.sh from package-lock.json).
//
// Every key of keys.hex is used: hashring hashes `key + ''` with crypto's update(string), i.e.
// the key's UTF-8 bytes, so keys are passed as the string they decode to (all keys of keys.hex
// are valid UTF-8; one that is not would be skipped and counted on stderr). Each case adds the
// point names "<node>-0" .. "<node>-3" and "<node>-28" as keys: they hash exactly onto ring
// points, where find() (the first point >= the key) decides.
'use strict';

const fs = require('fs');
const path = require('path');
const HashRing = require('hashring');

const compat = path.dirname(__dirname);
const peer = process.env.PEER || 'hashring ' + HashRing.version;

function loadKeys() {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const keys = [];
  let skipped = 0;
  for (const line of fs.readFileSync(path.join(compat, 'keys.hex'), 'utf8').split('\n')) {
    const hex = line.trim();
    if (!hex) continue;
    try {
      keys.push([hex, decoder.decode(Buffer.from(hex, 'hex'))]);
    } catch (e) {
      skipped++;
    }
  }
  if (skipped) console.error(`node-hashring: skipped ${skipped} keys that are not UTF-8`);
  return keys;
}

function hosts(n, port = 11211) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(`10.0.${Math.floor(i / 250)}.${(i % 250) + 1}:${port}`);
  return out;
}

// The servers argument as a user writes it: a list when every weight is 1, else the object
// form {server: weight} (whose Object.keys order puts array-index names first).
function servers(nodes, weights) {
  if (nodes.every((n) => (weights[n] || 1) === 1)) return nodes.slice();
  const obj = {};
  for (const n of nodes) obj[n] = weights[n];
  return obj;
}

function withPointKeys(keys, nodes, extra = []) {
  const have = new Set(keys.map(([hex]) => hex));
  const out = keys.slice();
  const names = [];
  for (const n of nodes) {
    for (const i of [0, 1, 2, 3, 28]) names.push(`${n}-${i}`);
  }
  for (const k of names.concat(extra)) {
    const hex = Buffer.from(k, 'utf8').toString('hex');
    if (!have.has(hex)) out.push([hex, k]);
  }
  return out;
}

// How many keys the peer places on a position two points share (the first in sorted order wins).
function tiedKeys(ring, keys) {
  const counts = new Map();
  for (const node of ring.ring) counts.set(node.value, (counts.get(node.value) || 0) + 1);
  let tied = 0;
  for (const [, key] of keys) {
    if (counts.get(ring.ring[ring.find(ring.hashValue(key))].value) > 1) tied++;
  }
  return tied;
}

function write(c, allKeys) {
  const options = {};
  if (c.vnodes !== undefined) options['vnode count'] = c.vnodes;
  // A cache larger than the key set: each key is computed once (cached answers are the same).
  const keys = withPointKeys(allKeys, c.nodes, c.extraKeys);
  options['max cache size'] = keys.length + 1;
  const ring = new HashRing(servers(c.nodes, c.weights), 'md5', options);
  const replicas = c.replicas || 1;
  const ties = tiedKeys(ring, keys);
  if (c.tie && ties === 0) throw new Error(`${c.name}: no key lands on a tied position`);
  const out = [`# peer: ${peer}`, '# command: tests/compat/node-hashring/generate.sh',
    '# keys: keys.hex, then the point names <node>-0..3 and <node>-28', '@preset node-hashring'];
  if (c.vnodes !== undefined) out.push(`@option vnodes ${c.vnodes}`);
  if (replicas > 1) out.push(`@option replicas ${replicas}`);
  for (const n of c.nodes) out.push(`@node ${n} ${c.weights[n] || 1}`);
  for (const [hex, key] of keys) {
    const got = replicas === 1 ? [ring.get(key)] : ring.range(key, replicas);
    if (got.length !== Math.min(replicas, c.nodes.length) || got.some((g) => !g)) {
      throw new Error(`${c.name}: no node for key ${hex}`);
    }
    out.push(hex + '\t' + got.join('\t'));
  }
  const file = path.join(compat, 'vectors', `node-hashring__${c.name}.tsv`);
  fs.writeFileSync(file, out.join('\n') + '\n');
  console.error(`wrote ${file} (${keys.length} keys, ${ties} on tied points)`);
}

const keys = loadKeys();
const five = ['cache-a', 'cache-b', 'cache-c', 'cache-d', 'cache-e'];
const cases = [
  { name: 'one', nodes: hosts(1), weights: {} },
  { name: 'two', nodes: hosts(2), weights: {} },
  { name: 'five', nodes: five, weights: {} },
  { name: 'weighted', nodes: five,
    weights: { 'cache-a': 1, 'cache-b': 2, 'cache-c': 1, 'cache-d': 3, 'cache-e': 5 } },
  { name: 'many', nodes: hosts(50), weights: {} },
  { name: 'many-weighted', nodes: hosts(50),
    weights: Object.fromEntries(hosts(50).map((h, i) => [h, 1 + (i % 7)])) },
  // Names are hashed as written: without the 'default port' option a default port stays in.
  { name: 'names', nodes: ['10.0.0.1', '10.0.0.2:11211', '10.0.0.3:11212', 'memcache-4',
    '[::1]:11211'], weights: {} },
  // Two nodes with a shared point (found by search: md5("node-546-28") and md5("node-699-28")
  // share their first four bytes): the node listed first owns it (stable sort, find() >=).
  { name: 'tie', nodes: ['node-546', 'node-699'], weights: {}, tie: true },
  // Object.keys() order puts array-index names ("7", "12") first: it decides ties. Below, "s20"
  // (26 digests) and "2028" (53 digests) share a point (md5("s20-6") cut 0 = md5("2028-0") cut
  // 1; "s20-6" is a key), and Object.keys() lists "2028" first though it is written second.
  { name: 'index-names', nodes: ['b', '12', 'a', '7', '3x'],
    weights: { b: 2, 12: 1, a: 1, 7: 3, '3x': 1 } },
  { name: 'index-tie', nodes: ['s20', '2028'], weights: { s20: 1, 2028: 2 }, tie: true,
    extraKeys: ['s20-6'] },
  { name: 'vnodes160', nodes: hosts(5), weights: {}, vnodes: 160 },
  { name: 'vnodes-small', nodes: five,
    weights: { 'cache-a': 1, 'cache-b': 3, 'cache-c': 1, 'cache-d': 2, 'cache-e': 1 }, vnodes: 7 },
  { name: 'replicas3', nodes: hosts(7), weights: {}, replicas: 3 },
  { name: 'replicas-all', nodes: five, weights: { 'cache-b': 2 }, replicas: 5 },
];
for (const c of cases) write(c, keys);
