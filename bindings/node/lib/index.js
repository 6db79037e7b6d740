// SPDX-License-Identifier: Apache-2.0
// chash for Node (docs/BINDINGS.md): Router (lib/router.js) and the drop-in HashRing for the npm
// package hashring (lib/hashring.js), both over the N-API addon and libchash_c.
'use strict';

const { Router, native } = require('./router');
const { HashRing } = require('./hashring');

module.exports = { Router, HashRing, version: native.version, presets: native.presets };
