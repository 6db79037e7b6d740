// SPDX-License-Identifier: Apache-2.0
// A drop-in for the npm package hashring 3.2.0 (`new HashRing(servers)` then `ring.get(key)`):
// the same server for every key, from libchash's "node-hashring" preset (checked key for key
// against the real package in test/hashring.test.js).
//
//   // before: const HashRing = require('hashring');
//   const { HashRing } = require('chash');
//   const ring = new HashRing(['10.0.0.1:11211', '10.0.0.2:11211']);
//   ring.get('user:42');
//
// What it covers: servers as a string, an array or an object of weights ({server: weight}, in
// Object.keys order as hashring reads it), the md5 default, options['vnode count'], get, add,
// remove, has, end — and getAll(keys), many keys in one native call. What hashring has and this
// refuses with a TypeError rather than route differently: a custom hash function, per-server
// vnodes ({server: {vnodes}}), the 'replicas', 'compatibility' and 'default port' options. range()
// and swap() are not provided. There is no cache to size: 'max cache size' is ignored.
'use strict';

const { Router } = require('./router');

function toServers(servers) {
  if (typeof servers === 'string') return { [servers]: 1 };
  if (Array.isArray(servers)) {
    const out = {};
    for (const s of servers) {
      if (typeof s !== 'string') throw new TypeError('chash HashRing: a server is a string');
      out[s] = 1;
    }
    return out;
  }
  if (servers && typeof servers === 'object') {
    const out = {};
    for (const [s, w] of Object.entries(servers)) {
      if (typeof w === 'object' && w !== null) {
        if ('vnodes' in w) throw new TypeError('chash HashRing: per-server vnodes are not supported');
        out[s] = 'weight' in w ? +w.weight : 1;
      } else {
        out[s] = +w;
      }
    }
    return out;
  }
  throw new TypeError('chash HashRing: servers must be a string, an array or an object');
}

class HashRing {
  constructor(servers, algorithm, options) {
    options = options || {};
    if (typeof algorithm === 'function') {
      throw new TypeError('chash HashRing: a custom hash function cannot run in libchash');
    }
    for (const o of ['replicas', 'compatibility', 'default port']) {
      if (o in options) throw new TypeError(`chash HashRing: option '${o}' is not supported`);
    }
    this._spec = { preset: 'node-hashring', options: [] };
    // hashring's algorithm is a node crypto name ('md5'); the preset takes it as its hash.
    if (algorithm && algorithm !== 'md5') this._spec.hash = algorithm;
    if ('vnode count' in options) this._spec.options.push(['vnodes', options['vnode count']]);
    this._servers = toServers(servers);
    this._router = null;
    this._rebuild();
  }

  _rebuild() {
    const next = Object.keys(this._servers).length
      ? new Router(Object.assign({}, this._spec, { nodes: this._servers }))
      : null;
    if (this._router) this._router.close();
    this._router = next;
  }

  /** The server for key, or undefined when the ring is empty (as hashring). */
  get(key) {
    if (!this._router) return undefined;
    const s = this._router.route(String(key));
    return s === null ? undefined : s;
  }

  /** get() for many keys in one native call. */
  getAll(keys) {
    if (!this._router) return keys.map(() => undefined);
    return this._router.routeAll(keys.map(String));
  }

  /** Adds servers (ones already there are kept as they are); returns this, as hashring. */
  add(servers) {
    const add = toServers(servers);
    const next = Object.assign({}, this._servers);
    for (const s of Object.keys(add)) if (!(s in next)) next[s] = add[s];
    const before = this._servers;
    this._servers = next;
    try {
      this._rebuild();
    } catch (e) {
      this._servers = before;
      throw e;
    }
    return this;
  }

  /** Removes a server; returns this. */
  remove(server) {
    if (!(server in this._servers)) return this;
    const next = Object.assign({}, this._servers);
    delete next[server];
    this._servers = next;
    this._rebuild();
    return this;
  }

  /** Whether server is on the ring. */
  has(server) {
    return server in this._servers && this._servers[server] > 0;
  }

  /** Frees the native router; the ring routes nothing afterwards. */
  end() {
    if (this._router) this._router.close();
    this._router = null;
    this._servers = {};
    return this;
  }
}

module.exports = { HashRing };
