// SPDX-License-Identifier: Apache-2.0
// chash for Node's Router, a thin layer over the N-API addon (src/chash_node.cc) and through it
// libchash_c. Keys route exactly as `chash route`, chash-proxy and the C++ chash::Router route
// them for the same spec; nothing is hashed in JavaScript.
'use strict';

const path = require('path');

// The addon: CHASH_NODE_ADDON (the build tree's tests and benchmark) or node-gyp's build/.
const native = require(process.env.CHASH_NODE_ADDON ||
  path.join(__dirname, '..', 'build', 'Release', 'chash.node'));

// nodes: ['a', 'b'] (weight 1 each), [{name, weight}], or {name: weight} (in Object.keys order).
function splitNodes(nodes) {
  const names = [];
  const weights = [];
  if (Array.isArray(nodes)) {
    for (const n of nodes) {
      if (typeof n === 'string') {
        names.push(n);
        weights.push(1);
      } else if (n && typeof n.name === 'string') {
        names.push(n.name);
        weights.push(n.weight === undefined ? 1 : n.weight);
      } else {
        throw new TypeError('chash: a node is a name or {name, weight}');
      }
    }
  } else if (nodes && typeof nodes === 'object') {
    for (const name of Object.keys(nodes)) {
      names.push(name);
      weights.push(nodes[name]);
    }
  } else {
    throw new TypeError('chash: nodes must be an array or an object of weights');
  }
  return [names, weights];
}

class Router {
  /**
   * new Router({preset | algorithm | ring, hash, hashTag, options, nodes}): options are the
   * other flags of `chash route` without dashes, {vnodes: 100} or [['preset-option', 'k=v']].
   * Throws an Error whose .code is libchash's CHASH_ERR_* name for a spec it refuses.
   */
  constructor(spec, nativeRouter) {
    if (nativeRouter) {
      this._native = nativeRouter;
    } else {
      if (!spec || typeof spec !== 'object') throw new TypeError('chash: new Router(spec)');
      let options = spec.options || [];
      if (!Array.isArray(options)) options = Object.entries(options);
      const [names, weights] = splitNodes(spec.nodes);
      this._native = new native.NativeRouter(
        { preset: spec.preset, algorithm: spec.algorithm, ring: spec.ring, hash: spec.hash,
          hashTag: spec.hashTag, options: options.map(([k, v]) => [String(k), String(v)]) },
        names, weights);
    }
    // Node names by index: the addon answers with an index, the name is a lookup here.
    this._names = this._native.nodeNames();
  }

  /** The owner of key (a string, hashed as UTF-8, or a Buffer), or null. */
  route(key) {
    const i = this._native.route(key);
    return i < 0 ? null : this._names[i];
  }

  /** The owner's index in nodes, or -1. */
  routeIndex(key) {
    return this._native.route(key);
  }

  /** The owners of many keys in one native call. */
  routeAll(keys) {
    const idx = this._native.routeBatch(keys);
    const out = new Array(idx.length);
    for (let i = 0; i < idx.length; i++) out[i] = idx[i] < 0 ? null : this._names[idx[i]];
    return out;
  }

  /** The owners' indexes of many keys (Int32Array, -1 for none) in one native call. */
  routeAllIndexes(keys) {
    return this._native.routeBatch(keys);
  }

  /** Up to n distinct nodes for key in preference order, the owner first. */
  replicas(key, n) {
    return Array.from(this._native.routeN(key, n), (i) => this._names[i]);
  }

  /** A new Router with name added (this one is unchanged). */
  withNode(name, weight = 1) {
    return new Router(null, this._native.addNode(name, weight));
  }

  /** A new Router without name (later nodes move down one index). */
  withoutNode(name) {
    return new Router(null, this._native.removeNode(name));
  }

  /** A new Router where name has weight. */
  withWeight(name, weight) {
    return new Router(null, this._native.setWeight(name, weight));
  }

  /** The node names in index order. */
  get nodes() {
    return this._names.slice();
  }

  /** Node index's weight. */
  weight(index) {
    return this._native.weight(index);
  }

  /** "preset ketama", "maglev (xxh3)". */
  describe() {
    return this._native.describe();
  }

  /** Frees the native router now (the garbage collector would, later); it throws afterwards. */
  close() {
    this._native.close();
  }
}

module.exports = { Router, splitNodes, native };
