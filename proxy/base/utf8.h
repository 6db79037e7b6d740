// SPDX-License-Identifier: Apache-2.0
// chash-proxy — UTF-8 validation for text the control plane shows: keys (hot keys are network
// bytes, often binary), server replies in last_error, names. JSON (/status) and Prometheus'
// text format must be UTF-8, and a log line must not carry raw terminal bytes, so every writer
// shows a byte that is not part of a valid sequence as the four characters \xNN (as redis-cli
// shows binary keys). Hand-written: the only need is "how long is the valid sequence here", which
// no Debian-packaged library offers on its own (simdutf is not in Debian 12; ICU is far larger).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace chash::proxy {

// The length (1..4) of the well-formed UTF-8 sequence at the start of s (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 if s is empty or does not start with one.
constexpr std::size_t utf8_sequence_length(std::string_view s) noexcept {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range (RFC 3629 section 4)
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if (b(i) < 0x80 || b(i) > 0xbf) return 0;
  }
  return n;
}

// Walks s: on_text(sequence) for each well-formed sequence (one byte for ASCII), on_byte(c) for
// each byte that is not part of one.
template <class OnText, class OnByte>
void each_utf8(std::string_view s, OnText on_text, OnByte on_byte) {
  while (!s.empty()) {
    const std::size_t n = utf8_sequence_length(s);
    if (n == 0) {
      on_byte(static_cast<unsigned char>(s[0]));
      s.remove_prefix(1);
    } else {
      on_text(s.substr(0, n));
      s.remove_prefix(n);
    }
  }
}

// True when the whole of s is well-formed UTF-8.
constexpr bool is_utf8(std::string_view s) noexcept {
  while (!s.empty()) {
    const std::size_t n = utf8_sequence_length(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

// Appends the byte as the text \xNN (two lower-case hex digits), with `backslash` for its '\'
// (JSON and Prometheus need "\\", a log line "\").
inline void append_hex_byte(std::string& out, unsigned char c, std::string_view backslash) {
  constexpr char kHex[] = "0123456789abcdef";
  out += backslash;
  out += 'x';
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

// s with each byte outside well-formed UTF-8 as the text \xNN: for messages that quote input.
inline std::string printable_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  each_utf8(
      s, [&](std::string_view t) { out += t; },
      [&](unsigned char c) { append_hex_byte(out, c, "\\"); });
  return out;
}

}  // namespace chash::proxy
