// SPDX-License-Identifier: Apache-2.0
#include "control/handover_state.h"

#include <vector>

namespace chash::proxy {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void put_hex(std::string& out, std::string_view s) {
  out += ' ';
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
}

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool get_hex(std::string_view s, std::string& out) {
  if (s.size() % 2 != 0) return false;
  out.clear();
  out.reserve(s.size() / 2);
  for (std::size_t i = 0; i < s.size(); i += 2) {
    const int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi << 4 | lo);
  }
  return true;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at <= line.size()) {
    const std::size_t sp = std::min(line.find(' ', at), line.size());
    out.push_back(line.substr(at, sp - at));
    at = sp + 1;
  }
  return out;
}

}  // namespace

std::string encode_backend_state(const Topology& t) {
  std::string out;
  for (const auto& pool : t.pools) {
    for (std::size_t i = 0; i < pool->states.size() && i < pool->servers.size(); ++i) {
      const BackendState& st = *pool->states[i];
      bool overflow = false;
      const std::vector<std::string> keys = st.absence.keys(overflow);
      const bool down = st.down.load(std::memory_order_relaxed);
      const auto phase = st.absence.phase();
      if (!down && keys.empty() && !overflow && phase == AbsenceLog::Phase::kNormal) continue;
      out += 'B';
      put_hex(out, pool->config.name);
      put_hex(out, st.name);
      put_hex(out, pool->servers[i].address.text());
      out += down ? " 1" : " 0";
      out += ' ';
      out += std::to_string(static_cast<int>(phase));
      out += overflow ? " 1\n" : " 0\n";
      for (const auto& k : keys) {
        out += 'K';
        put_hex(out, k);
        out += '\n';
      }
    }
  }
  return out;
}

AdoptedState adopt_backend_state(const Topology& t, std::string_view text) {
  AdoptedState r;
  // The backend the K lines that follow belong to (null: skipped), its pool's key limit.
  BackendState* target = nullptr;
  std::size_t limit = 0;
  std::vector<std::string> keys;
  bool overflow = false;
  auto flush = [&] {
    if (target != nullptr) {
      target->absence.restore(keys, overflow, limit);
      r.keys += overflow ? 0 : keys.size();
    }
    keys.clear();
    target = nullptr;
  };
  std::size_t at = 0;
  std::string a, b, c;
  while (at < text.size()) {
    const std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) {
      r.error = "a line without its end";
      break;
    }
    const auto f = fields(text.substr(at, nl - at));
    at = nl + 1;
    if (f.size() == 2 && f[0] == "K") {
      if (!get_hex(f[1], a)) {
        r.error = "a key that is not hex";
        break;
      }
      if (target != nullptr) keys.push_back(a);
      continue;
    }
    if (f.size() != 7 || f[0] != "B" || !get_hex(f[1], a) || !get_hex(f[2], b) ||
        !get_hex(f[3], c) || (f[4] != "0" && f[4] != "1") || f[5].size() != 1 ||
        f[5][0] < '0' || f[5][0] > '3' || (f[6] != "0" && f[6] != "1")) {
      r.error = "a malformed backend line";
      break;
    }
    flush();
    const Pool* pool = nullptr;
    for (const auto& p : t.pools) {
      if (p->config.name == a) pool = p.get();
    }
    std::size_t node = pool == nullptr ? 0 : pool->states.size();
    for (std::size_t i = 0; pool != nullptr && i < pool->states.size() && i < pool->servers.size();
         ++i) {
      if (pool->states[i]->name == b && pool->servers[i].address.text() == c) node = i;
    }
    if (pool == nullptr || node >= pool->states.size()) {
      ++r.skipped;
      continue;
    }
    BackendState& st = *pool->states[node];
    const bool down = f[4] == "1";
    const auto phase = static_cast<AbsenceLog::Phase>(f[5][0] - '0');
    overflow = f[6] == "1";
    // Mid-sweep, the old process had taken the log's keys out to delete them: which of them it
    // had deleted is unknown here, so the log counts as overflowed (the return flushes the
    // backend, or keeps it out, as failover_overflow says).
    if (phase == AbsenceLog::Phase::kSweeping) overflow = true;
    if (down && !st.down.exchange(true)) {
      st.down_since_ms.store(steady_ms(), std::memory_order_relaxed);  // probed after retry
      st.failures.store(pool->config.server_failure_limit, std::memory_order_relaxed);
      st.ejections.fetch_add(1, std::memory_order_relaxed);
      st.set_last_error("down in the process this one took over from");
      ++r.down;
    }
    // Up with noted keys left (Phase::kFlipped): a request for one deletes it here first, as
    // it would have in the old process. Down: noting goes on (kNormal); the return sweeps.
    st.absence.set_phase(!down && phase == AbsenceLog::Phase::kFlipped
                             ? AbsenceLog::Phase::kFlipped
                             : AbsenceLog::Phase::kNormal);
    target = &st;
    limit = pool->config.failover_track_keys;
  }
  flush();
  return r;
}

}  // namespace chash::proxy
