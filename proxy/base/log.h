// SPDX-License-Identifier: Apache-2.0
// chash-proxy — structured logs: one logfmt line per event on stderr, or appended to a file
// (nutcracker's -o), one write(2) per line
// ("ts=2024-05-01T10:00:00.123Z level=warn msg=\"backend down\" pool=alpha backend=r1").
// Passwords are never passed here.
#pragma once

#include <atomic>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace chash::proxy {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void set_log_level(LogLevel level) noexcept;
LogLevel log_level() noexcept;
const char* log_level_name(LogLevel level) noexcept;  // "debug" .. "error", "off"

// nutcracker's -v N (its syslog-like LOG_EMERG 0 .. LOG_PVERB 11, default 5 LOG_NOTICE) in
// chash's levels: 0-3 (emerg, alert, crit, err) -> error, 4 (warn) -> warn, 5-6 (notice,
// info) -> info, 7-11 (debug .. pverb) -> debug. N > 11 counts as 11, as nutcracker clamps.
LogLevel log_level_for_verbosity(int verbosity) noexcept;
// SIGTTIN / SIGTTOU: one level more (debug at most) / less (error at least) verbose, logged.
void log_level_up();
void log_level_down();

// Appends the log to `path` (created 0644) instead of stderr; false and `error` set when it
// cannot be opened. "" = stderr.
bool set_log_file(const std::string& path, std::string& error);
// Closes and reopens the log file by name (after logrotate moved it: SIGHUP, SIGUSR1). On
// failure the old file stays in use and the failure is logged to it. No-op on stderr.
void reopen_log_file();

using LogField = std::pair<std::string_view, std::string_view>;
void log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {});
// The same with fields chosen at run time.
void log(LogLevel level, std::string_view msg, std::span<const LogField> fields);

}  // namespace chash::proxy
