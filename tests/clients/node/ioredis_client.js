// SPDX-License-Identifier: Apache-2.0
// ioredis driving chash-proxy: run by tests/proxy/clients_e2e_test.cc as
// `node ioredis_client.js PORT SYNC_DIR`. ioredis' ready check (INFO), CLIENT SETNAME, pipelines,
// MGET/MSET across backends, MULTI/EXEC on tagged keys, WATCH with a conflict, the
// cross-backend refusal, and a proxy restart it must reconnect through. Exits non-zero on any
// failure.
'use strict';
const Redis = require('ioredis');
const { check, restartProxy, run } = require('./sync');

async function main() {
  const [port, syncDir] = [Number(process.argv[2]), process.argv[3]];
  const r = new Redis({ host: '127.0.0.1', port, connectionName: 'ioredis-test',
                        maxRetriesPerRequest: 3, retryStrategy: () => 50 });
  const other = new Redis({ host: '127.0.0.1', port });
  check('ping', await r.ping(), 'PONG');
  check('client getname', await r.client('GETNAME'), 'ioredis-test');

  const keys = Array.from({ length: 200 }, (_, i) => `io:${i}`);
  check('mset', await r.mset(...keys.flatMap((k, i) => [k, String(i)])), 'OK');
  check('mget', await r.mget(...keys), keys.map((_, i) => String(i)));

  const p = r.pipeline();
  for (let i = 0; i < 500; ++i) p.incr(`io:ctr:${i % 50}`);
  const res = await p.exec();
  check('pipeline', res.slice(-50).map(([err, v]) => [err, v]), Array(50).fill([null, 10]));

  check('multi/exec',
        await r.multi().set('{io:1}:a', 100).decrby('{io:1}:a', 30).get('{io:1}:a').exec(),
        [[null, 'OK'], [null, 70], [null, '70']]);

  // WATCH, a conflicting write from another connection, EXEC answers null.
  check('watch', await r.watch('{io:1}:a'), 'OK');
  await other.set('{io:1}:a', 5);
  check('exec after conflict', await r.multi().set('{io:1}:a', 1).exec(), null);
  check('watched key kept', await r.get('{io:1}:a'), '5');
  check('watch again', await r.watch('{io:1}:a'), 'OK');
  check('exec unchanged', await r.multi().incr('{io:1}:a').exec(), [[null, 6]]);

  let refused = '';
  try {
    const tx = r.multi();
    for (let i = 0; i < 20; ++i) tx.set(`spread:${i}`, String(i));  // on all three backends
    await tx.exec();
  } catch (e) {
    refused = e.message;
  }
  check(`cross-backend refused (${refused})`, /EXECABORT|one backend/.test(refused), true);

  await restartProxy(syncDir);
  // ioredis sees the close, reconnects (retryStrategy) and replays what it had queued.
  check('get after restart', await r.get('io:7'), '7');
  check('multi/exec after restart', await r.multi().incr('{io:2}:n').incr('{io:2}:n').exec(),
        [[null, 1], [null, 2]]);
  r.disconnect();
  other.disconnect();
}

run(main);
