# SPDX-License-Identifier: Apache-2.0
"""redis-py (Debian's python3-redis) driving chash-proxy: run by tests/proxy/clients_e2e_test.cc.

Usage: redis_py_client.py PORT SYNC_DIR. Pipelines, MGET/MSET across backends, transactions on
hash-tagged keys (MULTI/EXEC and the WATCH retry loop), the cross-backend refusal, then a
proxy restart (SYNC_DIR/restart-me, wait for SYNC_DIR/restarted) that the client must survive.
Prints one line per step; any failure raises (exit status 1).
"""
import os
import sys
import time

import redis

port, sync = int(sys.argv[1]), sys.argv[2]
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, client_name="py-test")


def check(what, got, want):
    if got != want:
        raise SystemExit(f"{what}: got {got!r}, want {want!r}")
    print("ok", what)


check("ping", r.ping(), True)
name = r.client_getname()
check("client getname", name.decode() if isinstance(name, bytes) else name, "py-test")
check("client id", isinstance(r.client_id(), int), True)

# MSET / MGET across the three backends (the proxy splits and merges them).
pairs = {f"py:{i}": str(i * i) for i in range(200)}
check("mset", r.mset(pairs), True)
check("mget", r.mget(list(pairs)), [v.encode() for v in pairs.values()])

# A non-transactional pipeline: 500 commands in one write.
p = r.pipeline(transaction=False)
for i in range(500):
    p.incr(f"py:ctr:{i % 50}")
res = p.execute()
check("pipeline", res[-50:], [10] * 50)

# MULTI/EXEC on tagged keys (redis-py sends MULTI ... EXEC in one write).
p = r.pipeline(transaction=True)
p.set("{acct:1}:a", 100).set("{acct:1}:b", 0).decrby("{acct:1}:a", 30).incrby("{acct:1}:b", 30)
check("multi/exec", p.execute(), [True, True, 70, 30])


# The WATCH retry loop (redis-py's Redis.transaction), with a conflicting writer the first time.
calls = []


def move(pipe):
    a = int(pipe.get("{acct:1}:a"))
    if not calls:
        r.set("{acct:1}:a", a + 1000)  # another connection changes the watched key
    calls.append(a)
    pipe.multi()
    pipe.set("{acct:1}:a", a - 10)
    pipe.incrby("{acct:1}:b", 10)


out = r.transaction(move, "{acct:1}:a", "{acct:1}:b")
check("watch retried after a conflict", (len(calls), out), (2, [True, 40]))
check("watch result", r.get("{acct:1}:a"), b"1060")

# Keys on different backends in one transaction: refused, EXECABORT.
p = r.pipeline(transaction=True)
for i in range(20):
    p.set(f"spread:{i}", i)
try:
    p.execute()
    raise SystemExit("a cross-backend transaction was not refused")
except redis.exceptions.ResponseError as e:
    check("cross-backend refused", "must map to one backend" in str(e) or "EXECABORT" in str(e),
          True)

# The proxy restarts: the client's pooled connection is closed by the proxy; the next commands
# must work after redis-py reconnects (at most one ConnectionError is tolerated, as a client
# without retries sees it).
open(os.path.join(sync, "restart-me"), "w").close()
deadline = time.time() + 20
while not os.path.exists(os.path.join(sync, "restarted")):
    if time.time() > deadline:
        raise SystemExit("the test did not restart the proxy")
    time.sleep(0.02)
errors = 0
for attempt in range(2):
    try:
        check("get after restart", r.get("py:7"), b"49")
        break
    except redis.exceptions.ConnectionError:
        errors += 1
check("reconnected", errors <= 1, True)
p = r.pipeline(transaction=True)
p.incr("{acct:2}:n").incr("{acct:2}:n")
check("multi/exec after restart", p.execute(), [1, 2])
print("done")
