#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the man pages chash(1) and chash-proxy(8), gzipped, from the programs' own --help.

    make_man.py --chash build/chash --proxy build/chash-proxy --out build/man

help2man (Debian help2man) makes each page from `--help` and `--version`; this script gives it
what --help alone cannot: for chash(1) a SUBCOMMANDS section with every subcommand's own
`chash SUB --help` (options as .TP entries), found from the "Subcommands:" list of `chash
--help`, so a new subcommand is in the page without editing anything; for both the NAME,
SYNOPSIS, EXIT STATUS, FILES, EXAMPLES and SEE ALSO sections (dist/man/*.h2m). The pages are
compressed as Debian policy wants (gzip -9n: no name, no timestamp; the page's date comes from
SOURCE_DATE_EPOCH when it is set, as help2man does, so the build is reproducible).
"""
import argparse
import gzip
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def roff(text):
    """Plain text as roff: backslashes, minus signs, a leading control character, the dash."""
    text = text.replace("\\", "\\e").replace("-", "\\-").replace("\u2014", "\\(em")
    text = text.replace("\u2192", "\\(->").replace("\u00d7", "\\(mu")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.M)


def run_help(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, LC_ALL="C.UTF-8"))
    if r.returncode != 0:
        sys.exit(f"make_man: {' '.join(argv)} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def subcommands(top_help):
    """The names in the "Subcommands:" list of a CLI11 --help."""
    names, inside = [], False
    for line in top_help.splitlines():
        if line.strip() == "Subcommands:":
            inside = True
        elif inside and re.match(r"^  \S", line):
            names.append(line.split()[0])
        elif inside and line.strip() and not line.startswith(" "):
            inside = False
    if not names:
        sys.exit("make_man: `chash --help` lists no subcommands")
    return names


def option_spec(spec):
    """A CLI11 option column as roff: names bold, value types italic, constraints plain."""
    notes = []
    m = re.search(r"\s+(Excludes|Needs):\s+(.*)$", spec)
    if m:
        notes.append(("not with " if m.group(1) == "Excludes" else "needs ")
                     + ", ".join(m.group(2).split()))
        spec = spec[:m.start()]
    if re.search(r"\s+REQUIRED\b", spec):
        notes.append("required")
        spec = re.sub(r"\s+REQUIRED\b", "", spec)
    # ENUM:value in {csv->1,json->2,table->0} OR {1,2,0}  ->  csv|json|table
    spec = re.sub(r"ENUM:value in \{([^}]*)\}(?: OR \{[^}]*\})?",
                  lambda e: "|".join(x.split("->")[0] for x in e.group(1).split(",")), spec)
    spec = re.sub(r"\b(?:UINT|INT|FLOAT):(?:INT|FLOAT) in \[([^\]]*)\]",
                  lambda r: "NUMBER in [" + r.group(1) + "]", spec)
    spec = re.sub(r"\bFLOAT:NONNEGATIVE\b", "FLOAT>=0", spec)
    spec = re.sub(r"\bTEXT:FILE\b", "FILE", spec)
    words = []
    for w in spec.split(" "):
        if w.startswith("-"):
            words.append(",".join(f"\\fB{roff(n)}\\fR" for n in w.split(",")))
        elif w == "...":
            words.append("...")
        elif w:
            words.append(f"\\fI{roff(w)}\\fR")
    return " ".join(words), notes


def cli11_section(program, name, text):
    """One subcommand's CLI11 --help as a .SS with its description and a .TP per option."""
    lines = text.splitlines()
    usage = next(i for i, line in enumerate(lines) if line.startswith("Usage:"))
    out = [f'.SS "{program} {name}"', roff(" ".join(x.strip() for x in lines[:usage]))]
    options = []  # [spec, notes, description words]
    for line in lines[usage + 1:]:
        if not line.strip() or re.match(r"^\S.*:$", line):
            continue
        if re.match(r"^  \S", line):
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            options.append([parts[0], parts[1] if len(parts) > 1 else ""])
        elif line.startswith("    ") and options:
            options[-1][1] = (options[-1][1] + " " + line.strip()).strip()
        elif not line.startswith("Exit codes:"):  # the exit codes have their own section
            out += [".PP", roff(line.strip())]
    for spec, desc in options:
        if spec.startswith("-h,--help"):
            continue
        head, notes = option_spec(spec)
        if notes:
            desc = f"{desc} ({'; '.join(notes)})" if desc else f"({'; '.join(notes)})"
        out += [".TP", head, roff(desc)]
    return "\n".join(out)


def executable(path, what):
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        sys.exit(f"make_man: no {what} at {path}")
    return os.path.abspath(path)


def proxy_version_string(proxy):
    """chash-proxy's -V is nutcracker's sentence ("This is nutcracker-0.5.0-compatible
    chash-proxy-0.2.0", kept for scripts that parse nutcracker's), which help2man would put
    whole in the page's footer, garbled at 80 columns: the page gets "chash-proxy 0.2.0"."""
    line = run_help([proxy, "-V"]).strip()
    m = re.search(r"chash-proxy-(\S+)$", line)
    if not m:
        sys.exit(f"make_man: {proxy} -V printed no chash-proxy-VERSION: {line!r}")
    return f"chash-proxy {m.group(1)}"


def help2man(bindir, program, section, include, out, version_string=None):
    """help2man on `program` found through PATH (so that its usage says `chash`, not a path)."""
    tool = shutil.which("help2man")
    if tool is None:
        sys.exit("make_man: help2man not found (Debian help2man; scripts/bootstrap.sh)")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    extra = [f"--version-string={version_string}"] if version_string else []
    r = subprocess.run([tool, "--no-info", "--locale=C.UTF-8", f"--section={section}",
                        f"--include={include}", "--output", out] + extra + [program],
                       env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"make_man: help2man {program} failed: {r.stderr}")
    with open(out, encoding="utf-8") as f:
        page = f.read()
    # help2man passes the help's UTF-8 through; groff's named glyphs render anywhere. A heading
    # made from a help line keeps that line's quotes, which would end the .SS argument early.
    page = page.replace("\u2014", "\\(em").replace("\u2192", "\\(->").replace("\u00d7", "\\(mu")
    return re.sub(r'^\.SS "(.*)"$', lambda m: '.SS "' + m.group(1).replace('"', "\\(dq") + '"',
                  page, flags=re.M)


def write_gz(page, path):
    with open(path, "wb") as f:
        f.write(gzip.compress(page.encode("utf-8"), compresslevel=9, mtime=0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chash", required=True, help="the chash binary")
    ap.add_argument("--proxy", required=True, help="the chash-proxy binary")
    ap.add_argument("--out", required=True, help="directory for chash.1.gz, chash-proxy.8.gz")
    args = ap.parse_args()
    chash = executable(args.chash, "chash")
    proxy = executable(args.proxy, "chash-proxy")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        os.symlink(chash, os.path.join(bindir, "chash"))
        # chash-proxy's usage lines are nutcracker-style ("usage:"), which help2man does not
        # take for a synopsis: chash-proxy.h2m has the SYNOPSIS, the lines are left out here.
        wrapper = os.path.join(bindir, "chash-proxy")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n"
                    f'if [ "$1" = --help ]; then "{proxy}" --help | sed "/^usage:/,/^$/d"\n'
                    f'else exec "{proxy}" "$@"; fi\n')
        os.chmod(wrapper, stat.S_IRWXU)

        top = run_help([chash, "--help"])
        sections = [cli11_section("chash", s, run_help([chash, s, "--help"]))
                    for s in subcommands(top)]
        include = os.path.join(tmp, "chash.h2m")
        with open(os.path.join(HERE, "chash.h2m"), encoding="utf-8") as f:
            template = f.read()
        with open(include, "w", encoding="utf-8") as f:
            f.write(template.replace("@SUBCOMMANDS@", "\n".join(sections)))
        write_gz(help2man(bindir, "chash", 1, include, os.path.join(tmp, "chash.1")),
                 os.path.join(args.out, "chash.1.gz"))
        write_gz(help2man(bindir, "chash-proxy", 8, os.path.join(HERE, "chash-proxy.h2m"),
                          os.path.join(tmp, "chash-proxy.8"), proxy_version_string(proxy)),
                 os.path.join(args.out, "chash-proxy.8.gz"))


if __name__ == "__main__":
    main()
