// SPDX-License-Identifier: Apache-2.0
// Streaming key input and output helpers for the CLI: keys one per line from stdin or a file
// (bounded memory whatever the input size), or N synthetic keys from a seed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace chash::cli {

struct KeyInput {
  std::string keys_file;        // --keys-file FILE ("-" or empty: stdin)
  std::uint64_t synthetic = 0;  // --synthetic N: generate N keys instead of reading
  std::uint64_t seed = 1;       // --seed S
};

// Yields keys one at a time. A key is the bytes of a line without its "\n" (and without a
// trailing "\r"); lines longer than kMaxKeyBytes are an error naming the line.
class KeySource {
 public:
  static constexpr std::size_t kMaxKeyBytes = 1 << 20;

  explicit KeySource(const KeyInput& in);
  ~KeySource();
  KeySource(const KeySource&) = delete;
  KeySource& operator=(const KeySource&) = delete;

  // The next key, valid until the following call; false at the end. Throws chash::Error.
  bool next(std::string_view& key);
  // Up to keys.size() next keys, all valid until the following call of next or next_batch; how
  // many (0 at the end). Fewer than asked does not mean the end: a batch stops where the read
  // buffer would have to be refilled (its views point into it). line() is then the line of the
  // batch's last key. Throws chash::Error.
  std::size_t next_batch(std::span<std::string_view> keys);
  std::uint64_t line() const noexcept { return line_; }
  // Total when known in advance (synthetic), else 0.
  std::uint64_t expected() const noexcept { return synthetic_; }

 private:
  bool fill();
  // The line of `len` bytes at begin_ (a '\n' follows it), as a key; advances past it.
  std::string_view take_line(std::size_t len);

  std::FILE* file_ = nullptr;
  bool owns_file_ = false;
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  std::uint64_t line_ = 0;
  std::uint64_t synthetic_ = 0, seed_ = 0;
  std::string scratch_;
  std::vector<char> synthetic_batch_;  // next_batch's synthetic keys, kSyntheticKeyBytes each
};

// The i-th synthetic key of a seed: "key:" + 16 hex digits, distinct for distinct i.
std::string synthetic_key(std::uint64_t seed, std::uint64_t i);
inline constexpr std::size_t kSyntheticKeyBytes = 20;
// The same written to out[0..kSyntheticKeyBytes).
void write_synthetic_key(std::uint64_t seed, std::uint64_t i, char* out) noexcept;

// Buffered stdout writer (one fwrite per 64 KiB).
class Out {
 public:
  Out() { buf_.reserve(1 << 16); }
  ~Out() { flush(); }
  void put(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= (1 << 16)) flush();
  }
  void put(char c) { buf_.push_back(c); }
  void flush();

 private:
  std::string buf_;
};

// A progress bar on stderr, drawn only when stderr is a terminal; erased when done.
class Progress {
 public:
  Progress(std::string label, std::uint64_t total);
  ~Progress();
  void tick(std::uint64_t n = 1) {
    done_ += n;
    if (enabled_ && (done_ & 0xFFFF) == 0) draw();
  }

 private:
  void draw();
  std::string label_;
  std::uint64_t total_, done_ = 0;
  bool enabled_;
};

// JSON string escaping for arbitrary bytes (invalid UTF-8 becomes \u00XX per byte).
std::string json_string(std::string_view s);
// CSV field quoting (RFC 4180).
std::string csv_field(std::string_view s);

}  // namespace chash::cli
