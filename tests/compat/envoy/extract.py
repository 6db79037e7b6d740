#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Transcribes the expectations of Envoy's own unit tests into tests/compat/envoy/published.txt.

    tests/compat/envoy/extract.py ENVOY_CHECKOUT [OUT]

Envoy is not packaged for Debian or npm, so its mapping cannot be run here; its unit tests,
however, assert concrete hosts for concrete request hashes on concrete host lists. This script
reads them from a checkout (a sparse one with the three files below is enough) and writes them
in a line format that tests/presets/envoy_test.cc replays against chash's envoy presets:

  test/extensions/load_balancing_policies/ring_hash/ring_hash_lb_test.cc
  test/extensions/load_balancing_policies/maglev/maglev_lb_test.cc
  test/common/common/hash_test.cc   (xxHash64 and murmurHash2 check values)

Output (space-separated; host indexes are positions in the test's host list):
  case ring_hash|maglev NAME       a host list and its settings, up to "end"
  option NAME VALUE                minimum_ring_size, maximum_ring_size, hash_function, table_size
  host NAME WEIGHT                 NAME is the string Envoy hashes for the host
  throws MESSAGE...                building must fail with this message
  stat NAME VALUE                  ring size / hashes (entries) per host, as Envoy's stats gauges
  ring POSITION HOST               a ring point listed in the test's comments
  table INDEX HOST                 a maglev table entry listed in the test's comments
  choose HASH HOST                 chooseHost for a request hash
  retry HASH RETRIES none|all|not:K HOST   chooseHost with a retry host predicate
  counts N DIVISOR HOST COUNT      hashes i * (2^64-1 / DIVISOR), i < N: COUNT of them pick HOST
  hash xxhash64|murmur2 HEX VALUE  a key hash check value

Tests that use what the presets do not model (locality weights, priorities/failover, bounded
load, hash policies over mocked requests, no hosts) are skipped and listed in the output.
"""
import os
import re
import subprocess
import sys

RING = "test/extensions/load_balancing_policies/ring_hash/ring_hash_lb_test.cc"
MAGLEV = "test/extensions/load_balancing_policies/maglev/maglev_lb_test.cc"
HASH = "test/common/common/hash_test.cc"

UINT64_MAX = (1 << 64) - 1
HOSTS = r"(?:hostSet\(\)|host_set_)\.hosts_"
SKIP_MARKS = ["zone_", "locality_weights_", "failover_host_set_", "hash_balance_factor",
              "MockLoadBalancerContext", "push_back", "init(true)", ", true)"]


def balanced(text, start, open_ch, close_ch):
    """Returns the index just past the bracket matching text[start] (== open_ch)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced")


def number(expr):
    """A C++ integer expression from the tests: a literal or numeric_limits<uint64_t>::max()."""
    expr = expr.strip()
    if expr == "std::numeric_limits<uint64_t>::max()":
        return UINT64_MAX
    m = re.fullmatch(r"(\d+)[uUlL]*", expr)
    return int(m.group(1)) if m else None


def split_args(text):
    """Splits a call's argument list at top-level commas."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


class Host:
    def __init__(self, url, hostname=None, hash_key=None, weight=1):
        m = re.fullmatch(r"tcp://(.+):(\d+)", url)
        self.address = f"{m.group(1)}:{m.group(2)}"
        self.port = int(m.group(2))
        self.hostname = hostname
        self.hash_key = hash_key
        self.weight = weight

    def name(self, use_hostname):
        # ThreadAwareLoadBalancerBase::hashKey: metadata hash_key, else hostname or address.
        if self.hash_key:
            return self.hash_key
        return self.hostname if use_hostname else self.address


def parse_hosts(body):
    hosts = []
    for m in re.finditer(r"makeTestHost(WithHashKey)?\(", body):
        end = balanced(body, m.end() - 1, "(", ")")
        args = split_args(body[m.end():end - 1])
        strings = [a.strip('"') for a in args[1:] if a.startswith('"')]
        rest = [a for a in args[1:] if not a.startswith('"')]
        weight = int(rest[0]) if rest and rest[0].isdigit() else 1
        if m.group(1):
            hosts.append(Host(strings[1], hash_key=strings[0], weight=weight))
        elif len(strings) == 2:
            hosts.append(Host(strings[1], hostname=strings[0], weight=weight))
        else:
            hosts.append(Host(strings[0], weight=weight))
    return hosts


class Case:
    def __init__(self, kind, name, hosts, options, use_hostname):
        self.kind, self.name, self.hosts = kind, name, hosts
        self.options = dict(options)
        self.use_hostname = use_hostname
        self.lines = []

    def host_by_label(self, label):
        """A host as the test's comments name it: ':94', '94', or '127.0.0.1:94'."""
        for i, h in enumerate(self.hosts):
            if label.startswith(":") and h.port == int(label[1:]):
                return i
            if label in (h.address, h.name(self.use_hostname)):
                return i
        raise ValueError(f"{self.name}: no host {label}")

    def host_by_port(self, port):
        return next(i for i, h in enumerate(self.hosts) if h.port == port)

    def write(self, out):
        out.append(f"case {self.kind} {self.name}")
        for k, v in self.options.items():
            out.append(f"option {k} {v}")
        for h in self.hosts:
            out.append(f"host {h.name(self.use_hostname)} {h.weight}")
        out.extend(self.lines)
        out.append("end")


def parse_test(kind, name, block, out, skipped):
    if any(mark in block for mark in SKIP_MARKS):
        skipped.append(name)
        return
    options = {"hash_function": "XX_HASH"} if kind == "ring_hash" else {}
    use_hostname = False
    cases = []
    case = None
    pending_hosts = None
    consumed = []  # spans handled by loop patterns

    events = []
    for m in re.finditer(HOSTS + r"\s*=\s*\{", block):
        events.append((m.start(), "hosts", m))
    for m in re.finditer(r"mutable_(minimum|maximum)_ring_size\(\)->set_value\((\d+)\)", block):
        events.append((m.start(), "ringsize", m))
    for m in re.finditer(r"set_hash_function\([^;]*MURMUR_HASH_2\)", block):
        events.append((m.start(), "murmur", m))
    for m in re.finditer(r"set_use_hostname_for_hashing\(true\)", block):
        events.append((m.start(), "hostname", m))
    for m in re.finditer(r"(?<![\w.>])init\((\d*)\)", block):
        events.append((m.start(), "init", m))
    for m in re.finditer(r"EXPECT_THROW_WITH_MESSAGE\(init\((\d*)\), EnvoyException,\s*\"([^\"]*)\"\)",
                         block):
        events.append((m.start(), "throws", m))
    for m in re.finditer(r"EXPECT_EQ\((\d+), lb_->stats\(\)\.(\w+)_\.value\(\)\)", block):
        events.append((m.start(), "stat", m))
    for m in re.finditer(r"//\s*(:\d+|\d+)\s*\|\s*(\d+)\s*$", block, re.M):
        events.append((m.start(), "ring", m))
    for m in re.finditer(r"//\s*ring hash: host=(\S+) hash=(\d+)", block):
        events.append((m.start(), "ring", m))
    for m in re.finditer(r"//\s*maglev: i=(\d+) host=(\S+)", block):
        events.append((m.start(), "table", m))
    for m in re.finditer(r"node_hash_map<uint64_t, uint32_t> expected\{", block):
        events.append((m.start(), "map", m))
    for m in re.finditer(r"std::vector<uint32_t> expected_assignments\{([^}]*)\};\s*"
                         r"for \(uint32_t i = 0; i < (\d+) \* expected_assignments\.size\(\); "
                         r"\+\+i\) \{", block):
        events.append((m.start(), "assign", m))
    for m in re.finditer(r"for \(uint32_t i = 0; i < (\d+); \+\+i\) \{\s*"
                         r"TestLoadBalancerContext context\(i\);\s*"
                         r"EXPECT_EQ\(" + HOSTS + r"\[(\d+)\], lb->chooseHost\(&context\)\.host\);",
                         block):
        events.append((m.start(), "loopconst", m))
    for m in re.finditer(r"for \(uint32_t i = 0; i < (\d+); \+\+i\) \{\s*"
                         r"TestLoadBalancerContext context\(\s*i \* \(std::numeric_limits<uint64_t>"
                         r"::max\(\) / (\d+)\)\);.*?\+\+counts\[port - (\d+)\];\s*\}", block, re.S):
        events.append((m.start(), "counts", m))
    for m in re.finditer(r"TestLoadBalancerContext context\(", block):
        events.append((m.start(), "choose", m))
    # With no context, chooseHost hashes with random(); the tests mock it.
    for m in re.finditer(r"EXPECT_CALL\(context_\.api_\.random_, random\(\)\)\.WillOnce\(Return\("
                         r"(\d+)U?L?\)\);\s*EXPECT_EQ\(" + HOSTS +
                         r"\[(\d+)\], lb->chooseHost\(nullptr\)\.host\);", block):
        events.append((m.start(), "random", m))
    events.sort(key=lambda e: e[0])

    def new_case():
        c = Case(kind, name if not cases else f"{name}#{len(cases) + 1}", pending_hosts, options,
                 use_hostname)
        cases.append(c)
        return c

    for pos, what, m in events:
        if any(a <= pos < b for a, b in consumed):
            continue
        if what == "hosts":
            end = balanced(block, m.end() - 1, "{", "}")
            pending_hosts = parse_hosts(block[m.end() - 1:end])
            if case is not None:  # the hosts change after init: a new ring, same settings
                case = new_case()
        elif what == "ringsize":
            options[f"{m.group(1)}_ring_size"] = m.group(2)
        elif what == "murmur":
            options["hash_function"] = "MURMUR_HASH_2"
        elif what == "hostname":
            use_hostname = True
        elif what == "throws":
            if m.group(1):
                options["table_size"] = m.group(1)
            c = Case(kind, name, pending_hosts or [], options, use_hostname)
            c.lines.append("throws " + m.group(2))
            cases.append(c)
            consumed.append((m.start(), m.end()))
        elif what == "init":
            if m.group(1):
                options["table_size"] = m.group(1)
            if not pending_hosts:
                skipped.append(name)
                return
            case = new_case()
        elif case is None:
            continue
        elif what == "stat":
            case.lines.append(f"stat {m.group(2)} {m.group(1)}")
        elif what == "ring":
            case.lines.append(f"ring {m.group(2)} {case.host_by_label(m.group(1))}")
        elif what == "table":
            case.lines.append(f"table {m.group(1)} {case.host_by_label(m.group(2))}")
        elif what == "map":
            end = balanced(block, m.end() - 1, "{", "}")
            for h, k in re.findall(r"\{(\d+)U?L?, (\d+)\}", block[m.end():end - 1]):
                case.lines.append(f"choose {h} {k}")
            loop = re.compile(r"\s*for \(const auto& entry : expected\) \{\s*"
                              r"TestLoadBalancerContext context\(entry\.first\);\s*"
                              r"EXPECT_EQ\(" + HOSTS + r"\[entry\.second\], "
                              r"lb->chooseHost\(&context\)\.host\);\s*\}").match(block, end + 1)
            if not loop:
                raise ValueError(f"{name}: unexpected use of the expected map")
            consumed.append((m.start(), loop.end()))
        elif what == "assign":
            assignments = [int(x) for x in m.group(1).replace("\n", " ").split(",") if x.strip()]
            end = balanced(block, m.end() - 1, "{", "}")
            body = block[m.end():end - 1]
            if not re.fullmatch(r"\s*TestLoadBalancerContext context\(i\);\s*EXPECT_EQ\(" + HOSTS +
                                r"\[expected_assignments\[i % expected_assignments\.size\(\)\]\],"
                                r"\s*lb->chooseHost\(&context\)\.host\);\s*", body):
                raise ValueError(f"{name}: unexpected expected_assignments loop")
            for i in range(int(m.group(2)) * len(assignments)):
                case.lines.append(f"choose {i} {assignments[i % len(assignments)]}")
            consumed.append((m.start(), end))
        elif what == "loopconst":
            for i in range(int(m.group(1))):
                case.lines.append(f"choose {i} {m.group(2)}")
            consumed.append((m.start(), m.end()))
        elif what == "counts":
            n, divisor, base = (int(g) for g in m.groups())
            for c, j in re.findall(r"EXPECT_EQ\((\d+), counts\[(\d+)\]\)", block[m.end():]):
                case.lines.append(f"counts {n} {divisor} {case.host_by_port(base + int(j))} {c}")
            consumed.append((m.start(), m.end()))
        elif what == "random":
            case.lines.append(f"choose {m.group(1)} {m.group(2)}")
        elif what == "choose":
            end = balanced(block, m.end() - 1, "(", ")")
            args = split_args(block[m.end():end - 1])
            expect = re.compile(r"\s*;\s*(?://[^\n]*\n\s*)*EXPECT_EQ\(" + HOSTS +
                                r"\[(\d+)\], lb->chooseHost\(&context\)\.host\);").match(block, end)
            if not expect or number(args[0]) is None:
                continue
            host = expect.group(1)
            if len(args) == 1:
                case.lines.append(f"choose {number(args[0])} {host}")
                continue
            pred = re.sub(r"\s+", " ", args[2])
            if pred == "[](const Host&) { return false; }":
                kind_ = "none"
            elif pred == "[](const Host&) { return true; }":
                kind_ = "all"
            else:
                pm = re.fullmatch(r"\[&\]\(const Host& host\) \{ return &host == " + HOSTS +
                                  r"\[(\d+)\]\.get\(\); \}", pred)
                if not pm:
                    raise ValueError(f"{name}: unknown retry predicate {pred}")
                kind_ = f"not:{pm.group(1)}"
            case.lines.append(f"retry {number(args[0])} {args[1]} {kind_} {host}")

    for c in cases:
        if len(c.lines) == 0:
            continue
        c.write(out)
    if not any(c.lines for c in cases):
        skipped.append(name)


def c_string(lit):
    return lit.encode("utf-8").decode("unicode_escape").encode("latin-1")


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write(__doc__)
        sys.exit(2)
    root = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    out_path = sys.argv[2] if len(sys.argv) == 3 else os.path.join(here, "published.txt")

    version = open(os.path.join(root, "VERSION.txt")).read().strip()
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "no git"
    out = [f"# Envoy {version} ({rev}): expectations of its own unit tests, transcribed by",
           "# tests/compat/envoy/extract.py from " + ", ".join([RING, MAGLEV, HASH]) + ".",
           "# Regenerate: tests/compat/envoy/extract.py ENVOY_CHECKOUT"]
    skipped = []
    for kind, path in (("ring_hash", RING), ("maglev", MAGLEV)):
        text = open(os.path.join(root, path)).read()
        starts = list(re.finditer(r"^TEST(?:_P|_F)?\((\w+), (\w+)\) \{", text, re.M))
        for i, m in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
            parse_test(kind, f"{m.group(1)}.{m.group(2)}", text[m.start():end], out, skipped)

    text = open(os.path.join(root, HASH)).read()
    for value, fn, lit in re.findall(
            r"EXPECT_EQ\((\d+)U?L?, (HashUtil::xxHash64|MurmurHash::murmurHash2)\(\"((?:[^\"\\]|\\.)*)\"\)\)",
            text):
        name = "xxhash64" if fn.endswith("xxHash64") else "murmur2"
        out.append(f"hash {name} {c_string(lit).hex() or '-'} {value}")

    out.append("# skipped (settings the presets do not model, or no concrete expectation): " +
               ", ".join(skipped))
    with open(out_path, "w") as f:
        f.write("\n".join(out) + "\n")
    n = sum(1 for line in out if line.split(" ")[0] in ("choose", "retry", "counts", "ring",
                                                          "table", "stat", "throws", "hash"))
    print(f"{out_path}: {n} expectations; skipped {len(skipped)} tests")


if __name__ == "__main__":
    main()
