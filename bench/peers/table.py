# SPDX-License-Identifier: Apache-2.0
"""Formats bench/peers/run.sh results ("name\\tns\\tchecksum" lines) as Markdown tables.

A program run several times (run.sh REPEAT) appears once: its least ns. Its checksum must be the
same every run (it is the sum of the nodes chosen, not a timing)."""
import sys

# peer -> (language, chash preset with the same mapping, chash native algorithm doing its job)
PEERS = {
    "libmemcached": ("C", "ketama", "ring"),
    "guava": ("Java", "guava", "jump"),
    "uhashring": ("Python", "uhashring", "ring"),
    "node-hashring": ("Node", "node-hashring", "ring"),
    "groupcache": ("Go", "groupcache", "ring"),
}
# chash's numbered-bucket algorithms, compared with Guava's consistentHash (the same job).
JUMP_CLASS = ["jump", "jumpback", "memento", "memento-jumpback"]

rows = {}
for line in open(sys.argv[1]):
    name, ns, checksum = line.rstrip("\n").split("\t")
    if name in rows and rows[name][1] != checksum:
        checksum = "differs between runs"
    if name not in rows or float(ns) < rows[name][0]:
        rows[name] = (float(ns), checksum)
    else:
        rows[name] = (rows[name][0], checksum)

chash = {k[len("chash:"):]: v for k, v in rows.items() if k.startswith("chash:")}
presets = {p[1] for p in PEERS.values()}
natives = {k: v for k, v in chash.items()
           if k not in presets and k.split("(")[0] not in presets and
           not k.startswith("hash_only") and not k.startswith("pick(")}
fastest = min(natives, key=lambda k: natives[k][0]) if natives else None


def ratio(a, b):
    return f"{a / b:.1f}x"


print("| peer | lang | ns/lookup | chash preset | preset ns | peer / preset | preset batch ns | "
      f"peer / batch | same nodes | chash native | native ns | peer / native | native batch ns | "
      f"peer / native batch | peer / fastest native ({fastest}) |")
print("|---|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|")
for peer, (lang, preset, native) in PEERS.items():
    if peer not in rows:
        print(f"| {peer} | {lang} | (not run) | {preset} | | | | | | {native} | | | | | |")
        continue
    ns, ck = rows[peer]
    nns = chash[native][0] if native in chash else None
    nbns = chash[native + "(batch)"][0] if native + "(batch)" in chash else None
    cells = [peer, lang, f"{ns:.1f}", preset]
    if preset in chash:
        pns, pck = chash[preset]
        bns, bck = chash.get(preset + "(batch)", (None, None))
        same = "yes" if ck == pck and (bck is None or bck == pck) else "NO"
        cells += [f"{pns:.1f}", ratio(ns, pns),
                  f"{bns:.1f}" if bns else "", ratio(ns, bns) if bns else "", same]
    else:
        cells += ["(n/a)", "", "", "", ""]
    cells += [native, f"{nns:.1f}" if nns else "", ratio(ns, nns) if nns else "",
              f"{nbns:.1f}" if nbns else "", ratio(ns, nbns) if nbns else "",
              ratio(ns, natives[fastest][0]) if fastest else ""]
    print("| " + " | ".join(cells) + " |")

non_c = {p: rows[p][0] for p, (lang, _, _) in PEERS.items() if p in rows and lang != "C"}
print()
if non_c and natives:
    best_peer = min(non_c, key=non_c.get)
    print(f"Native algorithms against the fastest non-C peer ({best_peer}, {non_c[best_peer]:.1f} ns):")
    print()
    print("| chash native | ns/lookup | fastest non-C peer / native |")
    print("|---|---:|---:|")
    for name, (ns, _) in sorted(natives.items(), key=lambda kv: kv[1][0]):
        print(f"| {name} | {ns:.1f} | {non_c[best_peer] / ns:.1f}x |")

# Issue 15's targets for the native ring: at least 15x Guava's lookup and 25x groupcache's (both
# with their key hash), one key at a time and in route_batch.
if "ring" in chash and ("guava" in rows or "groupcache" in rows):
    print()
    print("Native ring against Guava and groupcache (issue 15 targets: >= 15x Guava, >= 25x "
          "groupcache):")
    print()
    print("| peer | peer ns | ring ns | peer / ring | ring batch ns | peer / ring batch |")
    print("|---|---:|---:|---:|---:|---:|")
    rb = chash.get("ring(batch)", (None,))[0]
    for peer in ("guava", "groupcache"):
        if peer not in rows:
            continue
        ns, r = rows[peer][0], chash["ring"][0]
        batch = f"{rb:.1f} | {ratio(ns, rb)}" if rb else " | "
        print(f"| {peer} | {ns:.1f} | {r:.1f} | {ratio(ns, r)} | {batch} |")

# The jump class against Guava: whole lookups (key hash + placement; Guava: murmur3_128 +
# consistentHash) and the placement alone (a precomputed 64-bit hash; Guava: consistentHash).
jc = [a for a in JUMP_CLASS if a in chash]
if "guava" in rows and jc:
    g, g_alone = rows["guava"][0], rows.get("guava-consistentHash", (None,))[0]
    print()
    print(f"Numbered buckets against Guava (lookup {g:.1f} ns"
          + (f", consistentHash alone {g_alone:.1f} ns):" if g_alone else "):"))
    print()
    print("| chash | ns/lookup | Guava lookup / chash | ns/placement | "
          "Guava consistentHash / chash placement |")
    print("|---|---:|---:|---:|---:|")
    for a in jc:
        ns = chash[a][0]
        pick = chash.get(f"pick({a})", (None,))[0]
        alone = f"{pick:.1f} | {g_alone / pick:.1f}x" if pick and g_alone else " | "
        print(f"| {a} | {ns:.1f} | {g / ns:.1f}x | {alone} |")
if "hash_only(xxh3)" in chash:
    print(f"\nxxh3 of the key alone: {chash['hash_only(xxh3)'][0]:.1f} ns")
