// SPDX-License-Identifier: Apache-2.0
// Running the docs' examples as a reader runs them (fleet_quickstart_test.cc,
// proxy_doc_examples_test.cc): the doc's text read, each address swapped by a substitution that
// must find its text (a reworded doc fails instead of passing untested), commands run by bash.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace chash::proxy::testing {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Replaces every `from` in `text` with `to`; false when `from` is not there.
inline bool substitute(std::string& text, const std::string& from, const std::string& to) {
  bool found = false;
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
    found = true;
  }
  return found;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct RunResult {
  int code = -1;
  std::string out;
};

// Runs `command` with bash (the docs show bash: here-strings) in `dir`, for at most `limit_s`
// seconds; its output (stdout and stderr).
inline RunResult shell(const std::string& command, const std::filesystem::path& dir,
                       int limit_s = 60) {
  const std::filesystem::path out = dir / "command.out";
  const std::string full = "cd " + shell_quote(dir.string()) + " && timeout " +
                           std::to_string(limit_s) + " bash -c " + shell_quote(command) + " >" +
                           out.string() + " 2>&1";
  const int status = std::system(full.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out)};
}

// The lines of a doc's section (from the heading line starting with `heading` to the next heading
// of the same or a higher level) that are indented code, without their 4-space indent; blocks
// are separated by one empty string.
inline std::vector<std::string> code_lines(const std::string& doc, const std::string& heading) {
  std::vector<std::string> out;
  std::istringstream in(doc);
  std::string line;
  bool inside = false;
  const std::size_t level = heading.find_first_not_of('#');
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      const std::size_t l = line.find_first_not_of('#');
      if (inside && l <= level) break;
      if (line.starts_with(heading)) inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.starts_with("    ")) {
      out.push_back(line.substr(4));
    } else if (!line.empty() && !out.empty() && !out.back().empty()) {
      out.emplace_back();  // prose between two blocks
    }
  }
  return out;
}

}  // namespace chash::proxy::testing
