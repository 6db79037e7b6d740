// SPDX-License-Identifier: Apache-2.0
// chash's Router for Node: routing as `chash route`, batches, replicas, changes, errors.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { Router, version, presets } = require('..');
const { makeKeys, cli } = require('./keys');

const NODES = ['10.0.0.1:11211', '10.0.0.2:11211', '10.0.0.3:11211', '10.0.0.4:11211'];

test('routes as chash route for a preset, an algorithm and a ring spec', () => {
  const keys = makeKeys(20000);
  const ringSpec = 'points={name}#VN{i}; vnodes=150; hash=guava-long';
  for (const [spec, args] of [
    [{ preset: 'ketama' }, ['--preset', 'ketama']],
    [{ algorithm: 'maglev' }, ['--algo', 'maglev']],
    [{ ring: ringSpec }, ['--ring', ringSpec]],
    [{ algorithm: 'ring', options: { vnodes: 40 } }, ['--algo', 'ring', '--vnodes', '40']],
  ]) {
    const r = new Router({ ...spec, nodes: NODES });
    const want = cli([...args, '--nodes', NODES.join(',')], keys);
    assert.deepStrictEqual(r.routeAll(keys), want, JSON.stringify(spec));
    for (let i = 0; i < keys.length; i += 97) {
      assert.strictEqual(r.route(keys[i]), want[i]);
      assert.strictEqual(r.route(Buffer.from(keys[i])), want[i]);
    }
    r.close();
  }
});

test('a batch equals single calls; long and empty keys; Buffers', () => {
  const r = new Router({ algorithm: 'ring', hash: 'md5', nodes: [{ name: 'a' }, { name: 'b', weight: 2 }, 'c'] });
  const keys = makeKeys(2000);
  keys[4] = '';
  keys[5] = 'x'.repeat(5000);
  keys[6] = 'ü'.repeat(300); // 600 bytes: past the inline buffer
  keys[7] = Buffer.from([0, 1, 2, 255]);
  const idx = r.routeAllIndexes(keys);
  assert.ok(idx instanceof Int32Array);
  for (let i = 0; i < keys.length; i++) assert.strictEqual(idx[i], r.routeIndex(keys[i]), String(i));
  assert.strictEqual(r.route('ü'.repeat(300)), r.route(Buffer.from('ü'.repeat(300))));
  assert.deepStrictEqual(r.routeAll([]), []);
  assert.throws(() => r.routeAll(['a', 5]), TypeError);
  assert.throws(() => r.route({}), TypeError);
  assert.throws(() => r.routeAll('abc'), TypeError);
});

test('keys that cannot be routed are null', () => {
  const r = new Router({ preset: 'nginx-ip-hash', nodes: ['a', 'b'] });
  assert.strictEqual(r.route('not an address'), null);
  assert.strictEqual(r.routeIndex('not an address'), -1);
  const idx = r.routeAllIndexes(['nope', '10.1.2.3']);
  assert.strictEqual(idx[0], -1);
  assert.ok(idx[1] >= 0);
});

test('replicas are distinct and start with the owner', () => {
  const r = new Router({ preset: 'ketama', nodes: NODES });
  for (const k of makeKeys(200)) {
    const rep = r.replicas(k, 3);
    assert.strictEqual(rep.length, 3);
    assert.strictEqual(rep[0], r.route(k));
    assert.strictEqual(new Set(rep).size, 3);
    assert.strictEqual(r.replicas(k, 10).length, 4);
  }
  assert.throws(() => r.replicas('k', -1), TypeError);
});

test('changes return new routers and leave the old one', () => {
  const keys = makeKeys(5000);
  const r = new Router({ preset: 'ketama', nodes: NODES });
  const before = r.routeAll(keys);
  const removed = r.withoutNode('10.0.0.2:11211');
  const added = r.withNode('10.0.0.5:11211', 2);
  const fresh = new Router({ preset: 'ketama', nodes: [...NODES.map((name) => ({ name })), { name: '10.0.0.5:11211', weight: 2 }] });
  assert.deepStrictEqual(added.routeAll(keys), fresh.routeAll(keys));
  assert.deepStrictEqual(removed.nodes, ['10.0.0.1:11211', '10.0.0.3:11211', '10.0.0.4:11211']);
  assert.strictEqual(added.weight(4), 2);
  assert.throws(() => added.weight('4'), TypeError);
  const after = removed.routeAll(keys);
  let moved = 0;
  for (let i = 0; i < keys.length; i++) {
    if (before[i] === '10.0.0.2:11211') moved++;
    else assert.strictEqual(after[i], before[i]);
  }
  assert.ok(moved > 0);
  assert.deepStrictEqual(r.routeAll(keys), before);
  const drained = new Router({ algorithm: 'ring', nodes: ['a', 'b'] }).withWeight('b', 0);
  assert.strictEqual(drained.route('anything'), 'a');
});

test('bad specs and nodes throw with libchash\'s code and message', () => {
  assert.throws(() => new Router({ preset: 'ketamaa', nodes: NODES }),
    (e) => e.code === 'CHASH_ERR_PARSE' && e.errno === 7 && /ketamaa/.test(e.message));
  assert.throws(() => new Router({ preset: 'ketama', nodes: [] }), { code: 'CHASH_ERR_EMPTY_NODE_SET' });
  assert.throws(() => new Router({ preset: 'ketama', nodes: ['a', 'a'] }), { code: 'CHASH_ERR_DUPLICATE_NODE' });
  assert.throws(() => new Router({ nodes: ['a'] }), (e) => e.code.startsWith('CHASH_ERR_'));
  assert.throws(() => new Router({ algorithm: 'ring', options: { vnodes: 'many' }, nodes: ['a'] }), /vnodes/);
  assert.throws(() => new Router({ algorithm: 'ring', options: { nope: 1 }, nodes: ['a'] }), { code: 'CHASH_ERR_INVALID_ARGUMENT' });
  assert.throws(() => new Router({ ring: 'points={name; hash=nope', nodes: ['a'] }), (e) => e.code.startsWith('CHASH_ERR_'));
  assert.throws(() => new Router({ algorithm: 'ring', nodes: [{ name: 'a', weight: -1 }] }), TypeError);
  assert.throws(() => new Router({ algorithm: 'ring', nodes: [{ name: 'a', weight: 1.5 }] }), TypeError);
  assert.throws(() => new Router({ algorithm: 'ring', nodes: [7] }), TypeError);
  assert.throws(() => new Router({ algorithm: 'ring', nodes: 'a' }), TypeError);
  assert.throws(() => new Router(), TypeError);
  const r = new Router({ preset: 'ketama', nodes: NODES });
  assert.throws(() => r.withoutNode('nope'), { code: 'CHASH_ERR_UNKNOWN_NODE' });
  assert.throws(() => r.withNode(NODES[0]), { code: 'CHASH_ERR_DUPLICATE_NODE' });
  assert.throws(() => r.withNode(5), TypeError);
  r.close();
  r.close();
  assert.throws(() => r.route('k'), /closed/);
  assert.throws(() => r.routeAll(['k']), /closed/);
});

test('node names round-trip; version and presets', () => {
  const names = ['ü-node', '節点', 'with space'];
  const r = new Router({ algorithm: 'rendezvous', nodes: names });
  assert.deepStrictEqual(r.nodes, names);
  assert.ok(names.includes(r.route('k')));
  assert.match(version(), /^\d+\.\d+\.\d+$/);
  assert.ok(presets().includes('node-hashring'));
  assert.match(new Router({ preset: 'ketama', nodes: NODES }).describe(), /ketama/);
});
