# SPDX-License-Identifier: Apache-2.0
# The packaging tests (tests/dist/CMakeLists.txt): the wheel, the .deb, the Grafana dashboard.
# ctest passes the paths in the environment; run by hand from the checkout:
#   CHASH_BUILD_DIR=build /usr/bin/python3 -m pytest -q tests/dist
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_dir():
    return os.path.abspath(os.environ.get("CHASH_BUILD_DIR", os.path.join(ROOT, "build")))


def require_tool(name, package):
    """The path of `name`; fails (never skips) when scripts/bootstrap.sh was not run."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not found: scripts/bootstrap.sh installs it (Debian {package})")
    return path


def built(path, what):
    if not os.access(path, os.X_OK):
        pytest.fail(f"no {what} at {path}: build it first (cmake --build {build_dir()})")
    return path


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from testports import free_port  # noqa: E402,F401  (tests/testports.py: below the ephemeral range)


def wait_port(port, proc, limit=20.0):
    """Waits until 127.0.0.1:port accepts, failing early if `proc` exits."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.02)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {limit} s")


class Processes:
    """Children started by a test, killed (and reaped) when it ends, whatever happens."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []

    def start(self, name, argv, env=None):
        log = open(os.path.join(self.tmp, f"{name}.log"), "ab")
        p = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)
        log.close()
        self.procs.append(p)
        return p

    def log(self, name):
        with open(os.path.join(self.tmp, f"{name}.log"), errors="replace") as f:
            return f.read()

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


@pytest.fixture
def processes(tmp_path):
    ps = Processes(str(tmp_path))
    yield ps
    ps.stop_all()


def start_redis(processes, name):
    port = free_port()
    p = processes.start(name, [require_tool("redis-server", "redis-server"), "--port", str(port),
                               "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--daemonize", "no", "--dir", processes.tmp])
    wait_port(port, p)
    return port


def http_get(port, path, timeout=10.0, method="GET"):
    """(status, body) of GET http://127.0.0.1:port/path (the admin port speaks HTTP/1.1)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n"
                  f"Connection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()
