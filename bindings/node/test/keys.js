// SPDX-License-Identifier: Apache-2.0
// The Node tests' and benchmark's keys, and `chash route` (CHASH_CLI) run on them.
'use strict';

const { execFileSync } = require('child_process');

// n keys as applications name them: "user:i", "session/x/cart", every 10th non-ASCII.
function makeKeys(n) {
  const keys = new Array(n);
  for (let i = 0; i < n; i++) {
    if (i % 10 === 0) keys[i] = `ключ-${i}-ü€😀`;
    else if (i % 10 <= 3) keys[i] = `session/${(i * 31).toString(16)}/cart`;
    else keys[i] = `user:${i}`;
  }
  return keys;
}

// `chash route ARGS` on keys: one node name per key.
function cli(args, keys) {
  const out = execFileSync(process.env.CHASH_CLI || 'chash', ['route', ...args], {
    input: keys.join('\n') + '\n',
    maxBuffer: 1 << 30,
    encoding: 'utf8',
  });
  const lines = out.replace(/\n$/, '').split('\n');
  if (lines.length !== keys.length) throw new Error(`chash route: ${lines.length} lines`);
  return lines;
}

module.exports = { makeKeys, cli };
