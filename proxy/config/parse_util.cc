// SPDX-License-Identifier: Apache-2.0
#include "config/parse_util.h"

#include <algorithm>
#include <vector>

#include "chash/internal/did_you_mean.h"

namespace chash::proxy::config_detail {

void fail_at(const std::string& source, int line, const std::string& message) {
  throw Error(ErrorCode::kParse, source + ":" + std::to_string(line) + ": " + message);
}

std::string suggest(std::string_view key, std::span<const std::string_view> valid) {
  const std::string_view best = internal::nearest_name(key, valid);
  return best.empty() ? std::string() : " (did you mean '" + std::string(best) + "'?)";
}

// "host:port:weight [name]" or "/path:weight [name]" (nutcracker conf_add_server: the weight
// after the last ':', the port before it).
ServerConfig parse_server(std::string_view text, std::string_view what) {
  ServerConfig s;
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const std::size_t sp = text.find(' ');
  std::string_view addr = text.substr(0, sp);
  if (sp != std::string_view::npos) {
    std::string_view name = text.substr(sp + 1);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    if (name.find(' ') != std::string_view::npos) {
      throw Error(ErrorCode::kParse, std::string(what) +
                                         ": expected 'host:port:weight [name]', got '" +
                                         std::string(text.substr(0, 80)) + "'");
    }
    s.name = std::string(name);
  }
  const std::size_t c = addr.rfind(':');
  if (c == std::string_view::npos || c == 0) {
    throw Error(ErrorCode::kParse, std::string(what) +
                                       ": expected 'host:port:weight [name]', got '" +
                                       std::string(text.substr(0, 80)) + "'");
  }
  const std::string_view w = addr.substr(c + 1);
  const auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), s.weight);
  // nutcracker's bound (any positive int): an existing nutcracker.yml reads unchanged. A pool
  // routed by one of chash's own tables refuses a weight past kMaxWeight when it is built, naming
  // the server (validate_nodes).
  if (ec != std::errc() || p != w.data() + w.size() || s.weight == 0 ||
      s.weight > kNutcrackerMaxWeight) {
    throw Error(ErrorCode::kParse, std::string(what) + ": weight '" + std::string(w.substr(0, 16)) +
                                       "' must be a whole number from 1 to " +
                                       std::to_string(kNutcrackerMaxWeight));
  }
  addr = addr.substr(0, c);
  if (addr.find(':') == std::string_view::npos && addr.find('/') == std::string_view::npos) {
    // "127.0.0.1:6379": the port was taken for the weight — nutcracker's form needs both.
    throw Error(ErrorCode::kParse, std::string(what) + ": '" + std::string(text.substr(0, 80)) +
                                       "' has no weight: write host:port:weight [name], as "
                                       "nutcracker.yml does (e.g. '" +
                                       std::string(text.substr(0, 80)) + ":1')");
  }
  s.address = parse_address(addr, what);
  if (s.name.empty()) s.name = s.address.text();
  return s;
}

}  // namespace chash::proxy::config_detail
