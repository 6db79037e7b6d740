// SPDX-License-Identifier: Apache-2.0
// Output of the analysis subcommands in the three formats: an aligned text table, CSV, JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "io.h"

namespace chash::cli {

using Json = nlohmann::ordered_json;

struct TextTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Columns whose cells are right-aligned (numbers).
  std::vector<bool> numeric;

  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  std::string render() const;  // aligned, two spaces between columns
  std::string csv() const;     // RFC 4180, header first
};

std::string fixed(double v, int digits);
std::string percent(double fraction, int digits = 2);
// Node names may be arbitrary bytes: JSON gets them escaped by json_string rules.
Json json_name(std::string_view name);

// Keys must come from somewhere: refuse to wait on an interactive terminal.
void require_key_input(const KeyInput& keys);

}  // namespace chash::cli
