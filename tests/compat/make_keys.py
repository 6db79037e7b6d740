#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/compat/keys.hex: the key set every peer vector file is made from.

Deterministic (no randomness from the clock): ASCII keys, UTF-8 keys, {hash tags}, one-byte keys,
every length 1..80, long keys, keys with spaces-free punctuation. Each line is one key in hex, so
any byte can appear. Keys contain no whitespace or control bytes (memcached and the Redis
inline protocol could not carry them), and are non-empty.
"""
import hashlib
import os

def keys():
    out = []
    # One-byte keys: every printable ASCII byte except space.
    for c in range(0x21, 0x7F):
        out.append(bytes([c]))
    # Typical cache keys.
    for i in range(600):
        out.append(f"user:{i}".encode())
    for i in range(200):
        out.append(f"session-{i * 7919}".encode())
    for i in range(100):
        out.append(f"product/{i}/detail".encode())
    # Hash tags (Redis, twemproxy hash_tag "{}").
    for i in range(100):
        out.append(f"{{user{i % 17}}}.followers.{i}".encode())
    out += [b"{}", b"{}{x}", b"foo{}{bar}", b"foo{{bar}}zap", b"{a", b"a}", b"}{b}", b"{{}}"]
    # UTF-8.
    for i, word in enumerate(["键", "缓存节点", "ключ", "κλειδί", "clé", "🔑", "鍵🔑", "μ"] * 20):
        out.append(f"{word}:{i}".encode("utf-8"))
    # Every length from 1 to 80 (hash tails), from a fixed alphabet.
    alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:."
    for n in range(1, 81):
        out.append(bytes(alphabet[(n * 7 + j) % len(alphabet)] for j in range(n)))
    # Long keys (memcached allows up to 250 bytes; keep the longest below that).
    for n in (100, 128, 200, 249):
        out.append(hashlib.sha256(str(n).encode()).hexdigest().encode() * (n // 64 + 1))
        out[-1] = out[-1][:n]
    # Digest-like keys.
    for i in range(600):
        out.append(hashlib.md5(str(i).encode()).hexdigest().encode())
    seen = set()
    uniq = []
    for k in out:
        assert k and all(b > 0x20 and b != 0x7F for b in k), k
        if k not in seen:
            seen.add(k)
            uniq.append(k)
    return uniq

if __name__ == "__main__":
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keys.hex")
    with open(path, "w") as f:
        for k in keys():
            f.write(k.hex() + "\n")
    print(f"wrote {path}")
