// SPDX-License-Identifier: Apache-2.0
#include "report.h"

#include <unistd.h>

#include <cstdio>

#include "chash/error.h"

namespace chash::cli {

std::string TextTable::render() const {
  std::vector<std::size_t> width(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      const bool right = i < numeric.size() && numeric[i];
      const std::string pad(width[i] - std::min(width[i], r[i].size()), ' ');
      if (i) out += "  ";
      if (right) out += pad;
      out += r[i];
      if (!right && i + 1 < r.size()) out += pad;
    }
    out += '\n';
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string TextTable::csv() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (i) out += ',';
      out += csv_field(r[i]);
    }
    out += '\n';
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double fraction, int digits) { return fixed(100 * fraction, digits) + "%"; }

Json json_name(std::string_view name) { return Json::parse(json_string(name)); }

void require_key_input(const KeyInput& keys) {
  if (keys.synthetic == 0 && (keys.keys_file.empty() || keys.keys_file == "-") &&
      isatty(STDIN_FILENO) == 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "no keys: pipe keys in (one per line), or use --keys-file FILE or --synthetic N");
  }
}

void default_to_synthetic(KeyInput& keys) {
  if (keys.synthetic == 0 && keys.keys_file.empty() && isatty(STDIN_FILENO) == 1) {
    keys.synthetic = kDefaultSyntheticKeys;
  }
}

std::string keys_origin(const KeyInput& keys, std::uint64_t count) {
  if (keys.synthetic > 0) {
    return std::to_string(count) + " synthetic keys (seed " + std::to_string(keys.seed) + ")";
  }
  return std::to_string(count) + " keys from " + keys_file_name(keys);
}

std::string keys_file_name(const KeyInput& keys) {
  return keys.keys_file.empty() || keys.keys_file == "-" ? std::string("stdin") : keys.keys_file;
}

}  // namespace chash::cli
