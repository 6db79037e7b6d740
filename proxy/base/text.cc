// SPDX-License-Identifier: Apache-2.0
#include "base/text.h"

#include <cstdio>

#include "base/utf8.h"

namespace chash::proxy {

namespace {

// The string body both formats share: '"' and '\' backslashed, a byte outside valid UTF-8 as
// the text \xNN (utf8.h), a control byte (< 0x20) as `control` writes it.
template <class Control>
std::string escape_string_body(std::string_view s, Control control) {
  std::string out;
  out.reserve(s.size());
  each_utf8(
      s,
      [&](std::string_view t) {
        const auto c = static_cast<unsigned char>(t[0]);
        if (c == '"' || c == '\\') out += '\\';
        if (c < 0x20) control(out, c);
        else out += t;
      },
      [&](unsigned char c) { append_hex_byte(out, c, "\\\\"); });
  return out;
}

}  // namespace

std::string prometheus_label_escape(std::string_view s) {
  return escape_string_body(s, [](std::string& out, unsigned char c) {
    if (c == '\n') out += ' ';
    else append_hex_byte(out, c, "\\\\");
  });
}

std::string json_escape(std::string_view s) {
  return escape_string_body(s, [](std::string& out, unsigned char c) {
    char b[8];
    std::snprintf(b, sizeof b, "\\u%04x", c);
    out += b;
  });
}

void prometheus_family(std::string& out, std::string_view name, std::string_view help,
                       std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

}  // namespace chash::proxy
