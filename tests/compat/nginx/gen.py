#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/compat/vectors/nginx-*.tsv by running the real nginx (Debian 1.22.1) end to end.

For each case an nginx is started (one process: master_process off; everything under a temp dir):
  - an upstream block using the balancing method under test (`hash $key consistent`, `hash $key`,
    `ip_hash`), its servers written exactly as the vector file's @node names;
  - one backend per upstream server, served by the same nginx, answering with its own address;
  - a front server that proxies to the upstream.
Every key is sent to the front server and the backend that answered is recorded as the upstream
server name as written in the config. The mapping is nginx's: the only hashing done here picks
extra keys for the tie cases (see TIE).

How the key reaches nginx's hash unchanged:
  - http: `hash $request_body ...`. The key is the request body (POST, Content-Length); nginx
    reads the body before it picks a peer and $request_body holds its raw bytes, so every key
    of keys.hex is usable (no header or URI decoding in between).
  - stream: `hash $ssl_preread_server_name ...`. The key is the SNI host_name of a hand-made TLS
    ClientHello; ngx_stream_ssl_preread_module copies those bytes as they are.
  - ip_hash: the key is the client address; each key is a connection from that source address
    (any 127.x.y.z can be bound on Linux loopback, and ::1).
No key of keys.hex is skipped: both ways carry any byte string.

Replica vectors (route_n): every backend answers 502 and the front server has
`proxy_next_upstream error timeout http_502 non_idempotent; proxy_next_upstream_tries R;`
(non_idempotent: the keys are POSTs) so nginx tries R
servers in its own failover order; $upstream_addr (sent back in a header) lists them.
`max_fails=0` on every server keeps those 502s from marking servers as failed.

Down servers: `server NAME down;` is written in the vector file as weight 0 (nginx's down server
keeps its default weight 1 in the hash walks; see docs/compat/nginx.md).
"""
import argparse
import http.client
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zlib

NGINX = "/usr/sbin/nginx"
STREAM_MODULE = "/usr/lib/nginx/modules/ngx_stream_module.so"
UNIX_DIR = "/tmp/chash-nginx-compat"  # fixed, so unix: server names are stable across runs
HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.dirname(HERE)
RUNNING = []  # nginx processes started by this script (stopped in finally / by generate.sh trap)
PIDS = None  # file to record their pids in, for generate.sh's trap


def nginx_version():
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "nginx"], capture_output=True,
                         text=True, check=True).stdout.strip()
    return out


def load_keys():
    with open(os.path.join(COMPAT, "keys.hex")) as f:
        return [bytes.fromhex(line.strip()) for line in f if line.strip()]


# ---- ports ---------------------------------------------------------------------------------------

def port_free(host, port, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    # As nginx binds (SO_REUSEADDR): a port left in TIME_WAIT by the previous run is free.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


class Ports:
    """Hands out 127.0.0.1 ports: the preferred one when free (stable names across runs), else
    one the kernel picks."""

    def __init__(self):
        self.used = set()

    def get(self, preferred=None, host="127.0.0.1", family=socket.AF_INET):
        if preferred and preferred not in self.used and port_free(host, preferred, family):
            self.used.add(preferred)
            return preferred
        for _ in range(100):
            s = socket.socket(family, socket.SOCK_STREAM)
            s.bind((host, 0))
            port = s.getsockname()[1]
            s.close()
            if port not in self.used:
                self.used.add(port)
                return port
        raise RuntimeError("no free port")


# ---- servers of a case ---------------------------------------------------------------------------

class Server:
    """An upstream server: `name` as written in the upstream block, the address nginx connects to
    (as $upstream_addr prints it) and the backend's listen address."""

    def __init__(self, name, weight=1, down=False):
        self.name = name
        self.weight = weight
        self.down = down
        if name.startswith("unix:"):
            self.addr = name
            self.listen = name
        elif name.startswith("["):
            self.addr = name
            self.listen = name
        elif ":" in name:
            self.addr = name
            self.listen = name
        else:  # no port: nginx's default port 80
            self.addr = name + ":80"
            self.listen = name + ":80"

    def line(self):
        s = f"server {self.name}"
        if self.weight != 1:
            s += f" weight={self.weight}"
        s += " max_fails=0"
        if self.down:
            s += " down"
        return s + ";"


def ip_servers(ports, base, weights):
    return [Server(f"127.0.0.1:{ports.get(base + i)}", w) for i, w in enumerate(weights)]


def copy_servers(servers):
    return [Server(s.name, s.weight, s.down) for s in servers]


# ---- nginx ---------------------------------------------------------------------------------------

def http_conf(prefix, method, servers, front_port, replicas, front_v6):
    ups = "\n".join("        " + s.line() for s in servers)
    backends = []
    for s in servers:
        answer = "return 502;" if replicas > 1 else f'return 200 "{s.addr}";'
        backends.append(f"    server {{ listen {s.listen}; location / {{ {answer} }} }}")
    # non_idempotent: nginx does not pass a POST on to the next server without it.
    next_up = "error timeout http_502 non_idempotent" if replicas > 1 else "error timeout"
    v6 = f"        listen [::1]:{front_port};\n" if front_v6 else ""
    return f"""
master_process off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    client_body_buffer_size 64k;
    client_body_in_single_buffer on;
    keepalive_requests 100000;
    upstream up {{
        {method};
{ups}
    }}
    server {{
        listen 127.0.0.1:{front_port};
{v6}        location / {{
            proxy_pass http://up;
            proxy_next_upstream {next_up};
            proxy_next_upstream_tries {max(replicas, 1)};
            add_header X-Upstream $upstream_addr always;
        }}
    }}
{chr(10).join(backends)}
}}
"""


def stream_conf(prefix, method, servers, front_port):
    ups = "\n".join("        " + s.line() for s in servers)
    backends = "\n".join(f'    server {{ listen {s.listen}; return "{s.addr}"; }}' for s in servers)
    return f"""
load_module {STREAM_MODULE};
master_process off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
stream {{
    upstream up {{
        {method};
{ups}
    }}
    server {{
        listen 127.0.0.1:{front_port};
        ssl_preread on;
        proxy_pass up;
    }}
{backends}
}}
"""


class Nginx:
    def __init__(self, conf_text):
        self.prefix = tempfile.mkdtemp(prefix="chash-nginx-")
        self.conf = os.path.join(self.prefix, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(conf_text.replace("{prefix}", self.prefix))
        self.proc = None

    def start(self, port):
        self.proc = subprocess.Popen(
            [NGINX, "-p", self.prefix, "-c", self.conf, "-e", os.path.join(self.prefix, "error.log"),
             "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        RUNNING.append(self)
        if PIDS:
            with open(PIDS, "a") as f:
                f.write(f"{self.proc.pid}\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited: " + self.proc.stderr.read().decode(errors="replace")
                                   + self.error_log())
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start listening on 127.0.0.1:%d" % port)

    def error_log(self):
        try:
            with open(os.path.join(self.prefix, "error.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self in RUNNING:
            RUNNING.remove(self)
        shutil.rmtree(self.prefix, ignore_errors=True)


# ---- clients -------------------------------------------------------------------------------------

def http_route(port, keys, by_addr, replicas, up):
    """POSTs each key as the body; returns key -> [server names in nginx's order]."""
    out = {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for key in keys:
        conn.request("POST", "/", body=key, headers={"Content-Type": "application/octet-stream"})
        resp = conn.getresponse()
        body = resp.read().decode()
        tried = [a.strip() for a in (resp.getheader("X-Upstream") or "").split(",") if a.strip()]
        if replicas > 1:
            if resp.status != 502 or len(set(tried)) != min(replicas, up):
                raise RuntimeError(f"key {key!r}: status {resp.status}, tried {tried}")
            out[key] = [by_addr[a] for a in tried]
        else:
            if resp.status != 200 or tried != [body]:
                raise RuntimeError(f"key {key!r}: status {resp.status}, body {body!r}, tried {tried}")
            out[key] = [by_addr[body]]
    conn.close()
    return out


def client_hello(sni):
    """A TLS 1.2 ClientHello carrying `sni` as its host_name, as ssl_preread parses it."""
    entry = b"\x00" + len(sni).to_bytes(2, "big") + sni
    sni_list = len(entry).to_bytes(2, "big") + entry
    ext = b"\x00\x00" + len(sni_list).to_bytes(2, "big") + sni_list
    body = (b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
            + len(ext).to_bytes(2, "big") + ext)
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + len(hs).to_bytes(2, "big") + hs


def stream_route(port, keys, by_addr):
    out = {}
    for key in keys:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(client_hello(key))
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        out[key] = [by_addr[data.decode()]]
    return out


def ip_route(port, addrs, by_addr, replicas, up):
    out = {}
    for a in addrs:
        family = socket.AF_INET6 if ":" in a else socket.AF_INET
        dest = "::1" if family == socket.AF_INET6 else "127.0.0.1"
        conn = http.client.HTTPConnection(dest, port, timeout=10, source_address=(a, 0))
        conn.request("GET", "/")
        resp = conn.getresponse()
        body = resp.read().decode()
        tried = [x.strip() for x in (resp.getheader("X-Upstream") or "").split(",") if x.strip()]
        conn.close()
        if replicas > 1:
            if resp.status != 502 or len(set(tried)) != min(replicas, up):
                raise RuntimeError(f"client {a}: status {resp.status}, tried {tried}")
            out[a.encode()] = [by_addr[x] for x in tried]
        else:
            if resp.status != 200 or tried != [body]:
                raise RuntimeError(f"client {a}: status {resp.status}, body {body!r}")
            out[a.encode()] = [by_addr[body]]
    return out


def client_addresses():
    """Client addresses for ip_hash: 400 distinct /24s of 127/8 (one address each), a second
    address in 100 of them (nginx hashes only the first three octets), and ::1 (IPv6: all 16
    bytes). Deterministic."""
    rng = random.Random(20240601)
    nets = set()
    while len(nets) < 400:
        nets.add((rng.randrange(0, 256), rng.randrange(0, 256)))
    nets = sorted(nets)
    addrs = [f"127.{a}.{b}.{rng.randrange(1, 255)}" for a, b in nets]
    for a, b in nets[::4]:
        addrs.append(f"127.{a}.{b}.{rng.randrange(1, 255)}")
    addrs = list(dict.fromkeys(addrs))
    addrs.append("::1")
    return addrs


# ---- equal points ---------------------------------------------------------------------------------
# Point 156 of "unix:/tmp/chash-nginx-compat/t36.sock" and point 142 of ".../t159.sock" are both
# 0xda9957dc (found by a search over tN names; checked below). Which server owns that point is
# decided by nginx's qsort and its dedup of equal points; the tie cases add keys whose crc32
# falls just below it, so that they land on the contested point.
TIE = {"names": ["t36", "t159"], "point": 0xDA9957DC}


def chash_points(name):
    """The 160 points nginx gives a unix: server of weight 1 (only to pick the tie keys)."""
    base = name[len("unix:"):].encode() + b"\0"
    prev, out = 0, []
    for _ in range(160):
        prev = zlib.crc32(base + prev.to_bytes(4, "little"))
        out.append(prev)
    return out


def tie_keys():
    a, b = (chash_points(f"unix:{UNIX_DIR}/{n}.sock") for n in TIE["names"])
    assert TIE["point"] in a and TIE["point"] in b, "the tied point is gone"
    keys = []
    for i in range(10_000_000):
        k = f"tie:{i}".encode()
        if TIE["point"] - (1 << 22) < zlib.crc32(k) <= TIE["point"]:
            keys.append(k)
            if len(keys) == 40:
                return keys
    raise RuntimeError("no tie keys")


# ---- cases ---------------------------------------------------------------------------------------

METHODS = {
    "nginx-hash-consistent": {"http": "hash $request_body consistent",
                              "stream": "hash $ssl_preread_server_name consistent"},
    "nginx-hash": {"http": "hash $request_body", "stream": "hash $ssl_preread_server_name"},
    "nginx-ip-hash": {"http": "ip_hash"},
}


def cases(ports):
    """(preset, case, module, servers, replicas). Preferred ports are fixed per case so that the
    node names (which nginx hashes) stay the same from run to run."""
    W5 = [1, 2, 5, 1, 3]
    out = []
    for n, preset in enumerate(["nginx-hash-consistent", "nginx-hash", "nginx-ip-hash"]):
        base = 18000 + n * 1000
        out.append((preset, "1_node", "http", ip_servers(ports, base, [1]), 1))
        out.append((preset, "2_nodes", "http", ip_servers(ports, base + 10, [1, 1]), 1))
        five = ip_servers(ports, base + 20, W5)
        fifty = ip_servers(ports, base + 100, [1] * 50)
        out.append((preset, "5_weighted", "http", five, 1))
        out.append((preset, "50_nodes", "http", fifty, 1))
        many = ip_servers(ports, base + 200, [(i % 7) + 1 for i in range(20)])
        out.append((preset, "20_weighted", "http", many, 1))
        down = ip_servers(ports, base + 300, W5)
        for i in (1, 3):  # `server NAME down;` with nginx's default weight 1 (= weight 0 here)
            down[i].down = True
            down[i].weight = 1
        out.append((preset, "5_two_down", "http", down, 1))
        out.append((preset, "5_weighted_replicas3", "http", ip_servers(ports, base + 400, W5), 3))
        # Names as people write them: the default port left out ("127.0.0.2" is port 80), the
        # same written out ("127.0.0.3:80"), IPv6, a unix socket.
        named = [Server("127.0.0.2"), Server("127.0.0.3:80", 2),
                 Server(f"[::1]:{ports.get(base + 500, '::1', socket.AF_INET6)}"),
                 Server(f"unix:{UNIX_DIR}/{preset}.sock"),
                 Server(f"127.0.0.1:{ports.get(base + 501)}", 3)]
        out.append((preset, "default_port_names", "http", named, 1))
        if preset == "nginx-hash-consistent":
            # Two servers with an equal point: nginx keeps the one listed first (see TIE).
            a, b = (Server(f"unix:{UNIX_DIR}/{name}.sock") for name in TIE["names"])
            out.append((preset, "tied_point", "http", [a, b], 1))
            out.append((preset, "tied_point_reversed", "http", copy_servers([b, a]), 1))
        if "stream" in METHODS[preset]:
            # The same upstream servers as the http cases: the stream module must agree.
            out.append((preset, "stream_5_weighted", "stream", copy_servers(five), 1))
            out.append((preset, "stream_50_nodes", "stream", copy_servers(fifty), 1))
    return out


def write_vectors(path, preset, case, module, servers, replicas, routes, version, method, note):
    with open(path, "w") as f:
        f.write(f"# peer: nginx {version} (Debian), {module} upstream `{method}`\n")
        f.write("# command: tests/compat/nginx/generate.sh\n")
        f.write(f"# {note}\n")
        f.write("# upstream servers: " + " ".join(s.line() for s in servers) + "\n")
        f.write("# weight 0 below = `server ... down;` (nginx keeps weight 1 for it)\n"
                if any(s.down for s in servers) else "")
        f.write(f"@preset {preset}\n")
        if replicas > 1:
            f.write(f"@option replicas {replicas}\n")
        for s in servers:
            f.write(f"@node {s.name} {0 if s.down else s.weight}\n")
        for key, names in routes.items():
            f.write(key.hex() + "\t" + "\t".join(names) + "\n")


def run_case(preset, case, module, servers, replicas, ports, keys, addrs, outdir, version):
    method = METHODS[preset][module]
    front = ports.get()
    by_addr = {s.addr: s.name for s in servers}
    up = sum(1 for s in servers if not s.down)
    ip = preset == "nginx-ip-hash"
    if module == "http":
        conf = http_conf("{prefix}", method, servers, front, replicas, front_v6=ip)
    else:
        conf = stream_conf("{prefix}", method, servers, front)
    ng = Nginx(conf)
    try:
        ng.start(front)
        if ip:
            routes = ip_route(front, addrs, by_addr, replicas, up)
            note = (f"keys: {len(addrs)} client addresses (400 /24s of 127/8, 100 of them twice, "
                    "and ::1), each key one connection from that source address")
        elif module == "http":
            extra = tie_keys() if case.startswith("tied_point") else []
            routes = http_route(front, keys + extra, by_addr, replicas, up)
            note = f"keys: all {len(keys)} of keys.hex, each sent as the request body ($request_body)"
            if extra:
                note += (f", and {len(extra)} keys tie:N whose crc32 falls just below the point "
                         "both servers have")
        else:
            routes = stream_route(front, keys, by_addr)
            note = (f"keys: all {len(keys)} of keys.hex, each sent as the SNI host_name of a "
                    "ClientHello ($ssl_preread_server_name)")
    finally:
        ng.stop()
    path = os.path.join(outdir, f"{preset}__{case}.tsv")
    write_vectors(path, preset, case, module, servers, replicas, routes, version, method, note)
    return path, len(routes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(COMPAT, "vectors"))
    ap.add_argument("--only", help="run only cases whose <preset>__<case> contains this")
    ap.add_argument("--pids", help="append the pid of every nginx started to this file")
    args = ap.parse_args()
    global PIDS
    PIDS = args.pids
    if not port_free("127.0.0.2", 80) or not port_free("127.0.0.3", 80):
        sys.exit("127.0.0.2:80 or 127.0.0.3:80 is taken: the default-port case needs both")
    os.makedirs(UNIX_DIR, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    version = nginx_version()
    keys = load_keys()
    addrs = client_addresses()
    ports = Ports()
    try:
        for preset, case, module, servers, replicas in cases(ports):
            if args.only and args.only not in f"{preset}__{case}":
                continue
            t = time.monotonic()
            path, n = run_case(preset, case, module, servers, replicas, ports, keys, addrs,
                               args.out, version)
            print(f"{os.path.relpath(path, COMPAT)}: {n} keys ({time.monotonic() - t:.1f}s)",
                  flush=True)
    finally:
        for ng in list(RUNNING):
            ng.stop()
        shutil.rmtree(UNIX_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
