# SPDX-License-Identifier: Apache-2.0
"""pymemcache (Debian's python3-pymemcache) driving chash-proxy's memcache pool: run by
tests/proxy/clients_e2e_test.cc.

Usage: pymemcache_client.py PORT SYNC_DIR. set/get, get_many/set_many across backends, cas,
incr, delete, then a proxy restart (SYNC_DIR/restart-me, wait for SYNC_DIR/restarted) that the
client must survive. Any failure exits non-zero.
"""
import os
import sys
import time

from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheUnexpectedCloseError

port, sync = int(sys.argv[1]), sys.argv[2]
c = Client(("127.0.0.1", port), connect_timeout=5, timeout=5)


def check(what, got, want):
    if got != want:
        raise SystemExit(f"{what}: got {got!r}, want {want!r}")
    print("ok", what)


check("set", c.set("mc:a", b"1"), True)
check("get", c.get("mc:a"), b"1")
values = {f"mc:{i}": str(i).encode() for i in range(200)}
check("set_many", c.set_many(values), [])
check("get_many", c.get_many(list(values)), values)
check("incr", c.incr("mc:5", 10), 15)
value, token = c.gets("mc:6")
check("gets", value, b"6")
check("cas", c.cas("mc:6", b"sixty", token), True)
check("cas again (stale)", c.cas("mc:6", b"x", token), False)
check("delete", c.delete("mc:7", noreply=False), True)
check("get deleted", c.get("mc:7"), None)

open(os.path.join(sync, "restart-me"), "w").close()
deadline = time.time() + 20
while not os.path.exists(os.path.join(sync, "restarted")):
    if time.time() > deadline:
        raise SystemExit("the test did not restart the proxy")
    time.sleep(0.02)
errors = 0
for attempt in range(2):
    try:
        check("get after restart", c.get("mc:6"), b"sixty")
        break
    except (MemcacheUnexpectedCloseError, ConnectionError, OSError):
        errors += 1  # pymemcache closes its socket and connects again on the next call
check("reconnected", errors <= 1, True)
check("get_many after restart", c.get_many(["mc:1", "mc:2"]), {"mc:1": b"1", "mc:2": b"2"})
print("done")
