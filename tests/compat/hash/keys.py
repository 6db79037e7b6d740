#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the key set every peer generator hashes: one key per line, as lowercase hex.

The empty key is the empty line. The set covers: the empty key, every single byte 00..ff,
ASCII words, the CRC check string "123456789", UTF-8 (Chinese, emoji incl. a ZWJ sequence),
malformed UTF-8, every length 1..64 (so every tail length of 4-, 8- and 16-byte blocks) over
bytes that include >= 0x80, and long keys (1000+ bytes). Deterministic: no randomness.
"""

import sys


def keys():
    out = [b""]
    out += [bytes([b]) for b in range(256)]
    out += [
        b"a",
        b"hello",
        b"foobar",
        b"123456789",
        b"user:42",
        b"{user1000}.following",
        b"The quick brown fox jumps over the lazy dog",
        b"Four score and seven years ago",
        "\u4e2d\u6587".encode(),  # Chinese
        "\u4f60\u597d\uff0c\u4e16\u754c".encode(),  # "Hello, world" in Chinese
        "h\u00e9llo w\u00f6rld".encode(),  # Latin-1 range, two-byte UTF-8
        "\U0001F600".encode(),  # emoji, four-byte UTF-8 (surrogate pair in UTF-16)
        "\U0001F468\u200d\U0001F469\u200d\U0001F467".encode(),  # ZWJ family
        "key-\U0001F511-\u00e9-\u4e2d".encode(),
        b"\xc3\x28",  # bad second byte after a two-byte lead
        b"\xe2\x28\xa1",  # bad second byte after a three-byte lead
        b"\xe2\x82\x28",  # bad third byte
        b"\xed\xa0\x80",  # UTF-16 surrogate encoded in UTF-8 (CESU)
        b"\xed\xa0\xbd\xed\xb8\x80",  # surrogate pair in CESU-8
        b"\xc0\xaf",  # overlong "/"
        b"\xe0\x80\xaf",  # overlong, three bytes
        b"\xf0\x80\x80\xaf",  # overlong, four bytes
        b"\xf4\x90\x80\x80",  # above U+10FFFF
        b"\xf8\x88\x80\x80\x80",  # five-byte form
        b"\xf0\x9f\x98",  # emoji cut short
        b"abc\xf0\x9f",  # cut short after ASCII
        b"\xff\xfe\xfd",
        b"\x80\x81\x82\x83",  # stray continuation bytes
        b"\x00\x00\x00\x00",
        b"\x00abc\x00",
    ]
    pattern = bytes((i * 167 + 13) & 0xFF for i in range(64))
    out += [pattern[:n] for n in range(1, 65)]
    out += [b"x" * 1000]
    out += [bytes((i * 31 + 7) & 0xFF for i in range(1031))]
    out += [("\u4e2d\U0001F600" * 150).encode()]  # 1050 bytes of valid UTF-8
    return out


def main():
    for k in keys():
        sys.stdout.write(k.hex() + "\n")


if __name__ == "__main__":
    main()
