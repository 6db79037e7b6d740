// SPDX-License-Identifier: Apache-2.0
// Shared by the Node client scripts: checks, and the proxy-restart handshake with
// tests/proxy/clients_e2e_test.cc (write SYNC_DIR/restart-me, wait for SYNC_DIR/restarted).
'use strict';
const fs = require('fs');
const path = require('path');
const assert = require('assert');

function check(what, got, want) {
  assert.deepStrictEqual(got, want, what);
  console.log('ok', what);
}

async function restartProxy(syncDir) {
  fs.writeFileSync(path.join(syncDir, 'restart-me'), '');
  const deadline = Date.now() + 20000;
  while (!fs.existsSync(path.join(syncDir, 'restarted'))) {
    if (Date.now() > deadline) throw new Error('the test did not restart the proxy');
    await new Promise((r) => setTimeout(r, 20));
  }
}

module.exports = { check, restartProxy };
