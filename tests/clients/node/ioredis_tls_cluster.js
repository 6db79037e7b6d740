// SPDX-License-Identifier: Apache-2.0
// ioredis over TLS to a chash-proxy pool that fronts a Redis Cluster: run by
// tests/proxy/clients_e2e_test.cc (ClientsTlsCluster) as `node ioredis_tls_cluster.js PORT CA`.
// A plain ioredis (not Redis.Cluster) checking the proxy's certificate: its ready check,
// pipelines, MGET/MSET over many slots, MULTI/EXEC on one hash tag. Exits non-zero on failure.
'use strict';
const fs = require('fs');
const Redis = require('ioredis');
const { check, run } = require('./sync');

async function main() {
  const [port, ca] = [Number(process.argv[2]), process.argv[3]];
  const r = new Redis({ host: '127.0.0.1', port, tls: { ca: fs.readFileSync(ca),
                        servername: 'localhost' }, maxRetriesPerRequest: 3 });
  check('ping over tls', await r.ping(), 'PONG');
  const keys = Array.from({ length: 300 }, (_, i) => `ioc:${i}`);
  check('mset over slots', await r.mset(...keys.flatMap((k, i) => [k, String(i)])), 'OK');
  check('mget over slots', await r.mget(...keys), keys.map((_, i) => String(i)));
  const p = r.pipeline();
  for (let i = 0; i < 400; ++i) p.incr(`ioc:n:${i % 40}`);
  check('pipeline', (await p.exec()).slice(-40).map(([e, v]) => [e, v]), Array(40).fill([null, 10]));
  check('multi/exec on one slot',
        await r.multi().set('{u:9}:a', 1).incr('{u:9}:a').get('{u:9}:a').exec(),
        [[null, 'OK'], [null, 2], [null, '2']]);
  await r.quit();
}

run(main);
