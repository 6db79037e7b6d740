// SPDX-License-Identifier: Apache-2.0
#include "core/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace chash::proxy {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;

void quote(std::string& out, std::string_view v) {
  bool plain = !v.empty();
  for (const char c : v) plain = plain && c > ' ' && c != '"' && c != '=' && c < 0x7f;
  if (plain) {
    out += v;
    return;
  }
  out += '"';
  for (const char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  out += '"';
}
}  // namespace

void set_log_level(LogLevel level) noexcept { g_level = static_cast<int>(level); }
LogLevel log_level() noexcept { return static_cast<LogLevel>(g_level.load()); }

void log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  if (static_cast<int>(level) < g_level.load(std::memory_order_relaxed)) return;
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char ts[96];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  std::string line = "ts=";
  line += ts;
  line += " level=";
  line += kNames[static_cast<int>(level)];
  line += " msg=";
  quote(line, msg);
  for (const auto& [k, v] : fields) {
    line += ' ';
    line += k;
    line += '=';
    quote(line, v);
  }
  line += '\n';
  std::lock_guard lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace chash::proxy
