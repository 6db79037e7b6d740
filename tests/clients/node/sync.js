// SPDX-License-Identifier: Apache-2.0
// Shared by the Node client scripts: checks, and the proxy-restart handshake with
// tests/proxy/clients_e2e_test.cc (write SYNC_DIR/restart-me, wait for SYNC_DIR/restarted).
'use strict';
const fs = require('fs');
const path = require('path');
const assert = require('assert');

let lastStep = 'the start';

function check(what, got, want) {
  assert.deepStrictEqual(got, want, what);
  console.log('ok', what);
  lastStep = what;
}

// Runs a script's main(): 'done' when it finished, 'FAILED' and exit 1 when it threw. Node exits
// with 0 when nothing is left to wait for, even with main() still awaiting a promise that can no
// longer settle (a client's socket gone): that is a failure too, named after the last check.
function run(main) {
  let finished = false;
  process.on('exit', (code) => {
    if (!finished && code === 0) {
      console.error(`FAILED: node ran out of work after '${lastStep}' with main() unfinished ` +
                    '(a promise that never settled)');
      process.exitCode = 1;
    }
  });
  main().then(() => {
    finished = true;
    console.log('done');
  }, (e) => {
    console.error('FAILED', e);
    process.exit(1);
  });
}

async function restartProxy(syncDir) {
  fs.writeFileSync(path.join(syncDir, 'restart-me'), '');
  const deadline = Date.now() + 20000;
  while (!fs.existsSync(path.join(syncDir, 'restarted'))) {
    if (Date.now() > deadline) throw new Error('the test did not restart the proxy');
    await new Promise((r) => setTimeout(r, 20));
  }
}

module.exports = { check, restartProxy, run };
