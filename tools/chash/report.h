// SPDX-License-Identifier: Apache-2.0
// Output of the analysis subcommands in the three formats: an aligned text table, CSV, JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chash/error.h"
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

// `sweep` and `plot` measure with keys: --keys-file FILE, else stdin when it is a pipe or a
// file, else (stdin a terminal, nothing given) kDefaultSyntheticKeys synthetic keys — what
// someone typing `chash sweep ...` to see the table expects; --synthetic N asks for them anyway.
inline constexpr std::uint64_t kDefaultSyntheticKeys = 100000;
void default_to_synthetic(KeyInput& keys);
// Where the keys came from, for a table's title: "100000 synthetic keys (seed 1)", "12 keys
// from stdin", "12 keys from keys.txt".
std::string keys_origin(const KeyInput& keys, std::uint64_t count);
// The file keys are read from: "stdin" or --keys-file's name.
std::string keys_file_name(const KeyInput& keys);
// Calls f(key) for every key of `keys`; at most `limit` of them (kLimitExceeded naming `what`),
// and at least one (kInvalidArgument saying where none came from).
template <class F>
std::uint64_t read_all_keys(const KeyInput& keys, std::uint64_t limit, const std::string& what,
                            F&& f) {
  KeySource src(keys);
  std::string_view key;
  std::uint64_t n = 0;
  while (src.next(key)) {
    if (n++ >= limit) {
      throw Error(ErrorCode::kLimitExceeded,
                  what + " keeps its keys in memory: at most " + std::to_string(limit));
    }
    f(key);
  }
  if (n == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "no keys in " + keys_file_name(keys) +
                    ": give keys one per line, or --synthetic N for generated ones");
  }
  return n;
}

}  // namespace chash::cli
