// SPDX-License-Identifier: Apache-2.0
// chash-proxy — text every part of the proxy writes for people and tools: Prometheus label
// values and families, JSON string bodies. Keys, server replies and names are network bytes;
// both formats must be valid UTF-8, so a byte outside a valid sequence is shown as \xNN
// (base/utf8.h). The ground floor: it depends on nothing else of the proxy's.
#pragma once

#include <string>
#include <string_view>

namespace chash::proxy {

// Prometheus label value: '"' and '\' escaped, newlines as spaces, other control bytes and
// bytes outside valid UTF-8 as \xNN.
std::string prometheus_label_escape(std::string_view s);
// JSON string body: '"' and '\' escaped, control bytes as \u00XX, bytes outside valid UTF-8
// as the text \xNN.
std::string json_escape(std::string_view s);
// Appends a family's "# HELP name help" and "# TYPE name type" lines (text format 0.0.4).
void prometheus_family(std::string& out, std::string_view name, std::string_view help,
                       std::string_view type);
// ASCII lower case, locale-free (command names and options are ASCII on the wire).
constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
// ASCII case-insensitive equality ("get" == "GET").
constexpr bool iequal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

}  // namespace chash::proxy
