// SPDX-License-Identifier: Apache-2.0
// chash-proxy — a pool's `hot_keys:`, `hot_cache:` and `hot_reads:` (docs/HOTKEYS.md).
//   hot_keys: {top: 20, window: 10s, hash_keys: false, sample: 16, min_rate: 100, log_rate: 1000}
//   hot_keys: false                          (no sampling at all)
//   hot_cache: {ttl: 1s, max_keys: 1024, max_bytes: 64mb}   (or ttl_ms: 1000)
//   hot_reads: replicas                      (or owner, the default)
// Durations are "10s", "500ms", "2m" or a number of milliseconds; sizes "64mb", "512kb" or bytes.
#include <charconv>
#include <cmath>

#include "config/parse_util.h"

namespace chash::proxy::config_detail {

namespace {

constexpr std::string_view kHotKeysKeys[] = {"enabled", "top",      "window",  "hash_keys",
                                             "sample",  "min_rate", "log_rate"};
constexpr std::string_view kHotCacheKeys[] = {"enabled", "ttl", "ttl_ms", "max_keys", "max_bytes"};

// A whole number with one of `units` (suffix, multiplier) or none (multiplier 1), within
// [lo, hi] after scaling; `what` names the form in the message.
std::uint64_t scaled(const Ctx& ctx, const YAML::Node& n, std::string_view key,
                     std::initializer_list<std::pair<std::string_view, std::uint64_t>> units,
                     std::uint64_t lo, std::uint64_t hi, std::string_view what) {
  const std::string s = ctx.scalar(n, key);
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  std::string_view unit(p, static_cast<std::size_t>(s.data() + s.size() - p));
  std::uint64_t mul = unit.empty() ? 1 : 0;
  for (const auto& [suffix, m] : units) {
    std::string lower(unit);
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    if (lower == suffix) mul = m;
  }
  if (ec != std::errc() || p == s.data() || mul == 0 || v > hi / mul || v * mul < lo ||
      v * mul > hi) {
    fail_at(ctx.source, line_of(n),
            "'" + std::string(key) + "' must be " + std::string(what) + ", got '" +
                s.substr(0, 40) + "'");
  }
  return v * mul;
}

std::uint32_t duration_ms(const Ctx& ctx, const YAML::Node& n, std::string_view key,
                          std::uint32_t lo, std::uint32_t hi) {
  return static_cast<std::uint32_t>(
      scaled(ctx, n, key, {{"ms", 1}, {"s", 1000}, {"m", 60000}}, lo, hi,
             "a duration from " + std::to_string(lo) + "ms to " + std::to_string(hi / 1000) +
                 "s (10s, 500ms, or milliseconds)"));
}

double rate(const Ctx& ctx, const YAML::Node& n, std::string_view key) {
  const std::string s = ctx.scalar(n, key);
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < 0 || v > 1e9) {
    fail_at(ctx.source, line_of(n),
            "'" + std::string(key) + "' must be requests per second from 0 to 1e9, got '" +
                s.substr(0, 40) + "'");
  }
  return v;
}

void unknown(const Ctx& ctx, const YAML::Node& k, const std::string& where,
             std::span<const std::string_view> valid) {
  const std::string name = k.Scalar();
  fail_at(ctx.source, line_of(k), where + ": unknown key '" + name + "'" + suggest(name, valid));
}

}  // namespace

hotkeys::Config parse_hot_keys(const Ctx& ctx, const YAML::Node& v, const std::string& where) {
  hotkeys::Config c;
  if (v.IsScalar()) {
    c.enabled = ctx.boolean(v, "hot_keys");
    return c;
  }
  if (!v.IsMap()) {
    fail_at(ctx.source, line_of(v),
            where + ": hot_keys must be a map ({top: 20, window: 10s, ...}) or true/false");
  }
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    if (k == "enabled") c.enabled = ctx.boolean(kv.second, k);
    else if (k == "top") c.top = ctx.number<std::uint32_t>(kv.second, k, 1, 1000);
    else if (k == "window") c.window_ms = duration_ms(ctx, kv.second, k, 100, 3600u * 1000u);
    else if (k == "hash_keys") c.hash_keys = ctx.boolean(kv.second, k);
    else if (k == "sample") c.sample = ctx.number<std::uint32_t>(kv.second, k, 1, 1u << 20);
    else if (k == "min_rate") c.min_rate = rate(ctx, kv.second, k);
    else if (k == "log_rate") c.log_rate = rate(ctx, kv.second, k);
    else unknown(ctx, kv.first, where + ": hot_keys", kHotKeysKeys);
  }
  return c;
}

hotkeys::CacheConfig parse_hot_cache(const Ctx& ctx, const YAML::Node& v,
                                     const std::string& where) {
  hotkeys::CacheConfig c;
  c.enabled = true;
  if (v.IsScalar()) {
    c.enabled = ctx.boolean(v, "hot_cache");
    return c;
  }
  if (!v.IsMap()) {
    fail_at(ctx.source, line_of(v),
            where +
                ": hot_cache must be a map ({ttl: 1s, max_keys: 1024, max_bytes: 64mb}) or "
                "true/false");
  }
  for (const auto& kv : v) {
    const std::string k = kv.first.Scalar();
    if (k == "enabled") {
      c.enabled = ctx.boolean(kv.second, k);
    } else if (k == "ttl") {
      c.ttl_ms = duration_ms(ctx, kv.second, k, 1, 3600u * 1000u);
    } else if (k == "ttl_ms") {
      // The same bound spelt as a number of milliseconds (camellia's and Tair's configs' form).
      c.ttl_ms = ctx.number<std::uint32_t>(kv.second, k, 1, 3600u * 1000u);
    } else if (k == "max_keys") {
      c.max_keys = ctx.number<std::uint32_t>(kv.second, k, 1, 1u << 20);
    } else if (k == "max_bytes") {
      c.max_bytes = scaled(
          ctx, kv.second, k, {{"b", 1}, {"kb", 1u << 10}, {"mb", 1u << 20}, {"gb", 1u << 30}}, 1,
          std::uint64_t{16} << 30, "a size from 1 byte to 16gb (64mb, 512kb, or bytes)");
    } else {
      unknown(ctx, kv.first, where + ": hot_cache", kHotCacheKeys);
    }
  }
  return c;
}

hotkeys::Reads parse_hot_reads(const Ctx& ctx, const YAML::Node& v, const std::string& where) {
  const std::string t = ctx.scalar(v, "hot_reads");
  if (t == "owner") return hotkeys::Reads::kOwner;
  if (t == "replicas") return hotkeys::Reads::kReplicas;
  fail_at(ctx.source, line_of(v),
          where + ": unknown hot_reads '" + t.substr(0, 40) + "' (owner, replicas)");
}

}  // namespace chash::proxy::config_detail
