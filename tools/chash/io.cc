// SPDX-License-Identifier: Apache-2.0
#include "io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "chash/error.h"
#include "chash/hash.h"

namespace chash::cli {

KeySource::KeySource(const KeyInput& in) : synthetic_(in.synthetic), seed_(in.seed) {
  if (synthetic_ > 0) return;
  if (in.keys_file.empty() || in.keys_file == "-") {
    file_ = stdin;
  } else {
    file_ = std::fopen(in.keys_file.c_str(), "rb");
    if (file_ == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  "cannot read keys file " + in.keys_file + ": " + std::strerror(errno));
    }
    owns_file_ = true;
  }
  buf_.resize(1 << 16);
}

KeySource::~KeySource() {
  if (owns_file_) std::fclose(file_);
}

void write_synthetic_key(std::uint64_t seed, std::uint64_t i, char* out) noexcept {
  static constexpr char kHex[] = "0123456789abcdef";
  std::uint64_t v = hash::mix64(seed * 0x9E3779B97F4A7C15ULL + i + 1);
  std::memcpy(out, "key:", 4);
  for (int d = 0; d < 16; ++d) {
    out[4 + 15 - d] = kHex[v & 15];
    v >>= 4;
  }
}

std::string synthetic_key(std::uint64_t seed, std::uint64_t i) {
  std::string s(kSyntheticKeyBytes, '\0');
  write_synthetic_key(seed, i, s.data());
  return s;
}

bool KeySource::fill() {
  if (eof_) return false;
  // Move the partial line to the front, grow if a line does not fit.
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size()) {
    if (buf_.size() > kMaxKeyBytes) {
      throw Error(ErrorCode::kLimitExceeded, "key on line " + std::to_string(line_ + 1) +
                                                 " is longer than " + std::to_string(kMaxKeyBytes) +
                                                 " bytes");
    }
    buf_.resize(buf_.size() * 2);
  }
  const std::size_t n = std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_);
  if (n == 0) {
    if (std::ferror(file_)) throw Error(ErrorCode::kInvalidArgument, "error reading keys");
    eof_ = true;
    return false;
  }
  end_ += n;
  return true;
}

std::string_view KeySource::take_line(std::size_t len) {
  std::string_view key(buf_.data() + begin_, len);
  begin_ += len + 1;
  ++line_;
  if (!key.empty() && key.back() == '\r') key.remove_suffix(1);
  if (key.size() > kMaxKeyBytes) {
    throw Error(ErrorCode::kLimitExceeded, "key on line " + std::to_string(line_) + " is too long");
  }
  return key;
}

bool KeySource::next(std::string_view& key) {
  if (synthetic_ > 0) {
    if (line_ >= synthetic_) return false;
    scratch_ = synthetic_key(seed_, line_++);
    key = scratch_;
    return true;
  }
  for (;;) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      key = take_line(static_cast<std::size_t>(static_cast<const char*>(nl) - start));
      return true;
    }
    if (!fill()) {
      if (begin_ == end_) return false;
      // Last line without a newline.
      key = std::string_view(buf_.data() + begin_, end_ - begin_);
      begin_ = end_;
      ++line_;
      if (!key.empty() && key.back() == '\r') key.remove_suffix(1);
      return true;
    }
  }
}

std::size_t KeySource::next_batch(std::span<std::string_view> keys) {
  if (synthetic_ > 0) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(keys.size(), synthetic_ - line_));
    synthetic_batch_.resize(std::max(synthetic_batch_.size(), n * kSyntheticKeyBytes));
    for (std::size_t k = 0; k < n; ++k) {
      char* at = synthetic_batch_.data() + k * kSyntheticKeyBytes;
      write_synthetic_key(seed_, line_++, at);
      keys[k] = std::string_view(at, kSyntheticKeyBytes);
    }
    return n;
  }
  std::size_t n = 0;
  while (n < keys.size()) {
    const char* start = buf_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      keys[n++] = take_line(static_cast<std::size_t>(static_cast<const char*>(nl) - start));
      continue;
    }
    // No whole line left in the buffer. Refilling would move it under the views already handed
    // out, so a started batch ends here; an empty one reads on (next() refills).
    if (n > 0 || !next(keys[n])) break;
    ++n;
  }
  return n;
}

void Out::flush() {
  if (buf_.empty()) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), stdout) != buf_.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("cannot write output: ") + std::strerror(errno));
  }
  buf_.clear();
}

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (enabled_ && done_ > 0xFFFF) std::fprintf(stderr, "\r\033[K");
}

void Progress::draw() {
  if (total_ > 0) {
    const int width = 30;
    const double f = static_cast<double>(done_) / static_cast<double>(total_);
    const int filled = static_cast<int>(f * width);
    std::fprintf(stderr, "\r%s [%.*s%*s] %3.0f%%", label_.c_str(), filled,
                 "##############################", width - filled, "", 100 * f);
  } else {
    std::fprintf(stderr, "\r%s %llu", label_.c_str(), static_cast<unsigned long long>(done_));
  }
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    // Copy a well-formed UTF-8 sequence; escape stray bytes as \u00XX.
    std::size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    }
    if (ok && len == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len - 1;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    }
  }
  out += '"';
  return out;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace chash::cli
