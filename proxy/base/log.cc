// SPDX-License-Identifier: Apache-2.0
#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

#include "base/utf8.h"

namespace chash::proxy {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;  // one line at a time; guards g_fd and g_path
int g_fd = STDERR_FILENO;
std::string g_path;  // "" = stderr

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report it
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

int open_log(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

void quote(std::string& out, std::string_view v) {
  bool plain = !v.empty();
  for (const char c : v) plain = plain && c > ' ' && c != '"' && c != '=' && c < 0x7f;
  if (plain) {
    out += v;
    return;
  }
  // Quoted: valid UTF-8 as it is; newlines as spaces; other control bytes and bytes outside
  // valid UTF-8 (a binary hot key, a server's reply) as \xNN, so no raw terminal byte reaches
  // the log (control/utf8.h).
  out += '"';
  each_utf8(
      v,
      [&](std::string_view t) {
        const auto c = static_cast<unsigned char>(t[0]);
        if (c == '\n' || c == '\r') {
          out += ' ';
        } else if (c < 0x20 || c == 0x7f) {
          append_hex_byte(out, c, "\\");
        } else {
          if (c == '"' || c == '\\') out += '\\';
          out += t;
        }
      },
      [&](unsigned char c) { append_hex_byte(out, c, "\\"); });
  out += '"';
}
}  // namespace

void set_log_level(LogLevel level) noexcept { g_level = static_cast<int>(level); }
LogLevel log_level() noexcept { return static_cast<LogLevel>(g_level.load()); }

const char* log_level_name(LogLevel level) noexcept {
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error", "off"};
  return kNames[static_cast<int>(level)];
}

LogLevel log_level_for_verbosity(int verbosity) noexcept {
  if (verbosity <= 3) return LogLevel::kError;
  if (verbosity == 4) return LogLevel::kWarn;
  if (verbosity <= 6) return LogLevel::kInfo;
  return LogLevel::kDebug;
}

void log_level_up() {
  int l = g_level.load();
  if (l > static_cast<int>(LogLevel::kDebug)) g_level = --l;
  log(static_cast<LogLevel>(l), "log level up", {{"level", log_level_name(log_level())}});
}

void log_level_down() {
  int l = g_level.load();
  if (l < static_cast<int>(LogLevel::kError)) g_level = ++l;
  if (l > static_cast<int>(LogLevel::kError)) l = static_cast<int>(LogLevel::kError);
  log(static_cast<LogLevel>(l), "log level down", {{"level", log_level_name(log_level())}});
}

bool set_log_file(const std::string& path, std::string& error) {
  int fd = STDERR_FILENO;
  if (!path.empty() && (fd = open_log(path)) < 0) {
    error = "cannot open log file '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::lock_guard lock(g_mu);
  if (g_fd != STDERR_FILENO) ::close(g_fd);
  g_fd = fd;
  g_path = path;
  return true;
}

void reopen_log_file() {
  std::string error;
  {
    std::lock_guard lock(g_mu);
    if (g_path.empty()) return;
    const int fd = open_log(g_path);
    if (fd >= 0) {
      ::close(g_fd);
      g_fd = fd;
    } else {
      error = std::strerror(errno);
    }
  }
  if (!error.empty()) {
    log(LogLevel::kError, "cannot reopen log file, still writing the old one", {{"error", error}});
  } else {
    log(LogLevel::kInfo, "log file reopened");
  }
}

void log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields) {
  log(level, msg, std::span<const LogField>(fields.begin(), fields.size()));
}

void log(LogLevel level, std::string_view msg, std::span<const LogField> fields) {
  if (static_cast<int>(level) < g_level.load(std::memory_order_relaxed)) return;
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
  line += log_level_name(level);
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
  write_all(g_fd, line);
}

}  // namespace chash::proxy
