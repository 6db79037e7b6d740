// SPDX-License-Identifier: Apache-2.0
// The drop-in HashRing against the real npm hashring 3.2.0 (a devDependency) on 100,000 keys,
// and against `chash route --preset node-hashring`.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const PeerRing = require('hashring');
const { HashRing } = require('..');
const { makeKeys, cli } = require('./keys');

const KEYS = makeKeys(100000);

function servers(n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(`10.0.${Math.floor(i / 250)}.${(i % 250) + 1}:11211`);
  return out;
}

function assertSame(mine, peer, keys, what) {
  const all = mine.getAll(keys);
  for (let i = 0; i < keys.length; i++) {
    const want = peer.get(keys[i]);
    if (mine.get(keys[i]) !== want || all[i] !== want) {
      assert.fail(`${what}: key ${keys[i]}: get ${mine.get(keys[i])}, getAll ${all[i]}, hashring ${want}`);
    }
  }
}

for (const n of [1, 10, 100, 1000]) {
  test(`100k keys as hashring and chash route, ${n} servers`, () => {
    const list = servers(n);
    const mine = new HashRing(list);
    assertSame(mine, new PeerRing(list), KEYS, `${n} servers`);
    const viaCli = cli(['--preset', 'node-hashring', '--nodes', list.join(',')], KEYS);
    const all = mine.getAll(KEYS);
    for (let i = 0; i < KEYS.length; i++) assert.strictEqual(all[i], viaCli[i], KEYS[i]);
    mine.end();
  });
}

test('weights, vnode count, add and remove as hashring', () => {
  const keys = KEYS.slice(0, 20000);
  const weighted = { '10.0.0.1:11211': 1, '10.0.0.2:11211': 3, '10.0.0.3:11211': 2 };
  assertSame(new HashRing(weighted), new PeerRing(weighted), keys, 'weighted');
  const list = servers(20);
  const opts = { 'vnode count': 100 };
  assertSame(new HashRing(list, 'md5', opts), new PeerRing(list, 'md5', opts), keys, 'vnodes');
  const mine = new HashRing(list.slice(0, 5));
  const peer = new PeerRing(list.slice(0, 5));
  mine.add(list.slice(5, 8));
  peer.add(list.slice(5, 8));
  assertSame(mine, peer, keys, 'after add');
  mine.remove(list[2]);
  peer.remove(list[2]);
  assertSame(mine, peer, keys, 'after remove');
  assert.strictEqual(mine.has(list[2]), false);
  assert.strictEqual(mine.has(list[3]), true);
  mine.end();
  assert.strictEqual(mine.get('k'), undefined);
});

test('what it cannot reproduce is refused, not routed differently', () => {
  assert.throws(() => new HashRing(['a'], () => 1), TypeError);
  assert.throws(() => new HashRing(['a'], 'md5', { replicas: 3 }), TypeError);
  assert.throws(() => new HashRing(['a'], 'md5', { compatibility: 'hash_ring' }), TypeError);
  assert.throws(() => new HashRing({ a: { vnodes: 3 } }), TypeError);
  assert.throws(() => new HashRing(42), TypeError);
  assert.throws(() => new HashRing(['a'], 'no-such-hash'), (e) => e.code && e.code.startsWith('CHASH_ERR_'));
});
