// SPDX-License-Identifier: Apache-2.0
#include "membership/sentinel.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <set>

#include "base/log.h"
#include "base/text.h"
#include "net/socket.h"
#include "proto/redis/resp.h"

namespace chash::proxy {

namespace {

constexpr std::size_t kMaxInput = std::size_t{4} << 20;  // a subscription's buffer

std::int64_t wall_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string host_port(std::string_view ip, std::string_view port) {
  if (ip.find(':') != std::string_view::npos)
    return "[" + std::string(ip) + "]:" + std::string(port);
  return std::string(ip) + ":" + std::string(port);
}

// "ip:port" from a get-master-addr-by-name reply; "" for nil or anything unexpected.
std::string master_of(const RespValue& v) {
  if (v.type != '*' || v.nil || v.items.size() != 2) return "";
  const auto& ip = v.items[0];
  const auto& port = v.items[1];
  if (ip.type != '$' || port.type != '$' || ip.nil || port.nil || ip.str.empty()) return "";
  unsigned p = 0;
  const auto [end, ec] = std::from_chars(port.str.data(), port.str.data() + port.str.size(), p);
  if (ec != std::errc() || end != port.str.data() + port.str.size() || p == 0 || p > 65535)
    return "";
  if (ip.str.size() > 255) return "";
  return host_port(ip.str, port.str);
}

// Asks one Sentinel about `groups` on one pipelined connection (bounded by `timeout`).
std::vector<SentinelAnswer> ask(const Address& sentinel, const std::vector<std::string>& groups,
                                std::chrono::milliseconds timeout) {
  std::vector<SentinelAnswer> out(groups.size());
  std::string req;
  for (const auto& g : groups) {
    redis::append_command(req, {"SENTINEL", "get-master-addr-by-name", g});
    redis::append_command(req, {"SENTINEL", "replicas", g});
  }
  const QueryResult r = query(sentinel, req, 2 * groups.size(), timeout);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (r.replies.size() <= 2 * i) break;
    out[i].reachable = true;  // it answered, even if it does not know the group
    out[i].master = master_of(r.replies[2 * i]);
    if (r.replies.size() > 2 * i + 1) out[i].replicas = parse_replicas(r.replies[2 * i + 1]);
  }
  return out;
}

}  // namespace

std::vector<SentinelReplica> parse_replicas(const RespValue& reply) {
  std::vector<SentinelReplica> out;
  if (reply.type != '*' || reply.nil) return out;
  for (const auto& r : reply.items) {
    if (r.type != '*' || r.items.size() % 2 != 0) continue;
    std::string ip, port, flags, link;
    for (std::size_t i = 0; i + 1 < r.items.size(); i += 2) {
      const std::string& k = r.items[i].str;
      const std::string& v = r.items[i + 1].str;
      if (k == "ip") ip = v;
      else if (k == "port") port = v;
      else if (k == "flags") flags = v;
      else if (k == "master-link-status") link = v;
    }
    if (ip.empty() || port.empty() || ip.size() > 255 || port.size() > 5) continue;
    SentinelReplica s;
    s.address = host_port(ip, port);
    s.flags = flags.substr(0, 128);
    s.usable = flags.find("s_down") == std::string::npos &&
               flags.find("o_down") == std::string::npos &&
               flags.find("disconnected") == std::string::npos && link == "ok";
    out.push_back(std::move(s));
    if (out.size() >= 256) break;  // bounded: more replicas than this is not a shard
  }
  return out;
}

std::string agreed_master(const std::vector<SentinelAnswer>& answers) {
  std::size_t reachable = 0;
  std::map<std::string, std::size_t> votes;
  for (const auto& a : answers) {
    if (!a.reachable) continue;
    ++reachable;
    if (!a.master.empty()) ++votes[a.master];
  }
  for (const auto& [address, n] : votes) {
    if (2 * n > reachable) return address;
  }
  return "";
}

SentinelWatcher::SentinelWatcher(TopologyFn topology, Options options, Discovered* discovered,
                                 PublishFn publish)
    : topology_(std::move(topology)),
      options_(options),
      discovered_(discovered),
      publish_(std::move(publish)),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

SentinelWatcher::~SentinelWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  const std::uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  for (auto& [k, s] : subs_) {
    if (s.fd >= 0) ::close(s.fd);
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void SentinelWatcher::discover_now() {
  sync_masters();
  check_due(true);
}

void SentinelWatcher::start() {
  thread_ = std::thread([this] { run(); });
  ::pthread_setname_np(thread_.native_handle(), "sentinel");
}

void SentinelWatcher::sync_masters() {
  const auto t = topology_();
  if (t == nullptr) return;
  std::lock_guard lock(mu_);
  for (auto& [k, m] : masters_) m.seen = false;
  for (const auto& pool : t->pools) {
    for (std::size_t i = 0; i < pool->servers.size(); ++i) {
      const ServerConfig& s = pool->servers[i];
      if (s.sentinel_master.empty()) continue;
      Master& m = masters_[pool->config.name + "/" + s.name];
      const std::string placeholder = s.address.text();
      if (m.state != pool->states[i] || m.placeholder != placeholder ||
          m.sentinels.size() != pool->config.sentinels.size()) {
        m.current.clear();  // a new backend, group or Sentinel list: publish afresh
        m.next_check = 0;
      }
      m.pool = pool->config.name;
      m.server = s.name;
      m.group = s.sentinel_master;
      m.placeholder = placeholder;
      m.sentinels = pool->config.sentinels;
      m.state = pool->states[i];
      m.seen = true;
      m.wants_replicas =
          pool->reads_to_replicas() || pool->config.hot_reads == hotkeys::Reads::kReplicas;
    }
  }
  std::erase_if(masters_, [](const auto& kv) { return !kv.second.seen; });
}

void SentinelWatcher::check_due(bool all) {
  const std::int64_t now = steady_ms();
  // Due masters by their Sentinel list (one pool's), so each Sentinel is asked once per round.
  struct Round {
    std::vector<Address> sentinels;
    std::vector<std::string> keys, groups;
  };
  std::map<std::string, Round> rounds;
  {
    std::lock_guard lock(mu_);
    for (auto& [key, m] : masters_) {
      if (!all && m.next_check > now) continue;
      std::string list;
      for (const auto& a : m.sentinels) list += a.text() + ",";
      Round& r = rounds[list];
      r.sentinels = m.sentinels;
      r.keys.push_back(key);
      r.groups.push_back(m.group);
    }
  }
  for (auto& [list, r] : rounds) {
    // answers[sentinel][group]
    std::vector<std::vector<SentinelAnswer>> answers;
    for (const auto& s : r.sentinels) answers.push_back(ask(s, r.groups, options_.io_timeout));
    const std::int64_t after = steady_ms();
    std::lock_guard lock(mu_);
    for (std::size_t g = 0; g < r.keys.size(); ++g) {
      const auto it = masters_.find(r.keys[g]);
      if (it == masters_.end()) continue;
      std::vector<SentinelAnswer> per;
      for (auto& a : answers) per.push_back(std::move(a[g]));
      apply(it->second, per, after);
    }
  }
  bool publish = false;
  {
    std::lock_guard lock(mu_);
    publish = publish_needed_;
    publish_needed_ = false;
  }
  if (publish && publish_) publish_();  // outside the lock: it builds a topology
}

void SentinelWatcher::apply(Master& m, const std::vector<SentinelAnswer>& answers,
                            std::int64_t now) {
  const bool fast = now < m.fast_until;
  m.next_check = now + (fast ? options_.fast : options_.refresh).count();
  m.reachable = 0;
  for (const auto& a : answers) m.reachable += a.reachable ? 1 : 0;
  const std::string agreed = agreed_master(answers);
  m.agreeing = 0;
  for (const auto& a : answers) m.agreeing += a.reachable && a.master == agreed ? 1 : 0;
  const std::string before = m.status;
  if (m.reachable == 0) {
    m.status = "no sentinel reachable";
    if (before != m.status) {
      log(LogLevel::kError,
          m.current.empty() ? "sentinel: no Sentinel reachable; the shard has no master until one "
                              "answers (retrying)"
                            : "sentinel: no Sentinel reachable; keeping the last master",
          {{"pool", m.pool}, {"backend", m.server}, {"master_group", m.group}});
    }
    return;
  }
  if (agreed.empty()) {
    m.status = "sentinels disagree";
    if (before != m.status) {
      log(LogLevel::kWarn,
          "sentinel: no majority of the reachable Sentinels names one master; "
          "keeping the last one",
          {{"pool", m.pool},
           {"backend", m.server},
           {"master_group", m.group},
           {"master", m.current}});
    }
    return;
  }
  for (const auto& a : answers) {
    if (a.reachable && a.master == agreed) {
      m.replicas = a.replicas;
      break;
    }
  }
  if (discovered_ != nullptr && m.wants_replicas) {
    // What read_policy may use (the proxy's own probes then check each one).
    std::vector<std::string> usable;
    for (const auto& r : m.replicas) {
      if (r.usable) usable.push_back(r.address);
    }
    std::sort(usable.begin(), usable.end());
    if (discovered_->set_replicas(m.pool, m.server, std::move(usable))) publish_needed_ = true;
  }
  if (agreed == m.current) {
    m.status = "ok";
    return;
  }
  Address address;
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string error;
  try {
    address = parse_address(agreed, "master");
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (error.empty() && !net::resolve(address, ss, len, error)) error = "does not resolve";
  if (!error.empty()) {
    m.status = "master address unusable";
    if (before != m.status) {
      log(LogLevel::kWarn, "sentinel: the Sentinels' master address is unusable",
          {{"pool", m.pool}, {"backend", m.server}, {"master", agreed}, {"reason", error}});
    }
    return;
  }
  m.status = "ok";
  auto r = std::make_shared<ResolvedAddress>();
  r->source = m.placeholder;
  r->addr = ss;
  r->len = len;
  // Address first, then the epoch: a worker reads the epoch before the address, so it never
  // tags a connection to the old master with the new epoch.
  m.state->set_resolved(std::move(r));
  m.state->address_epoch.fetch_add(1);
  m.state->failures.store(0);
  // Failures of the old master must not keep the new one out: probe it at once.
  if (m.state->down.load()) m.state->down_since_ms.store(0);
  const std::string from = m.current;
  if (!from.empty()) {
    ++m.switches;
    m.last_switch_ms = wall_ms();
    m.follow_ms = m.hint_ms > 0 ? now - m.hint_ms : -1;
  }
  m.current = agreed;
  m.fast_until = 0;
  m.hint_ms = 0;
  m.next_check = now + options_.refresh.count();
  log(LogLevel::kInfo, from.empty() ? "sentinel: master found" : "sentinel: master moved",
      {{"pool", m.pool},
       {"backend", m.server},
       {"master_group", m.group},
       {"from", from},
       {"to", agreed},
       {"agreeing", std::to_string(m.agreeing) + "/" + std::to_string(m.reachable)}});
}

void SentinelWatcher::hint(std::string_view group, std::int64_t now, bool fast) {
  std::lock_guard lock(mu_);
  for (auto& [k, m] : masters_) {
    if (!group.empty() && m.group != group) continue;
    m.next_check = now;
    if (!fast) continue;
    if (m.fast_until <= now) m.hint_ms = now;  // the first hint of this episode
    m.fast_until = now + options_.fast_window.count();
  }
}

void SentinelWatcher::run() {
  // Signals are the control thread's (control/signals.h).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    sync_masters();
    std::int64_t now = steady_ms();
    std::set<std::string> wanted;
    std::vector<std::string> readonly;
    {
      std::lock_guard lock(mu_);
      for (auto& [k, m] : masters_) {
        for (const auto& a : m.sentinels) {
          wanted.insert(a.text());
          subs_[a.text()].address = a;
        }
        if (m.state->rediscover.exchange(false)) readonly.push_back(m.group);
      }
    }
    for (const auto& g : readonly) hint(g, now);
    for (auto it = subs_.begin(); it != subs_.end();) {
      if (!wanted.count(it->first)) {
        if (it->second.fd >= 0) ::close(it->second.fd);
        it = subs_.erase(it);
        continue;
      }
      Subscription& sub = it->second;
      if (sub.fd < 0 && sub.retry_at <= now) open_subscription(sub, now);
      // A connect that neither succeeds nor fails (a Sentinel behind a black hole): give up.
      if (sub.fd >= 0 && !sub.connected && now >= sub.connect_deadline)
        close_subscription(sub, now);
      ++it;
    }
    check_due(false);
    now = steady_ms();
    std::int64_t wait = 100;  // rediscover flags and reloads are looked at this often
    {
      std::lock_guard lock(mu_);
      for (const auto& [k, m] : masters_) wait = std::min(wait, m.next_check - now);
    }
    poll_subscriptions(static_cast<int>(std::max<std::int64_t>(wait, 0)));
  }
}

void SentinelWatcher::open_subscription(Subscription& s, std::int64_t now) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  std::string error;
  s.retry_at = now + options_.resubscribe.count();
  if (!net::resolve(s.address, ss, len, error)) return;
  s.fd = net::connect_addr(ss, len, s.address.text(), error);
  s.connected = false;
  s.connect_deadline = now + options_.io_timeout.count();
  s.in.clear();
}

void SentinelWatcher::close_subscription(Subscription& s, std::int64_t now) {
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  s.connected = false;
  s.in.clear();
  s.retry_at = now + options_.resubscribe.count();
}

void SentinelWatcher::poll_subscriptions(int wait_ms) {
  std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
  std::vector<Subscription*> subs;
  for (auto& [k, s] : subs_) {
    if (s.fd < 0) continue;
    fds.push_back({s.fd, static_cast<short>(POLLIN | (s.connected ? 0 : POLLOUT)), 0});
    subs.push_back(&s);
  }
  if (::poll(fds.data(), fds.size(), wait_ms) <= 0) return;
  const std::int64_t now = steady_ms();
  for (std::size_t i = 0; i < subs.size(); ++i) {
    Subscription& s = *subs[i];
    const short ev = fds[i + 1].revents;
    if (ev == 0) continue;
    if (!s.connected) {
      if (net::socket_error(s.fd) != 0) {
        close_subscription(s, now);
        continue;
      }
      std::string req;
      redis::append_command(req, {"SUBSCRIBE", "+switch-master"});
      if (::send(s.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
        close_subscription(s, now);
        continue;
      }
      s.connected = true;
      // Switches may have happened while this Sentinel was not heard: ask again now.
      hint("", now, false);
    }
    if (ev & (POLLIN | POLLHUP | POLLERR)) read_subscription(s, now);
  }
}

void SentinelWatcher::read_subscription(Subscription& s, std::int64_t now) {
  char buf[16384];
  const ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    close_subscription(s, now);
    return;
  }
  s.in.append(buf, static_cast<std::size_t>(n));
  std::size_t pos = 0;
  for (;;) {
    RespValue v;
    std::size_t at = pos;
    const int rc = parse_resp(s.in, at, v);
    if (rc == 0) break;
    if (rc < 0) {
      close_subscription(s, now);
      return;
    }
    pos = at;
    // ["message", "+switch-master", "<group> <old-ip> <old-port> <new-ip> <new-port>"]
    if (v.type == '*' && v.items.size() == 3 && v.items[0].str == "message" &&
        v.items[1].str == "+switch-master") {
      const std::string& payload = v.items[2].str;
      hint(std::string_view(payload).substr(0, payload.find(' ')), now);
    }
  }
  s.in.erase(0, pos);
  if (s.in.size() > kMaxInput) close_subscription(s, now);
}

std::string SentinelWatcher::status_json() const {
  std::lock_guard lock(mu_);
  std::string o = "\"sentinel\":[";
  bool first = true;
  for (const auto& [k, m] : masters_) {
    o += first ? "{" : ",{";
    first = false;
    o += "\"pool\":\"" + json_escape(m.pool) + "\",\"server\":\"" + json_escape(m.server) +
         "\",\"master_group\":\"" + json_escape(m.group) + "\",\"master\":\"" +
         json_escape(m.current) + "\",\"status\":\"" + json_escape(m.status) +
         "\",\"sentinels_reachable\":" + std::to_string(m.reachable) +
         ",\"sentinels_agreeing\":" + std::to_string(m.agreeing) +
         ",\"switches\":" + std::to_string(m.switches) +
         ",\"last_switch_ms\":" + std::to_string(m.last_switch_ms) +
         ",\"last_follow_ms\":" + std::to_string(m.follow_ms) + ",\"replicas\":[";
    for (std::size_t i = 0; i < m.replicas.size(); ++i) {
      o += std::string(i ? "," : "") + "{\"address\":\"" + json_escape(m.replicas[i].address) +
           "\",\"flags\":\"" + json_escape(m.replicas[i].flags) +
           "\",\"usable\":" + (m.replicas[i].usable ? "true" : "false") + "}";
    }
    o += "]}";
  }
  return o + "]";
}

std::string SentinelWatcher::prometheus() const {
  std::lock_guard lock(mu_);
  if (masters_.empty()) return "";
  std::string o;
  auto labels = [](const Master& m) {
    return "{pool=\"" + prometheus_label_escape(m.pool) + "\",backend=\"" +
           prometheus_label_escape(m.server) + "\"}";
  };
  o += "# HELP chash_proxy_sentinel_switches_total Master changes followed (Sentinel).\n"
       "# TYPE chash_proxy_sentinel_switches_total counter\n";
  for (const auto& [k, m] : masters_)
    o +=
        "chash_proxy_sentinel_switches_total" + labels(m) + " " + std::to_string(m.switches) + "\n";
  o += "# HELP chash_proxy_sentinel_master_known 1 when a majority of the reachable Sentinels "
       "named the master followed now.\n# TYPE chash_proxy_sentinel_master_known gauge\n";
  for (const auto& [k, m] : masters_) {
    o += "chash_proxy_sentinel_master_known" + labels(m) + " " +
         (m.status == "ok" && !m.current.empty() ? "1" : "0") + "\n";
  }
  o += "# HELP chash_proxy_sentinel_usable_replicas Replicas the Sentinels report as usable.\n"
       "# TYPE chash_proxy_sentinel_usable_replicas gauge\n";
  for (const auto& [k, m] : masters_) {
    const auto n = std::count_if(m.replicas.begin(), m.replicas.end(),
                                 [](const SentinelReplica& r) { return r.usable; });
    o += "chash_proxy_sentinel_usable_replicas" + labels(m) + " " + std::to_string(n) + "\n";
  }
  o += "# HELP chash_proxy_sentinel_last_switch_timestamp_seconds When the master last moved.\n"
       "# TYPE chash_proxy_sentinel_last_switch_timestamp_seconds gauge\n";
  for (const auto& [k, m] : masters_) {
    o += "chash_proxy_sentinel_last_switch_timestamp_seconds" + labels(m) + " " +
         std::to_string(m.last_switch_ms / 1000) + "\n";
  }
  return o;
}

}  // namespace chash::proxy
