// SPDX-License-Identifier: Apache-2.0
// A batch of Java Strings as a JVM holds them, routed as their String.getBytes(UTF_8): what the
// C ABI's chash_route_java_strings takes from the Java binding (bindings/java, KeyPack.java).
// Not installed.
//
// Why the library takes Strings in the JDK's own form: copying a String's bytes as they are is
// the cheapest thing Java can do with it (getBytes, or a charAt loop, works char by char), and
// most keys are ASCII, already their own UTF-8. Taking them here rather than in the binding's C
// lets the guava preset hash them where they lie: its AVX-512 kernel finds the few non-ASCII
// Latin-1 keys itself, and keys encoded from UTF-16 are well-formed by construction, so neither
// needs the per-key ASCII scan or UTF-8 check a batch of plain bytes pays (bindings bench, C side,
// 10 nodes: see jvm.cc's guava_java_key_hashes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chash/node.h"
#include "presets/java_text.h"

namespace chash {
class Router;
}

namespace chash::presets {

// JDK 9+ compact strings: a String's text is Latin-1 bytes (coder 0) or UTF-16 units in the
// platform's byte order (coder 1).
inline constexpr std::uint8_t kJavaLatin1 = 0;
inline constexpr std::uint8_t kJavaUtf16 = 1;

// Key i is data[from .. offsets[i + 1]) in coders[i]'s form, where from is offsets[i], rounded up
// to even for a UTF-16 key (KeyPack.java aligns them so). With coders null every key is UTF-16
// and the offsets count units (a char[] of String.getChars). offsets has count + 1 entries;
// data is aligned to 2 bytes (a Java array's elements are).
struct JavaStrings {
  const char* data = nullptr;
  std::size_t data_len = 0;  // bytes
  const std::uint8_t* coders = nullptr;
  const std::int32_t* offsets = nullptr;
  std::size_t count = 0;
};

// Key i's text: its bytes (Latin-1) or its units (UTF-16, `text` 2-byte aligned, len in bytes).
struct JavaKey {
  const char* text;
  std::size_t len;
  std::uint8_t coder;
};

// Throws Error (kInvalidArgument) saying what is wrong with key i (java_key).
[[noreturn, gnu::cold, gnu::noinline]] void refuse_java_key(const JavaStrings& keys, std::size_t i);

// Key i of `keys`, its bounds checked: an offset outside the data, offsets going backwards, a
// UTF-16 key of an odd number of bytes or a coder that is neither throws Error
// (kInvalidArgument) naming the entry, so a caller's bug never reads outside the buffer. Inline:
// it runs once per key in the batch's loop.
inline JavaKey java_key(const JavaStrings& keys, std::size_t i) {
  const bool units = keys.coders == nullptr;  // every key UTF-16, offsets counting units
  const std::uint8_t coder = units ? kJavaUtf16 : keys.coders[i];
  const std::int32_t start = keys.offsets[i];
  const std::int32_t to = keys.offsets[i + 1];
  const unsigned shift = units ? 1 : 0;  // bytes per offset step: 2 or 1 (a shift, not a divide)
  std::size_t from = static_cast<std::size_t>(start) << shift;
  const std::size_t end = static_cast<std::size_t>(to) << shift;
  from += from & coder;  // a UTF-16 key starts at an even byte
  if (start < 0 || from > end || static_cast<std::size_t>(to) > keys.data_len >> shift ||
      coder > kJavaUtf16 || ((end - from) & coder) != 0) [[unlikely]] {
    refuse_java_key(keys, i);
  }
  return {keys.data + from, end - from, coder};
}

// Spare bytes java_utf16_to_utf8 may write past a key's UTF-8 (whole-register stores).
inline constexpr std::size_t kJavaUtf8Slack = 64;

// String.getBytes(UTF_8) of n UTF-16 units (OpenJDK 17, StringCoding.encodeUTF8_UTF16): a
// surrogate pair becomes 4 bytes, an unpaired surrogate the replacement byte '?', and the unit
// after an unpaired high surrogate is encoded on its own. out must hold 3 * n + kJavaUtf8Slack
// bytes; returns the bytes written. ASCII eight units at a time; otherwise, where the CPU has
// AVX-512 VBMI2, sixteen units at a time until a surrogate (`vector` false: the plain loop, for
// tests).
std::size_t java_utf16_to_utf8(const std::uint16_t* s, std::size_t n, char* out,
                               bool vector = true) noexcept;

// String.getBytes(UTF_8) of n Latin-1 bytes: each byte of 0x80 or more becomes two. out must
// hold 2 * n bytes; returns the bytes written.
std::size_t java_latin1_to_utf8(const std::uint8_t* s, std::size_t n, char* out) noexcept;

// The bytes java_to_utf8 may write for key: its UTF-8 and the encoder's spare bytes.
inline std::size_t java_utf8_bound(const JavaKey& key) noexcept {
  return key.coder == kJavaUtf16 ? 3 * (key.len / 2) + kJavaUtf8Slack : 2 * key.len;
}

// key's String.getBytes(UTF_8) into out, which holds java_utf8_bound(key) bytes: the bytes of
// UTF-8 written.
std::size_t java_to_utf8(const JavaKey& key, char* out) noexcept;

// key as UTF-8 in `view`: where it lies when it is ASCII Latin-1 (its own UTF-8), else encoded
// into buf[used .. cap), `used` moved past it; false, nothing written, when it does not fit.
// Inline: it runs once per key of a batch, and an out-of-line call cost ~2 ns a key there
// (spymemcached's String batch, C side, 10 nodes: 24.0 -> 26.3 ns).
inline bool java_utf8_view(const JavaKey& key, char* buf, std::size_t cap, std::size_t& used,
                           std::string_view& view) noexcept {
  if (key.coder == kJavaLatin1 && is_ascii(std::string_view(key.text, key.len))) {
    view = std::string_view(key.text, key.len);
    return true;
  }
  if (java_utf8_bound(key) > cap - used) return false;
  view = std::string_view(buf + used, java_to_utf8(key, buf + used));
  used += view.size();
  return true;
}

// out[i] = router.route(String.getBytes(UTF_8) of key i) for i < keys.count: the guava preset
// hashes the keys in place (guava_route_java_strings, jvm.cc); every other router gets them as
// UTF-8 a chunk at a time (the ASCII Latin-1 keys where they lie, the rest encoded into a stack
// buffer) through route_batch. Throws Error (kInvalidArgument) at the first bad entry (the keys
// before its chunk are routed), or when data is not aligned to 2 bytes.
void route_java_strings(const Router& router, const JavaStrings& keys, NodeId* out);

// ---- Internals shared with jvm.cc -------------------------------------------------------------

// Calls f(piece) with key's String.getBytes(UTF_8) a piece at a time (pieces of a few KiB on the
// stack, a surrogate pair never split): for keys too long for a batch's buffers.
template <class F>
void java_utf8_pieces(const JavaKey& key, F&& f) {
  constexpr std::size_t kUnits = 1024;  // a piece: at most 3 KiB of UTF-8
  char buf[3 * kUnits + kJavaUtf8Slack];
  if (key.coder == kJavaLatin1) {
    const auto* s = reinterpret_cast<const std::uint8_t*>(key.text);
    for (std::size_t i = 0; i < key.len; i += kUnits) {
      const std::size_t n = key.len - i < kUnits ? key.len - i : kUnits;
      f(std::string_view(buf, java_latin1_to_utf8(s + i, n, buf)));
    }
    return;
  }
  const auto* s = reinterpret_cast<const std::uint16_t*>(static_cast<const void*>(key.text));
  const std::size_t units = key.len / 2;
  for (std::size_t i = 0; i < units;) {
    std::size_t n = units - i < kUnits ? units - i : kUnits;
    // A high surrogate that ends the piece belongs with the next one (a pair stays whole).
    if (i + n < units && s[i + n - 1] >= 0xD800 && s[i + n - 1] <= 0xDBFF) --n;
    f(std::string_view(buf, java_utf16_to_utf8(s + i, n, buf)));
    i += n;
  }
}

}  // namespace chash::presets
