// SPDX-License-Identifier: Apache-2.0
#include "hotkeys/hot_keys.h"

#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdio>

#include "base/log.h"

namespace chash::proxy::hotkeys {

namespace {

// The per-process HMAC secret (hash_keys): random, so a shown digest cannot be reversed by
// hashing guesses without it.
const std::array<unsigned char, 32>& secret() {
  static const std::array<unsigned char, 32> s = [] {
    std::array<unsigned char, 32> k{};
    if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1) {
      // No entropy source (never on Linux with getrandom): the address of a static is better
      // than a constant and still a keyed hash; the digest is for display, not security.
      const auto a = reinterpret_cast<std::uintptr_t>(&k);
      for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<unsigned char>(a >> (i % 8));
    }
    return k;
  }();
  return s;
}

// xorshift64*: a worker's own stream for the sampling skips (no shared state).
std::uint64_t next_random() noexcept {
  thread_local std::uint64_t x = 0x9E3779B97F4A7C15ull ^ reinterpret_cast<std::uintptr_t>(&x);
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 0x2545F4914F6CDD1Dull;
}

double fmt_rate(double r) { return static_cast<double>(static_cast<std::int64_t>(r * 10)) / 10; }

}  // namespace

HotKeys::HotKeys() = default;

void HotKeys::configure(const Config& c, const CacheConfig& cache, unsigned workers) {
  const unsigned w = std::max(1u, std::min<unsigned>(workers, kShards));
  sample_.store(std::max(1u, c.sample), std::memory_order_relaxed);
  window_ms_.store(c.window_ms, std::memory_order_relaxed);
  ttl_ms_.store(cache.ttl_ms, std::memory_order_relaxed);
  max_keys_.store(cache.enabled ? std::max<std::uint32_t>(1, cache.max_keys / w) : 0,
                  std::memory_order_relaxed);
  max_bytes_.store(cache.enabled ? std::max<std::uint64_t>(1, cache.max_bytes / w) : 0,
                   std::memory_order_relaxed);
  {
    std::lock_guard lock(view_mu_);
    config_ = c;
  }
  enabled_.store(c.enabled, std::memory_order_relaxed);
  if (!cache.enabled) {
    for (Shard& s : shards_) {
      std::lock_guard lock(s.mu);
      s.cache.clear();
      s.cache_bytes = 0;
    }
  }
}

bool HotKeys::sample() const noexcept {
  thread_local std::uint32_t countdown = 1;
  if (--countdown != 0) return false;
  const std::uint32_t n = sample_.load(std::memory_order_relaxed);
  // Skips uniform in [1, 2n - 1]: n on average, and no period for a client's pattern to hit.
  countdown = n <= 1 ? 1 : static_cast<std::uint32_t>(1 + next_random() % (2ull * n - 1));
  return true;
}

void HotKeys::record(unsigned worker, std::string_view key) {
  Shard& s = shard(worker);
  std::lock_guard lock(s.mu);
  s.sketch.add(key.substr(0, 1024));  // a huge key is counted by its first KiB
}

bool HotKeys::hot(unsigned worker, std::string_view key) const {
  if (!any_hot()) return false;
  const Shard& s = shard(worker);
  std::lock_guard lock(s.mu);
  return s.hot != nullptr && s.hot->find(key) != s.hot->end();
}

void HotKeys::wrote(std::string_view key) noexcept {
  generations_[std::hash<std::string_view>{}(key) % kGenerations].fetch_add(
      1, std::memory_order_acq_rel);
}

void HotKeys::wrote_all() noexcept { epoch_.fetch_add(1, std::memory_order_acq_rel); }

std::uint64_t HotKeys::stamp(std::string_view key) const noexcept {
  const std::uint64_t e = epoch_.load(std::memory_order_acquire);
  const std::uint64_t g = generations_[std::hash<std::string_view>{}(key) % kGenerations].load(
      std::memory_order_acquire);
  return e << 32 | g;
}

std::optional<std::string> HotKeys::lookup(unsigned worker, std::string_view key,
                                           std::int64_t now_ms) {
  Shard& s = shard(worker);
  std::lock_guard lock(s.mu);
  const auto it = s.cache.find(key);
  if (it == s.cache.end()) return std::nullopt;
  if (it->second.stamp != stamp(key) ||
      now_ms - it->second.filled_ms >= static_cast<std::int64_t>(ttl_ms_.load())) {
    if (it->second.stamp != stamp(key)) counters.cache_invalidations.fetch_add(1);
    s.cache_bytes -= it->second.reply.size();
    s.cache.erase(it);
    return std::nullopt;
  }
  return it->second.reply;
}

void HotKeys::fill(unsigned worker, std::string_view key, std::string_view reply,
                   std::uint64_t read_stamp, std::int64_t now_ms) {
  const std::uint64_t max_bytes = max_bytes_.load(std::memory_order_relaxed);
  if (max_bytes == 0 || reply.size() > max_bytes || read_stamp != stamp(key)) return;
  Shard& s = shard(worker);
  std::lock_guard lock(s.mu);
  if (s.hot == nullptr || s.hot->find(key) == s.hot->end()) return;
  auto it = s.cache.find(key);
  if (it != s.cache.end()) {
    s.cache_bytes -= it->second.reply.size();
  } else {
    // Full: drop the oldest copy (few keys are hot at once; a scan is cheaper than an LRU list).
    while (!s.cache.empty() && (s.cache.size() >= max_keys_.load(std::memory_order_relaxed) ||
                                s.cache_bytes + reply.size() > max_bytes)) {
      auto oldest = s.cache.begin();
      for (auto c = s.cache.begin(); c != s.cache.end(); ++c) {
        if (c->second.filled_ms < oldest->second.filled_ms) oldest = c;
      }
      s.cache_bytes -= oldest->second.reply.size();
      s.cache.erase(oldest);
    }
    it = s.cache.emplace(std::string(key), Copy{}).first;
  }
  it->second.reply.assign(reply);
  it->second.stamp = read_stamp;
  it->second.filled_ms = now_ms;
  s.cache_bytes += reply.size();
  counters.cache_fills.fetch_add(1, std::memory_order_relaxed);
}

bool HotKeys::due(std::int64_t steady_ms) const noexcept {
  const std::int64_t last = last_rotate_ms_.load(std::memory_order_relaxed);
  return enabled() && steady_ms - last >= static_cast<std::int64_t>(window_ms_.load());
}

void HotKeys::rotate(std::string_view pool, std::int64_t wall_ms, std::int64_t steady_ms,
                     const std::function<std::string(std::string_view key)>& owner) {
  Config c;
  {
    std::lock_guard lock(view_mu_);
    c = config_;
  }
  // The rates are over the window as it really was (the 100 ms tick, a late first rotation):
  // the time since the last rotation, or the configured window before there was one.
  const std::int64_t last = last_rotate_ms_.exchange(steady_ms, std::memory_order_relaxed);
  const std::int64_t elapsed = last > 0 && steady_ms > last ? steady_ms - last : c.window_ms;
  SpaceSaving merged(256);
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    if (s.sketch.total() == 0) continue;
    merged.merge(s.sketch);
    s.sketch.clear();
  }
  const double sample = std::max(1u, c.sample);
  const double seconds = static_cast<double>(std::max<std::int64_t>(1, elapsed)) / 1000.0;
  auto view = std::make_shared<View>();
  view->at_ms = wall_ms;
  view->window_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(1, elapsed));
  view->min_rate = c.min_rate;
  view->requests = static_cast<std::uint64_t>(static_cast<double>(merged.total()) * sample);
  auto hot = std::make_shared<KeySet>();
  for (SpaceSaving::Entry& e : merged.top(c.top)) {
    HotKey k;
    k.count = static_cast<std::uint64_t>(static_cast<double>(e.count) * sample);
    k.rate = fmt_rate(static_cast<double>(k.count) / seconds);
    k.shown = c.hash_keys ? hmac(e.key) : e.key;
    k.owner = owner ? owner(e.key) : std::string();
    k.key = std::move(e.key);
    if (k.rate >= c.min_rate) hot->insert(k.key);
    view->top.push_back(std::move(k));
  }
  // The log: a key going over log_rate is noted once, and again when it falls under half of it.
  std::vector<const HotKey*> crossed;
  std::vector<std::string> cooled;
  {
    std::lock_guard lock(view_mu_);
    std::set<std::string> still;
    for (const HotKey& k : view->top) {
      if (c.log_rate <= 0) break;
      if (k.rate >= c.log_rate && !logged_.contains(k.key)) crossed.push_back(&k);
      if (k.rate >= c.log_rate / 2) still.insert(k.key);
    }
    for (const std::string& k : logged_) {
      if (!still.contains(k)) cooled.push_back(c.hash_keys ? hmac(k) : k);
    }
    std::erase_if(logged_, [&](const std::string& k) { return !still.contains(k); });
    for (const HotKey* k : crossed) logged_.insert(k->key);
    view_ = view;
  }
  for (const HotKey* k : crossed) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f", k->rate);
    log(LogLevel::kWarn, "hot key",
        {{"pool", pool}, {"key", k->shown.substr(0, 200)}, {"rate", rate}, {"owner", k->owner}});
  }
  for (const std::string& k : cooled) {
    log(LogLevel::kInfo, "hot key cooled", {{"pool", pool}, {"key", k.substr(0, 200)}});
  }
  const std::shared_ptr<const KeySet> shared = hot->empty() ? nullptr : std::move(hot);
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    s.hot = shared;
    for (auto it = s.cache.begin(); it != s.cache.end();) {
      if (shared == nullptr || !shared->contains(it->first)) {
        s.cache_bytes -= it->second.reply.size();
        it = s.cache.erase(it);
      } else {
        ++it;
      }
    }
  }
  any_hot_.store(shared != nullptr, std::memory_order_relaxed);
}

std::shared_ptr<const View> HotKeys::view() const {
  std::lock_guard lock(view_mu_);
  return view_;
}

std::string HotKeys::hmac(std::string_view key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret().data(), static_cast<int>(secret().size()),
       reinterpret_cast<const unsigned char*>(key.data()), key.size(), md, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < 16 && i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

}  // namespace chash::proxy::hotkeys
