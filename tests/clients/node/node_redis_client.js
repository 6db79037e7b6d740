// SPDX-License-Identifier: Apache-2.0
// node-redis (the `redis` package) driving chash-proxy: run by tests/proxy/clients_e2e_test.cc
// as `node node_redis_client.js PORT SYNC_DIR`. Its connect handshake (CLIENT SETINFO,
// CLIENT SETNAME), pipelines (auto-pipelined commands), MGET/MSET across backends, MULTI/EXEC
// on tagged keys, WATCH with a conflict, the cross-backend refusal, and a proxy restart it must
// reconnect through. Exits non-zero on any failure.
'use strict';
const { createClient } = require('redis');
const { check, restartProxy, run } = require('./sync');

async function main() {
  const [port, syncDir] = [Number(process.argv[2]), process.argv[3]];
  const url = `redis://127.0.0.1:${port}`;
  const r = createClient({ url, name: 'node-redis-test',
                           socket: { reconnectStrategy: () => 50 } });
  const other = createClient({ url });
  r.on('error', () => {});  // reconnects are expected during the restart
  other.on('error', () => {});
  await r.connect();
  await other.connect();
  check('ping', await r.ping(), 'PONG');
  check('client getname', await r.clientGetName(), 'node-redis-test');

  const keys = Array.from({ length: 200 }, (_, i) => `nr:${i}`);
  check('mset', await r.mSet(keys.map((k, i) => [k, String(i)])), 'OK');
  check('mget', await r.mGet(keys), keys.map((_, i) => String(i)));

  // Commands issued together go out as one pipeline.
  const res = await Promise.all(Array.from({ length: 500 }, (_, i) => r.incr(`nr:ctr:${i % 50}`)));
  check('pipeline', res.slice(-50), Array(50).fill(10));

  check('multi/exec',
        await r.multi().set('{nr:1}:a', '100').decrBy('{nr:1}:a', 30).get('{nr:1}:a').exec(),
        ['OK', 70, '70']);

  // WATCH needs an isolated connection in node-redis (executeIsolated); a conflicting write
  // makes EXEC answer null, which node-redis raises as a WatchError.
  let watchError = '';
  try {
    await r.executeIsolated(async (iso) => {
      await iso.watch('{nr:1}:a');
      await other.set('{nr:1}:a', '5');
      await iso.multi().set('{nr:1}:a', '1').exec();
    });
  } catch (e) {
    watchError = e.constructor.name;
  }
  check('exec after conflict', watchError, 'WatchError');
  check('watched key kept', await r.get('{nr:1}:a'), '5');
  check('exec unchanged', await r.executeIsolated(async (iso) => {
    await iso.watch('{nr:1}:a');
    return iso.multi().incr('{nr:1}:a').exec();
  }), [6]);

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
  // node-redis reconnects (reconnectStrategy) and sends what was queued meanwhile.
  check('get after restart', await r.get('nr:7'), '7');
  check('multi/exec after restart', await r.multi().incr('{nr:2}:n').incr('{nr:2}:n').exec(),
        [1, 2]);
  // The second client reconnects too (its default strategy) before it quits: a QUIT sent while
  // it is still reconnecting resolved at once and its reconnect then opened a connection that
  // kept node running after 'done' (1 run in ~30 under load).
  check('second client after restart', await other.get('nr:7'), '7');
  await r.quit();
  await other.quit();
}

run(main);
