// SPDX-License-Identifier: Apache-2.0
// chash-proxy — structured logs: one logfmt line per event on stderr
// ("ts=2024-05-01T10:00:00.123Z level=warn msg=\"backend down\" pool=alpha backend=r1").
// Passwords are never passed here.
#pragma once

#include <atomic>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace chash::proxy {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void set_log_level(LogLevel level) noexcept;
LogLevel log_level() noexcept;

using LogField = std::pair<std::string_view, std::string_view>;
void log(LogLevel level, std::string_view msg, std::initializer_list<LogField> fields = {});

}  // namespace chash::proxy
