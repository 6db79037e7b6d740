#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/compat/vectors/redis-cluster__*.tsv from real Redis Cluster nodes.

    cluster.py WORKDIR

For each case it starts redis-server instances in cluster mode on free 127.0.0.x ports (config,
logs and a pid file per node in WORKDIR), makes a cluster of them as an operator does —
`redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`, or, for one node, CLUSTER
ADDSLOTSRANGE 0 16383 (redis-cli refuses fewer than 3 masters; one master can only hold every
slot) — and then, for every key of keys.hex:
  - asks CLUSTER KEYSLOT (the authority) and checks it against cluster-key-slot (npm; its
    disagreements are reported, not fatal) and against the slot of any MOVED redirect;
  - SETs the key through the first node, following MOVED redirects as `redis-cli -c` does, and
    records the node that accepted the write (and checks it is the owner CLUSTER SLOTS names).
Every server is stopped (SIGTERM, then SIGKILL) before the next case and on any error; the
calling generate.sh also kills whatever pid files remain.
"""
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
import testports  # noqa: E402  (tests/testports.py)
COMPAT = os.path.dirname(HERE)
PEER = os.environ.get("PEER", "redis-server")


# ---- A minimal RESP client (loopback only) ---------------------------------------------------
class Conn:
    def __init__(self, host, port):
        assert host.startswith("127."), host  # never any other address
        self.sock = socket.create_connection((host, port), timeout=10)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return (kind.decode(), rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ValueError(f"bad reply {line!r}")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._reply()


# ---- Servers -----------------------------------------------------------------------------------
def free_port(host):
    """A port free on `host` whose cluster bus port (+10000) is free too, both below the ephemeral
    range (tests/testports.py says why)."""
    return testports.free_port(host, also=(10000,))


class Server:
    def __init__(self, workdir, host):
        self.host = host
        self.port = free_port(host)
        self.dir = os.path.join(workdir, f"{host}-{self.port}")
        os.makedirs(self.dir)
        args = ["redis-server", "--bind", host, "--port", str(self.port),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-announce-ip", host, "--dir", self.dir, "--save", "",
                "--appendonly", "no", "--daemonize", "no",
                "--logfile", os.path.join(self.dir, "redis.log")]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        self.pidfile = os.path.join(workdir, f"server-{self.port}.pid")
        with open(self.pidfile, "w") as f:
            f.write(str(self.proc.pid))

    @property
    def name(self):
        return f"{self.host}:{self.port}"

    def wait_ready(self):
        for _ in range(100):  # 10 s
            try:
                c = Conn(self.host, self.port)
                ok = c.call("PING") == ("+", "PONG")
                c.close()
                if ok:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server {self.name} exited; see {self.dir}/redis.log")
            time.sleep(0.1)
        raise RuntimeError(f"redis-server {self.name} did not answer")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if os.path.exists(self.pidfile):
            os.remove(self.pidfile)


# ---- One case ----------------------------------------------------------------------------------
def cluster_info(s):
    c = Conn(s.host, s.port)
    info = c.call("CLUSTER", "INFO").decode()
    c.close()
    return dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)


def wait_cluster_ok(servers):
    for _ in range(300):  # 30 s
        if all(cluster_info(s).get("cluster_state") == "ok" for s in servers):
            return
        time.sleep(0.1)
    raise RuntimeError("cluster did not reach cluster_state:ok")


def slot_owners(s):
    """CLUSTER SLOTS of node s as a 16384-entry list of 'ip:port'."""
    c = Conn(s.host, s.port)
    reply = c.call("CLUSTER", "SLOTS")
    c.close()
    owners = [None] * 16384
    for entry in reply:
        first, last, master = entry[0], entry[1], entry[2]
        name = f"{master[0].decode()}:{master[1]}"
        for slot in range(first, last + 1):
            owners[slot] = name
    assert None not in owners, "not every slot is assigned"
    return owners


def run_case(case, hosts, workdir, keys, npm_slots):
    servers = []
    try:
        for h in hosts:
            servers.append(Server(workdir, h))
        for s in servers:
            s.wait_ready()
        if len(servers) == 1:
            c = Conn(servers[0].host, servers[0].port)
            assert c.call("CLUSTER", "ADDSLOTSRANGE", 0, 16383) == ("+", "OK")
            c.close()
        else:
            out = subprocess.run(
                ["redis-cli", "--cluster", "create", *[s.name for s in servers],
                 "--cluster-replicas", "0", "--cluster-yes"],
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
            if out.returncode != 0 or "[OK] All 16384 slots covered" not in out.stdout:
                raise RuntimeError(f"redis-cli --cluster create failed:\n{out.stdout}{out.stderr}")
            ranges = [l.strip() for l in out.stdout.splitlines() if "Master[" in l]
            print(f"{case}: redis-cli: " + "; ".join(ranges), file=sys.stderr)
        wait_cluster_ok(servers)
        owners = slot_owners(servers[0])
        for s in servers[1:]:
            if slot_owners(s) != owners:
                raise RuntimeError(f"{case}: nodes disagree on CLUSTER SLOTS")

        conns = {s.name: Conn(s.host, s.port) for s in servers}
        entry = conns[servers[0].name]
        lines, npm_disagree, moved = [], [], 0
        for hexkey in keys:
            key = bytes.fromhex(hexkey)
            slot = entry.call("CLUSTER", "KEYSLOT", key)
            if npm_slots[hexkey] != slot:
                npm_disagree.append((hexkey, slot, npm_slots[hexkey]))
            conn, node = entry, servers[0].name
            for _ in range(len(servers) + 1):  # each MOVED leads to the owner: bounded
                reply = conn.call("SET", key, b"v")
                if reply == ("+", "OK"):
                    break
                kind, text = reply
                parts = text.split()
                if kind != "-" or parts[0] != "MOVED" or int(parts[1]) != slot:
                    raise RuntimeError(f"{case}: SET {hexkey}: unexpected reply {reply}")
                node, conn = parts[2], conns[parts[2]]
                moved += 1
            else:
                raise RuntimeError(f"{case}: SET {hexkey}: redirect loop")
            if node != owners[slot]:
                raise RuntimeError(f"{case}: {hexkey} written on {node}, CLUSTER SLOTS says "
                                   f"{owners[slot]}")
            lines.append(f"{hexkey}\t{node}\n")
        for c in conns.values():
            c.close()
    finally:
        for s in servers:
            s.stop()

    path = os.path.join(COMPAT, "vectors", f"redis-cluster__{case}.tsv")
    with open(path, "w") as f:
        f.write(f"# peer: {PEER}\n")
        f.write("# command: tests/compat/redis-cluster/generate.sh\n")
        if len(servers) == 1:
            f.write("# one master: CLUSTER ADDSLOTSRANGE 0 16383 (redis-cli create needs 3)\n")
        else:
            f.write("# redis-cli --cluster create <the nodes below, in this order> "
                    "--cluster-replicas 0\n")
        f.write("# owner = the node that accepted SET (following MOVED); slot = CLUSTER KEYSLOT\n")
        f.write("@preset redis-cluster\n")
        for s in servers:
            f.write(f"@node {s.name} 1\n")
        f.writelines(lines)
    print(f"wrote {path} ({len(lines)} keys, {moved} MOVED followed)", file=sys.stderr)
    return npm_disagree


def main():
    workdir = sys.argv[1]
    with open(os.path.join(COMPAT, "keys.hex")) as f:
        keys = [l.strip() for l in f if l.strip()]
    npm = subprocess.run(["node", os.path.join(HERE, "slots.js")], input="\n".join(keys),
                         capture_output=True, text=True, check=True, cwd=HERE).stdout
    npm_slots = {h: int(s) for h, s in (l.split("\t") for l in npm.splitlines())}
    local = "127.0.0.1"
    cases = [
        ("one", [local]),
        ("three", [local] * 3),
        ("five", [local] * 5),
        ("seven", [local] * 7),
        ("many", [local] * int(os.environ.get("MANY", "50"))),
        # Three hosts listed host by host: redis-cli takes masters round-robin across hosts
        # (.1, .2, .3, .1, .2, .1), so the ranges are not in the order given.
        ("hosts", ["127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2",
                   "127.0.0.3"]),
    ]
    disagree = {}
    for case, hosts in cases:
        for d in run_case(case, hosts, workdir, keys, npm_slots):
            disagree[d[0]] = d
    for hexkey, slot, npm_slot in sorted(disagree.values()):
        print(f"cluster-key-slot disagrees with CLUSTER KEYSLOT on {bytes.fromhex(hexkey)!r}: "
              f"redis {slot}, npm {npm_slot}", file=sys.stderr)
    print(f"cluster-key-slot agrees with CLUSTER KEYSLOT on {len(keys) - len(disagree)} of "
          f"{len(keys)} keys", file=sys.stderr)


if __name__ == "__main__":
    main()
