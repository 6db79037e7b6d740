# SPDX-License-Identifier: Apache-2.0
"""redis-py over TLS to a chash-proxy pool that fronts a Redis Cluster: run by
tests/proxy/clients_e2e_test.cc (ClientsTlsCluster). Usage: redis_py_tls_cluster.py PORT CA.

A plain (not cluster-aware) redis-py client verifying the proxy's certificate against CA:
pipelines, MGET/MSET over many slots, a transaction and a WATCH on one hash tag, the cluster's
CROSSSLOT refusal. Prints one line per step; any failure raises (exit status 1).
"""
import sys

import redis

port, ca = int(sys.argv[1]), sys.argv[2]
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, ssl=True, ssl_ca_certs=ca,
                ssl_cert_reqs="required", client_name="py-tls")


def check(what, got, want):
    if got != want:
        raise SystemExit(f"{what}: got {got!r}, want {want!r}")
    print("ok", what)


check("ping over tls", r.ping(), True)
pairs = {f"pyc:{i}": str(i) for i in range(300)}
check("mset over slots", r.mset(pairs), True)
check("mget over slots", r.mget(list(pairs)), [v.encode() for v in pairs.values()])
p = r.pipeline(transaction=False)
for i in range(400):
    p.incr(f"pyc:n:{i % 40}")
check("pipeline", p.execute()[-40:], [10] * 40)
p = r.pipeline(transaction=True)
p.set("{user:7}:a", 5).incrby("{user:7}:a", 2).get("{user:7}:a")
check("multi/exec on one slot", p.execute(), [True, 7, b"7"])
out = r.transaction(lambda pipe: (pipe.multi(), pipe.incr("{user:7}:a")), "{user:7}:a")
check("watch on one slot", out, [8])
try:
    r.rename("pyc:1", "pyc:2")
    raise SystemExit("CROSSSLOT was not refused")
except redis.exceptions.ResponseError as e:
    check("crossslot", str(e), "CROSSSLOT Keys in request don't hash to the same slot")
print("done")
