#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Prints, for each line of keys.hex on stdin, "<key hex>\t<slot>" as the npm package
// cluster-key-slot (used by ioredis) computes it; the key is passed as a Buffer (its exact bytes).
'use strict';

const fs = require('fs');
const calculateSlot = require('cluster-key-slot');

const out = [];
for (const line of fs.readFileSync(0, 'utf8').split('\n')) {
  const hex = line.trim();
  if (hex) out.push(hex + '\t' + calculateSlot(Buffer.from(hex, 'hex')));
}
process.stdout.write(out.join('\n') + '\n');
