# SPDX-License-Identifier: Apache-2.0
"""redis-py (Debian's python3-redis 4.3) using Pub/Sub and client-side caching through
chash-proxy in front of three redis-servers: run by tests/proxy/clients_e2e_test.cc.

Usage: redis_py_pubsub.py PORT. Channels spread over the backends meet their publishers;
a pattern gets each message once and the keyspace notifications of every backend (the test
turned them on at the servers); PUBSUB NUMSUB / NUMPAT are the pool's; then redis-py 4's
client-side caching: CLIENT TRACKING on REDIRECT to a connection subscribed to
__redis__:invalidate, whose invalidation messages name every key written after a read.
Prints one line per step; any failure raises (exit status 1).
"""
import sys
import time

import redis

port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)


def check(what, got, want):
    if got != want:
        raise SystemExit(f"{what}: got {got!r}, want {want!r}")
    print("ok", what)


def drain(p, want, kind, seconds=5.0):
    """The next `want` messages of type `kind` on pubsub `p` (`seconds` at most)."""
    got, end = [], time.time() + seconds
    while len(got) < want and time.time() < end:
        m = p.get_message(timeout=0.2)
        if m is not None and m["type"] == kind:
            got.append(m)
    return got


p = r.pubsub()
channels = [f"news:{i}" for i in range(30)]
p.subscribe(*channels)
p.psubscribe("alert.*", "__keyspace@0__:csc:*")
check("subscribed", len(drain(p, 30, "subscribe")) + len(drain(p, 2, "psubscribe")), 32)
check("numsub", r.pubsub_numsub("news:0", "news:29"), [(b"news:0", 1), (b"news:29", 1)])
check("numpat", r.pubsub_numpat(), 2)
for c in channels:
    check(f"publish {c}", r.publish(c, "hello " + c), 1)
got = drain(p, 30, "message")
check("messages", sorted(m["channel"].decode() for m in got), sorted(channels))
for i in range(10):
    r.publish(f"alert.{i}", "x")
got = drain(p, 10, "pmessage")
check("pattern messages", sorted(m["channel"].decode() for m in got),
      sorted(f"alert.{i}" for i in range(10)))
for i in range(20):
    r.set(f"csc:{i}", "v")
got = drain(p, 20, "pmessage")
check("keyspace notifications", sorted(m["channel"].decode() for m in got),
      sorted(f"__keyspace@0__:csc:{i}" for i in range(20)))
check("nothing twice", drain(p, 1, "pmessage", 0.5) + drain(p, 1, "message", 0.5), [])
p.close()

# Client-side caching, redis-py 4's way: a listener subscribed to __redis__:invalidate, and
# CLIENT TRACKING on REDIRECT <the listener's id> on the caching connection.
listener = r.pubsub()
listener.execute_command("CLIENT", "ID")
listener_id = listener.parse_response(block=True)
listener.subscribe("__redis__:invalidate")
check("listener subscribed", drain(listener, 1, "subscribe")[0]["channel"], b"__redis__:invalidate")
cache = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, single_connection_client=True)
check("tracking on", cache.client_tracking_on(clientid=listener_id) in (True, b"OK"), True)
keys = [f"csc:{i}" for i in range(20)]
check("reads", [cache.get(k) for k in keys], [b"v"] * 20)
for k in keys:
    r.set(k, "w")
seen = []
for m in drain(listener, 20, "message"):
    seen.extend(k.decode() for k in m["data"])
    if len(seen) >= 20:
        break
end = time.time() + 5
while len(seen) < 20 and time.time() < end:
    for m in drain(listener, 1, "message"):
        seen.extend(k.decode() for k in m["data"])
check("invalidations", sorted(seen), sorted(keys))
check("tracking off", cache.client_tracking_off() in (True, b"OK"), True)
listener.close()
print("done")
