#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes proxy/proto/redis/acl_table.inc: every Redis command's ACL categories and key specs, asked
of a real redis-server (COMMAND and ACL CAT), so that chash-proxy's `+@read` means what Redis's
does and `%R~` / `%W~` key permissions see the keys Redis sees, with the access Redis declares.

    python3 scripts/gen_redis_acl_table.py [--out proxy/proto/redis/acl_table.inc]

Starts redis-server (Debian's, from PATH) on 127.0.0.1 at a free port with no persistence, reads
the table and stops it. Regenerate after a redis-server upgrade; the diff shows what moved.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time


def read_reply(f):
    line = f.readline()
    if not line:
        raise EOFError("redis-server closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+",):
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode()
    if kind in (b"*", b"~", b"%"):
        n = int(rest)
        if n < 0:
            return None
        if kind == b"%":
            n *= 2
        return [read_reply(f) for _ in range(n)]
    raise RuntimeError("unexpected reply %r" % line)


def call(sock_file, sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    return read_reply(sock_file)


# Commands whose key specs say `variable_flags`: acl.cc computes their keys' access from the
# arguments, as Redis's getkeys procs do (setGetKeys, bitfieldGetKeys).
VARIABLE_FLAGS = ["bitfield", "set"]


def pairs(flat):
    """A RESP2 map (a flat list of key, value) as a dict."""
    return dict(zip(flat[::2], flat[1::2]))


def key_spec(command, ks):
    """One key spec as a C++ KeySpecAcl initializer."""
    flags = set(ks["flags"])
    perms = []
    if "access" in flags:
        perms.append("kAclKeyRead")
    if flags & {"insert", "delete", "update"}:
        perms.append("kAclKeyWrite")
    extra = [name for flag, name in (("not_key", "kSpecNotKey"), ("incomplete", "kSpecIncomplete"),
                                     ("variable_flags", "kSpecVariable")) if flag in flags]
    bs, fk = pairs(ks["begin_search"]), pairs(ks["find_keys"])
    bss, fks = pairs(bs["spec"] or []), pairs(fk["spec"] or [])
    if bs["type"] == "index":
        begin = "Begin::kIndex, %d, {}" % bss["index"]
    elif bs["type"] == "keyword":
        begin = 'Begin::kKeyword, %d, "%s"' % (bss["startfrom"], bss["keyword"])
    elif bs["type"] == "unknown":
        begin = "Begin::kUnknown, 0, {}"
    else:
        sys.exit("%s: unknown begin_search type %r" % (command, bs["type"]))
    if fk["type"] == "range":
        find = "Find::kRange, %d, %d, %d" % (fks["lastkey"], fks["keystep"], fks["limit"])
    elif fk["type"] == "keynum":
        find = "Find::kKeynum, %d, %d, %d" % (fks["keynumidx"], fks["firstkey"], fks["keystep"])
    elif fk["type"] == "unknown":
        find = "Find::kUnknown, 0, 0, 0"
    else:
        sys.exit("%s: unknown find_keys type %r" % (command, fk["type"]))
    return "{%s, %s, %s, %s}" % ("|".join(perms) or "0", "|".join(extra) or "0", begin, find)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from testports import free_port  # noqa: E402  (tests/testports.py: below the ephemeral range)


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.normpath(os.path.join(here, "..", "proxy", "proto", "redis",
                                                  "acl_table.inc")))
    opts = ap.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
        try:
            for _ in range(500):
                try:
                    sock = socket.create_connection(("127.0.0.1", port))
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                sys.exit("redis-server did not start")
            f = sock.makefile("rb")
            info = call(f, sock, "INFO", "server")
            version = [l for l in info.splitlines() if l.startswith("redis_version:")][0]
            version = version.split(":", 1)[1]
            categories = call(f, sock, "ACL", "CAT")
            commands = call(f, sock, "COMMAND")
            # ACL CAT <category> must agree with COMMAND's per-command lists (both are Redis's).
            by_cat = {c: set(call(f, sock, "ACL", "CAT", c)) for c in categories}
        finally:
            server.terminate()
            server.wait()

    bit = {c: i for i, c in enumerate(categories)}
    rows, specs = [], []

    def add(cmd):
        """One row per command and one per subcommand (`config|get`): Redis checks a subcommand's
        own categories and key specs (server.c lookupCommand returns it, acl.c
        ACLSelectorCheckCmd checks its id), so the proxy must know them too."""
        name, arity, flags, cats = cmd[0].lower(), cmd[1], cmd[2], cmd[6]
        mask = 0
        for c in cats:
            mask |= 1 << bit[c.lstrip("@")]
        for c in categories:
            if (name in by_cat[c]) != bool(mask >> bit[c] & 1):
                sys.exit("COMMAND and ACL CAT %s disagree on %s" % (c, name))
        first_spec = len(specs)
        for ks in (cmd[8] if len(cmd) > 8 and cmd[8] else []):
            specs.append(key_spec(name, pairs(ks)))
        rows.append([name, mask, "no_auth" in flags, first_spec, len(specs) - first_spec, arity,
                     "noscript" in flags])
        for sub in (cmd[9] if len(cmd) > 9 and cmd[9] else []):
            add(sub)

    for cmd in commands:
        add(cmd)
    rows.sort()
    # A command's subcommands ("name|...") follow it in name order: their range in the table.
    index = {r[0]: i for i, r in enumerate(rows)}
    first_sub = {}
    for i, r in enumerate(rows):
        if "|" in r[0]:
            parent = r[0].split("|", 1)[0]
            first_sub.setdefault(parent, i)
    sub_range = {}
    for parent, first in first_sub.items():
        count = sum(1 for r in rows if r[0].startswith(parent + "|"))
        if any(not rows[i][0].startswith(parent + "|") for i in range(first, first + count)):
            sys.exit("subcommands of %s are not contiguous" % parent)
        if parent not in index:
            sys.exit("subcommand of unknown command %s" % parent)
        sub_range[parent] = (first, count)
    lines = [
        "// SPDX-License-Identifier: Apache-2.0",
        "// Generated by scripts/gen_redis_acl_table.py from redis-server %s (COMMAND, ACL CAT);"
        % version,
        "// do not edit. Included by proxy/proto/redis/acl.cc.",
        "",
        "// ACL categories, in `ACL CAT` order; bit i of a command's mask is category i.",
        "constexpr std::string_view kCategoryNames[] = {",
    ]
    for c in categories:
        lines.append('    "%s",' % c)
    lines += ["};", "",
              "// Key specs (COMMAND's key-specs), each command's in order: {permissions an ACL",
              "// pattern needs (access: read; insert, delete, update: write), flags, begin search",
              "// (index: position; keyword: startfrom, keyword), find keys (range: lastkey, keystep,",
              "// limit; keynum: keynumidx, firstkey, keystep)}.",
              "constexpr KeySpecAcl kKeySpecs[] = {"]
    for sp in specs:
        lines.append("    " + sp + ",")
    lines += ["};", "",
              "// Every command and subcommand (`config|get`): {name, category mask, no_auth (allowed",
              "// to every user), first key spec, key specs, arity, noscript (refused inside scripts),",
              "// first subcommand, subcommands (a container's `name|...` rows, which follow it)},",
              "// by name.",
              "constexpr CommandAcl kCommandAcl[] = {"]
    for name, mask, no_auth, first, count, arity, noscript in rows:
        sub_first, sub_count = sub_range.get(name, (0, 0))
        lines.append('    {"%s", 0x%06xu, %s, %d, %d, %d, %s, %d, %d},'
                     % (name, mask, "true" if no_auth else "false", first, count, arity,
                        "true" if noscript else "false", sub_first, sub_count))
    lines += ["};", ""]
    with open(opts.out, "w") as out:
        out.write("\n".join(lines))
    subs = sum(1 for r in rows if "|" in r[0])
    print("wrote %s: %d commands, %d key specs, %d subcommands, %d categories (redis %s)"
          % (opts.out, len(rows) - subs, len(specs), subs, len(categories), version))


if __name__ == "__main__":
    main()
