# SPDX-License-Identifier: Apache-2.0
"""Formats bench/peers/run.sh results ("name\\tns\\tchecksum" lines) as Markdown tables."""
import sys

# peer -> (language, chash preset with the same mapping, chash native algorithm doing its job)
PEERS = {
    "libmemcached": ("C", "ketama", "ring"),
    "guava": ("Java", "guava", "jump"),
    "uhashring": ("Python", "uhashring", "ring"),
    "node-hashring": ("Node", "node-hashring", "ring"),
    "groupcache": ("Go", "groupcache", "ring"),
}

rows = {}
for line in open(sys.argv[1]):
    name, ns, checksum = line.rstrip("\n").split("\t")
    rows[name] = (float(ns), checksum)

chash = {k[len("chash:"):]: v for k, v in rows.items() if k.startswith("chash:")}
natives = {k: v for k, v in chash.items() if k not in {p[1] for p in PEERS.values()} and
           not k.startswith("hash_only")}
fastest = min(natives, key=lambda k: natives[k][0])

print("| peer | lang | ns/lookup | chash preset | preset ns | peer / preset | same nodes | "
      f"chash native | native ns | peer / native | peer / fastest native ({fastest}) |")
print("|---|---|---:|---|---:|---:|---|---|---:|---:|---:|")
for peer, (lang, preset, native) in PEERS.items():
    if peer not in rows:
        print(f"| {peer} | {lang} | (not run) | | | | | | | | |")
        continue
    ns, ck = rows[peer]
    pns, pck = chash[preset]
    nns = chash[native][0]
    print(f"| {peer} | {lang} | {ns:.1f} | {preset} | {pns:.1f} | {ns / pns:.1f}x | "
          f"{'yes' if ck == pck else 'NO'} | {native} | {nns:.1f} | {ns / nns:.1f}x | "
          f"{ns / natives[fastest][0]:.1f}x |")

non_c = {p: rows[p][0] for p, (lang, _, _) in PEERS.items() if p in rows and lang != "C"}
print()
if non_c:
    best_peer = min(non_c, key=non_c.get)
    print(f"Native algorithms against the fastest non-C peer ({best_peer}, {non_c[best_peer]:.1f} ns):")
    print()
    print("| chash native | ns/lookup | fastest non-C peer / native |")
    print("|---|---:|---:|")
    for name, (ns, _) in sorted(natives.items(), key=lambda kv: kv[1][0]):
        print(f"| {name} | {ns:.1f} | {non_c[best_peer] / ns:.1f}x |")
if "hash_only(xxh3)" in chash:
    print(f"\nxxh3 of the key alone: {chash['hash_only(xxh3)'][0]:.1f} ns")
