# SPDX-License-Identifier: Apache-2.0
# The .deb (cmake/packaging.cmake): packed from the build tree by CPack (or given as CHASH_DEB,
# e.g. `make package`'s), unpacked into a scratch root with dpkg-deb -x, and used from there:
# its programs run (a route, a config check, a proxy serving a real redis-server), its library
# links through its pkg-config file, its man pages render and cover every subcommand and option,
# its bash completion completes, its unit passes systemd-analyze, Depends covers every library
# its ELF files need, and lintian reports no error.
import glob
import gzip
import os
import re
import shutil
import subprocess

import pytest
import redis

from conftest import (ROOT, build_dir, built, free_port, require_tool, start_redis, wait_port)

VERSION_RE = re.compile(r"^chash \(([^)]+)\)")


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(argv, **kw)


def ok(argv, **kw):
    r = run(argv, **kw)
    assert r.returncode == 0, f"{argv}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    given = os.environ.get("CHASH_DEB")
    if given:
        return os.path.abspath(given)
    out = tmp_path_factory.mktemp("package")
    cpack = shutil.which("cpack") or pytest.fail("cpack not found (Debian cmake)")
    config = os.path.join(build_dir(), "CPackConfig.cmake")
    if not os.path.isfile(config):
        pytest.fail(f"no {config}: configure the tree first")
    # gzip instead of xz: the payload's compression is not under test and xz of a
    # RelWithDebInfo tree's libchash.a takes ~15 s.
    ok([cpack, "--config", config, "-B", str(out), "-D", "CPACK_DEBIAN_COMPRESSION_TYPE=gzip"])
    debs = glob.glob(str(out / "chash_*.deb"))
    assert len(debs) == 1, debs
    return debs[0]


@pytest.fixture(scope="module")
def root(deb, tmp_path_factory):
    r = tmp_path_factory.mktemp("root")
    ok(["dpkg-deb", "-x", deb, str(r)])
    ok(["dpkg-deb", "-e", deb, str(r / "DEBIAN")])
    return r


@pytest.fixture(scope="module")
def control(root):
    fields, key = {}, None
    for line in (root / "DEBIAN" / "control").read_text().splitlines():
        if line.startswith(" ") and key:
            fields[key] += "\n" + line
        else:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def libdir(root):
    """usr/lib, or usr/lib/<multiarch> when the tree was configured with the prefix /usr."""
    found = glob.glob(str(root / "usr/lib/**/libchash.so.*.*.*"), recursive=True)
    assert len(found) == 1, found
    return os.path.dirname(found[0])


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(chash VERSION ([0-9.]+)", f.read()).group(1)


def test_contents(root, control):
    v = version()
    with open(os.path.join(ROOT, "dist", "debian", "changelog")) as f:
        top = VERSION_RE.match(f.readline()).group(1)
    assert control["Package"] == "chash"
    assert control["Version"] == top and top.startswith(v + "-"), (control["Version"], top, v)
    lib = libdir(root)
    for path in ["usr/bin/chash", "usr/bin/chash-proxy",
                 "usr/include/chash/chash.h", "usr/include/chash/version.h",
                 "etc/chash-proxy/chash-proxy.yml", "lib/systemd/system/chash-proxy.service",
                 "usr/share/man/man1/chash.1.gz", "usr/share/man/man8/chash-proxy.8.gz",
                 "usr/share/bash-completion/completions/chash",
                 "usr/share/bash-completion/completions/chash-proxy",
                 "usr/share/chash/grafana/chash-proxy.json",
                 "usr/share/doc/chash/copyright", "usr/share/doc/chash/changelog.Debian.gz",
                 "usr/share/doc/chash/PROXY.md", "usr/share/doc/chash/REFERENCE.md"]:
        assert (root / path).is_file(), path
    for path in ["libchash.a", f"libchash.so.{v}", "cmake/chash/chashConfig.cmake",
                 "cmake/chash/chashConfigVersion.cmake", "pkgconfig/chash.pc"]:
        assert os.path.isfile(os.path.join(lib, path)), path
    # The SONAME link and the development link, as `make install` makes them.
    major_minor = ".".join(v.split(".")[:2])
    assert os.readlink(os.path.join(lib, "libchash.so")) == f"libchash.so.{major_minor}"
    assert os.readlink(os.path.join(lib, f"libchash.so.{major_minor}")) == f"libchash.so.{v}"
    # The example config is a conffile (kept on upgrade when edited); libchash has a shlibs
    # line and an ldconfig trigger.
    assert (root / "DEBIAN/conffiles").read_text().split() == ["/etc/chash-proxy/chash-proxy.yml"]
    assert (root / "DEBIAN/shlibs").read_text().split()[:3] == ["libchash", major_minor, "chash"]
    assert "activate-noawait ldconfig" in (root / "DEBIAN/triggers").read_text()
    with gzip.open(root / "usr/share/doc/chash/changelog.Debian.gz", "rt") as f:
        assert VERSION_RE.match(f.readline()).group(1) == control["Version"]
    assert "License: Apache-2.0" in (root / "usr/share/doc/chash/copyright").read_text()


def owner_package(path):
    """The Debian package that installed `path` (tried as /usr/lib and /lib: usrmerge)."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib/"):
            candidates.append("/usr" + p)
    for p in candidates:
        r = run(["dpkg", "-S", p])
        if r.returncode == 0:
            return r.stdout.split(":")[0]
    raise AssertionError(f"no package owns {path}")


def test_depends_cover_every_needed_library(root, control):
    """dpkg-shlibdeps' Depends names the Debian package of each library the ELF files need
    themselves (their NEEDED entries, as the dynamic linker resolves them here; what those
    libraries need in turn is their own packages' Depends)."""
    depends = {d.split()[0] for d in control["Depends"].split(",")}
    lib = libdir(root)
    elves = [str(root / "usr/bin/chash"), str(root / "usr/bin/chash-proxy"),
             *glob.glob(os.path.join(lib, "libchash.so.*.*.*"))]
    resolved = {}
    for elf in elves:
        needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", ok(["readelf", "-d", elf])))
        out = ok(["ldd", elf], env=dict(os.environ, LD_LIBRARY_PATH=lib))
        resolved.update((n, p) for n, p in re.findall(r"^\s*(\S+) => (/\S+)", out, re.M)
                        if n in needed)
    assert any(n.startswith("libyaml-cpp") for n in resolved), resolved  # chash-proxy's config
    for name, path in sorted(resolved.items()):
        if name.startswith("libchash."):
            assert path.startswith(lib), path  # this package's own
            continue
        owner = owner_package(path)
        assert owner in depends, f"{name} ({path}) is {owner}'s, not in {control['Depends']}"


def test_programs_run_from_the_package(root, tmp_path, processes):
    chash, proxy = str(root / "usr/bin/chash"), str(root / "usr/bin/chash-proxy")
    assert ok([chash, "--version"]).strip() == f"chash {version()}"
    # nutcracker's form, which scripts that strip "This is nutcracker-" keep working with.
    assert ok([proxy, "--version"]).strip() == (
        f"This is nutcracker-0.5.0-compatible chash-proxy-{version()}")
    # The same route as the build tree's chash (both link the same libchash statically).
    keys = "".join(f"user:{i}\n" for i in range(100))
    argv = ["route", "--preset", "ketama", "--nodes", "10.0.0.1:11211,10.0.0.2:11211,10.0.0.3:11211"]
    packaged = ok([chash] + argv, input=keys)
    assert len(packaged.splitlines()) == 100 and set(packaged.split()) == {
        "10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"}
    tree = built(os.path.join(build_dir(), "chash"), "chash")
    assert packaged == ok([tree] + argv, input=keys)
    # The example config passes the config test as shipped...
    example = (root / "etc/chash-proxy/chash-proxy.yml").read_text()
    ok([proxy, "-t", "-c", str(root / "etc/chash-proxy/chash-proxy.yml")])
    # ...and serves: on free ports, in front of a real redis-server.
    r1, r2 = start_redis(processes, "r1"), start_redis(processes, "r2")
    port, stats, admin = free_port(), free_port(), free_port()
    config = (example.replace("127.0.0.1:22121", f"127.0.0.1:{port}")
              .replace("127.0.0.1:22222", f"127.0.0.1:{stats}")
              .replace("127.0.0.1:22223", f"127.0.0.1:{admin}")
              .replace("127.0.0.1:6379:1", f"127.0.0.1:{r1}:1")
              .replace("127.0.0.1:6380:1", f"127.0.0.1:{r2}:1"))
    assert config.count("127.0.0.1:") == example.count("127.0.0.1:")
    (tmp_path / "proxy.yml").write_text(config)
    p = processes.start("proxy", [proxy, "-c", str(tmp_path / "proxy.yml")])
    wait_port(port, p)
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    for i in range(50):
        assert c.set(f"k{i}", i)
    assert c.mget([f"k{i}" for i in range(50)]) == [str(i).encode() for i in range(50)]
    direct = [redis.Redis(host="127.0.0.1", port=x).dbsize() for x in (r1, r2)]
    assert sum(direct) == 50 and min(direct) > 0, direct  # sharded over both
    c.close()


def test_library_links_through_its_pkg_config_file(root, tmp_path):
    """A program built against the unpacked root (chash.pc finds its prefix from its own
    location) links libchash.so from it and routes."""
    lib = libdir(root)
    src = tmp_path / "use.cc"
    src.write_text(
        '#include <chash/chash.h>\n#include <chash/version.h>\n#include <cstdio>\n#include <cstring>\n'
        'int main() {\n'
        '  std::vector<chash::Node> nodes = {{"a", 1}, {"b", 1}, {"c", 1}};\n'
        '  chash::RoutingSpec spec;\n  spec.preset = "ketama";\n'
        '  chash::Router r = chash::Router::build(spec, nodes);\n'
        '  std::printf("%s %s\\n", CHASH_VERSION_STRING, std::string(r.name(r.route("user:1"))).c_str());\n'
        '}\n')
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
    flags = ok(["pkg-config", "--cflags", "--libs", "chash"], env=env).split()
    assert any(f.startswith("-L") and os.path.samefile(f[2:], lib) for f in flags), flags
    ok([os.environ.get("CXX", "g++"), "-std=c++20", str(src), "-o", str(tmp_path / "use")] + flags)
    needed = ok(["readelf", "-d", str(tmp_path / "use")])
    assert "libchash.so." in needed
    out = ok([str(tmp_path / "use")], env=dict(os.environ, LD_LIBRARY_PATH=lib)).split()
    tree = built(os.path.join(build_dir(), "chash"), "chash")
    assert out == [version(), ok([tree, "route", "--preset", "ketama", "--nodes", "a,b,c"],
                                 input="user:1\n").strip()]


def rendered(page, width=200):
    """man -l of a page: its text, and man's/groff's warnings (there must be none)."""
    env = dict(os.environ, MANWIDTH=str(width), LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    r = run(["man", "--warnings", "-E", "UTF-8", "-l", str(page)], env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr.strip()


def cli11_long_options(help_text):
    return set(re.findall(r"^  (?:-\w,)?(--[a-z][a-z0-9-]*)", help_text, re.M)) - {"--help"}


def test_man_pages_render_and_cover_every_subcommand(root):
    require_tool("man", "man-db")
    chash = str(root / "usr/bin/chash")
    text, warnings = rendered(root / "usr/share/man/man1/chash.1.gz")
    assert not warnings, warnings
    assert "CHASH(1)" in text and f"chash {version()}" in text
    top = ok([chash, "--help"])
    subs = re.findall(r"^  (\S+)\s{2,}", top.split("Subcommands:")[1], re.M)
    assert "route" in subs and "rebalance" in subs and len(subs) >= 10, subs
    for sub in subs:
        m = re.search(rf"^   chash {sub}\n(.*?)(?=^   chash |^EXIT STATUS)", text, re.M | re.S)
        assert m, f"chash(1) has no section for `chash {sub}`"
        missing = [o for o in cli11_long_options(ok([chash, sub, "--help"]))
                   if not re.search(rf"(?<![\w-]){o}(?![\w-])", m.group(1))]
        assert not missing, f"chash(1), `chash {sub}`: options not described: {missing}"
    for section in ("SYNOPSIS", "SUBCOMMANDS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        assert re.search(rf"^{section}$", text, re.M), section

    proxy = str(root / "usr/bin/chash-proxy")
    text, warnings = rendered(root / "usr/share/man/man8/chash-proxy.8.gz")
    assert not warnings, warnings
    assert "CHASH-PROXY(8)" in text
    # The footer names the program and version, not -V's nutcracker sentence, and fits 80
    # columns: its last line is "chash-proxy VERSION   <date>   CHASH-PROXY(8)".
    narrow, _ = rendered(root / "usr/share/man/man8/chash-proxy.8.gz", width=80)
    footer = [line for line in narrow.splitlines() if line.strip()][-1]
    assert footer.startswith(f"chash-proxy {version()} ") and footer.endswith("CHASH-PROXY(8)"), \
        footer
    assert len(footer) <= 80, footer
    assert "nutcracker-0.5.0-compatible" not in footer
    options = set(re.findall(r"(--[a-z][a-z-]+)", ok([proxy, "--help"])))
    assert {"--conf-file", "--test-conf", "--workers", "--takeover"} <= options
    missing = [o for o in options if o not in text]
    assert not missing, f"chash-proxy(8) lacks {missing}"
    for section in ("SYNOPSIS", "ADMIN PORT", "FILES", "SEE ALSO"):
        assert re.search(rf"^{section}$", text, re.M), section


COMPLETE = r'''
source /usr/share/bash-completion/bash_completion
source "$COMPLETIONS/chash"
source "$COMPLETIONS/chash-proxy"
complete_line() {
    local line=$1 f=$2
    COMP_LINE=$line; COMP_POINT=${#line}
    read -ra COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
    $f "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
    printf '%s\n' "${COMPREPLY[@]}"
}
complete_line "$LINE" "$FUNC"
'''


def complete(root, line, func="_chash"):
    require_tool("bash", "bash")
    if not os.path.isfile("/usr/share/bash-completion/bash_completion"):
        pytest.fail("no /usr/share/bash-completion/bash_completion (Debian bash-completion)")
    env = dict(os.environ, COMPLETIONS=str(root / "usr/share/bash-completion/completions"),
               LINE=line, FUNC=func,
               PATH=str(root / "usr/bin") + os.pathsep + os.environ["PATH"])
    return ok(["bash", "-c", COMPLETE], env=env).split()


def test_bash_completion(root):
    chash = str(root / "usr/bin/chash")
    top = ok([chash, "--help"])
    subs = re.findall(r"^  (\S+)\s{2,}", top.split("Subcommands:")[1], re.M)
    assert set(complete(root, "chash ")) == set(subs) | {"--help", "--version"}
    assert complete(root, "chash reb") == ["rebalance"]
    for sub in subs:
        offered = set(complete(root, f"chash {sub} --"))
        assert cli11_long_options(ok([chash, sub, "--help"])) <= offered, sub
    # Values: every one offered is one chash takes.
    algos = complete(root, "chash route --algo ")
    assert {"ring", "jump", "maglev", "rendezvous"} <= set(algos), algos
    hashes = complete(root, "chash route --hash ")
    assert {"xxh3", "md5", "fnv1a_64", "murmur3_32"} <= set(hashes), hashes
    for algo in algos:
        for h in (hashes if algo == "ring" else ["xxh3"]):
            r = run([chash, "route", "--algo", algo, "--hash", h, "--nodes", "a,b,c",
                     "--synthetic", "3"])
            assert r.returncode == 0, (algo, h, r.stderr)
    presets = complete(root, "chash route --preset ")
    assert {"ketama", "twemproxy", "jedis"} <= set(presets), presets
    for preset in presets:
        r = run([chash, "route", "--preset", preset, "--nodes", "10.0.0.1:1,10.0.0.2:1",
                 "--keys-file", "/dev/null"])
        assert r.returncode == 0, (preset, r.stderr)
    assert complete(root, "chash route --format ") == ["csv", "json", "table"]
    assert complete(root, "chash plot --kind ") == ["ring", "load", "moves", "sweep"]
    assert "balance-factor" in complete(root, "chash sweep --param ")
    assert complete(root, "chash route --preset ket") == ["ketama", "ketama-spy"]
    # chash-proxy: its options, and a config file for -c.
    offered = complete(root, "chash-proxy --", "_chash_proxy")
    assert {"--conf-file=", "--test-conf", "--check", "--workers=", "--takeover"} <= set(offered)
    assert complete(root, "chash-proxy --log-level ", "_chash_proxy") == [
        "debug", "info", "warn", "error"]


def test_systemd_unit(root, tmp_path):
    """The unit names the packaged paths and passes systemd-analyze verify (pointed at the
    unpacked binary: verify checks that ExecStart's program exists)."""
    unit = (root / "lib/systemd/system/chash-proxy.service").read_text()
    assert "Environment=CONFIG=/etc/chash-proxy/chash-proxy.yml" in unit
    assert "ExecStart=/usr/bin/chash-proxy -c ${CONFIG}" in unit
    assert "ExecStartPre=/usr/bin/chash-proxy --check -c ${CONFIG}" in unit
    analyze = require_tool("systemd-analyze", "systemd")
    copy = tmp_path / "chash-proxy.service"
    copy.write_text(unit.replace("/usr/bin/chash-proxy", str(root / "usr/bin/chash-proxy")))
    # verify runs `man` for Documentation=man:chash-proxy(8): the unpacked page answers.
    r = run([analyze, "verify", str(copy)],
            env=dict(os.environ, MANPATH=str(root / "usr/share/man")))
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr


def test_lintian_reports_no_errors(deb):
    lintian = require_tool("lintian", "lintian")
    r = run([lintian, "--fail-on", "error", deb], timeout=300)
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    assert r.returncode == 0 and not errors, r.stdout + r.stderr
