# SPDX-License-Identifier: Apache-2.0
"""Ports on 127.0.0.1 for the servers the Python harnesses start (the Python twin of
tests/free_port.h; imported by tests/soak, tests/chaos through bench/resize, the benches,
tests/dist and tests/compat).

Taken below the kernel's ephemeral range (ip_local_port_range), where no outgoing connection's
source port ever lands. A port that bind(0) hands out lies inside that range: it is free only
until some connect() anywhere on the machine takes it as its source port, and two bind(0) calls
may hand out the same one. Either way a server started on it later either cannot bind or — worse —
the port answers from another server: in one CI run the soak's memcached m2 was given the port of
one of its Redis servers, exited on "Address already in use", the soak's connect check found
the port open (Redis answered), and chash-proxy's memcached pool sent `set` to Redis
("unexpected reply '-ERR syntax error'"). Random, so that processes running side by side rarely
pick the same port; never the same twice in one process; checked by a bind. The race left:
another process binding the same port between this check and the server's own bind — a random
pick among ~20k makes that rare, and `expect_reply` below catches it when it happens.
"""

import random
import socket

_LOW = 10000
_given = set()
_rng = random.Random()


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(host, port):
    with socket.socket() as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host="127.0.0.1", also=()):
    """A port free on `host` now, never handed out before by this process. `also`: offsets whose
    ports must be free too (a Redis Cluster node's bus port is port + 10000)."""
    low = _ephemeral_low()
    high = low - max(also, default=0)
    if high > _LOW + 1000:
        for _ in range(1000):
            port = _rng.randrange(_LOW, high)
            ports = [port] + [port + d for d in also]
            if any(p in _given for p in ports) or not all(_bindable(host, p) for p in ports):
                continue
            _given.update(ports)
            return port
    # An unusual range (or nothing free below it): the kernel's choice.
    for _ in range(200):
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        ports = [port] + [port + d for d in also]
        if all(p <= 65535 and p not in _given for p in ports) and all(
                _bindable(host, p) for p in ports[1:]):
            _given.update(ports)
            return port
    raise RuntimeError(f"no free port on {host}")


def free_ports(n, host="127.0.0.1"):
    """n distinct free ports (free_port n times)."""
    return [free_port(host) for _ in range(n)]


def expect_reply(port, request, prefix, timeout=2.0, host="127.0.0.1"):
    """Whether the server on `port` answers `request` with a line starting with `prefix` (b"+PONG",
    b"VERSION "): a started server is the one the harness meant, not whatever else listens
    there."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(request)
            got = b""
            while b"\n" not in got and len(got) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
            return got.startswith(prefix)
    except OSError:
        return False
