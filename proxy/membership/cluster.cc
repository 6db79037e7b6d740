// SPDX-License-Identifier: Apache-2.0
#include "membership/cluster.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.h"
#include "base/text.h"
#include "membership/control_client.h"
#include "proto/redis/resp.h"

namespace chash::proxy {

namespace {

constexpr std::int64_t kHintPollMs = 20;  // how often workers' hints are looked at

std::int64_t wall_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ClusterWatcher::ClusterWatcher(TopologyFn topology, Discovered& discovered, PublishFn publish,
                               Options options)
    : topology_(std::move(topology)),
      discovered_(discovered),
      publish_(std::move(publish)),
      options_(options),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

ClusterWatcher::~ClusterWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  const std::uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ClusterWatcher::discover_now() {
  sync();
  check_due(true);
}

void ClusterWatcher::start() {
  // Started even without a cluster pool: a reload may add one (the thread polls every 20 ms).
  thread_ = std::thread([this] { run(); });
  ::pthread_setname_np(thread_.native_handle(), "cluster");
}

void ClusterWatcher::sync() {
  const auto t = topology_();
  if (t == nullptr) return;
  std::lock_guard lock(mu_);
  for (auto& [k, c] : clusters_) c.seen = false;
  for (const auto& pool : t->pools) {
    const PoolConfig& pc = pool->config;
    if (!pc.is_cluster()) continue;
    Cluster& c = clusters_[pc.name];
    c.pool = pc.name;
    c.seeds = pc.cluster_seeds;
    c.credentials.password = pc.server_password;
    c.credentials.user = pc.server_user;
    c.credentials.tls = pc.server_tls;
    c.shared = pool->shared;
    c.refresh_ms = pc.cluster_refresh_ms;
    c.seen = true;
  }
  std::erase_if(clusters_, [](const auto& kv) { return !kv.second.seen; });
}

std::shared_ptr<const redis::ClusterMap> ClusterWatcher::read_map(const Cluster& c,
                                                                  std::string& error) const {
  // Known masters first (they have the freshest view of their slots), then the seeds.
  std::vector<std::string> ask;
  if (c.map != nullptr) {
    for (const auto& m : c.map->masters) {
      if (!m.failed) ask.push_back(m.address);
    }
    // Start at a different node each time, so one slow node does not delay every refresh.
    if (!ask.empty()) std::rotate(ask.begin(), ask.begin() + (c.refreshes % ask.size()), ask.end());
  }
  for (const auto& s : c.seeds) {
    if (std::find(ask.begin(), ask.end(), s.text()) == ask.end()) ask.push_back(s.text());
  }
  std::string request;
  std::size_t replies = 1;
  if (c.credentials.password) {
    if (c.credentials.user) {
      redis::append_command(request, {"AUTH", *c.credentials.user, *c.credentials.password});
    } else {
      redis::append_command(request, {"AUTH", *c.credentials.password});
    }
    replies = 2;
  }
  redis::append_command(request, {"CLUSTER", "NODES"});
  std::string errors;
  for (const auto& address : ask) {
    Address a;
    try {
      a = parse_address(address, "cluster node");
    } catch (const std::exception&) {
      continue;
    }
    const QueryResult r = query(a, request, replies, options_.io_timeout, c.credentials.tls.get());
    std::string why = r.error;
    if (why.empty()) {
      const RespValue& v = r.replies.back();
      if (replies == 2 && r.replies[0].type == '-') {
        why = "AUTH refused: " + r.replies[0].str.substr(0, 120);
      } else if (v.type == '-') {
        why = v.str.substr(0, 160);  // e.g. "ERR This instance has cluster support disabled"
      } else if (v.type != '$' || v.nil) {
        why = "unexpected reply to CLUSTER NODES";
      } else {
        auto map = std::make_shared<redis::ClusterMap>();
        if (redis::parse_cluster_nodes(v.str, address, *map, why)) return map;
        why = "CLUSTER NODES: " + why;
      }
    }
    errors += (errors.empty() ? "" : "; ") + address + ": " + why;
  }
  error = errors.empty() ? "no seed to ask" : errors;
  return nullptr;
}

void ClusterWatcher::check_due(bool all) {
  const std::int64_t now = steady_ms();
  std::vector<Cluster> due;  // copies: the queries run without the lock
  {
    std::lock_guard lock(mu_);
    for (auto& [k, c] : clusters_) {
      const bool hinted = c.shared != nullptr && c.shared->cluster_refresh.load();
      const bool time = now >= c.next_check;
      if (!all && !time && !(hinted && now - c.last_check >= options_.min_interval.count()))
        continue;
      if (c.shared != nullptr) c.shared->cluster_refresh.store(false);
      c.last_check = now;
      due.push_back(c);
    }
  }
  bool publish = false;
  for (const Cluster& c : due) {
    std::string error;
    const auto map = read_map(c, error);
    const std::int64_t after = steady_ms();
    bool changed = false;
    {
      std::lock_guard lock(mu_);
      const auto it = clusters_.find(c.pool);
      if (it == clusters_.end()) continue;
      Cluster& cur = it->second;
      cur.next_check = after + cur.refresh_ms;
      const std::string before = cur.status;
      if (map == nullptr) {
        ++cur.failures;
        cur.last_error = error;
        cur.status =
            cur.map == nullptr ? "no node answers" : "no node answers; keeping the last map";
        if (before != cur.status) {
          log(LogLevel::kError, "cluster: no node answers CLUSTER NODES",
              {{"pool", cur.pool}, {"reason", error}});
        }
        continue;
      }
      ++cur.refreshes;
      cur.last_refresh_ms = wall_ms();
      cur.status = map->covered == kRedisSlots
                       ? "ok"
                       : std::to_string(kRedisSlots - map->covered) + " slots not served";
      changed = discovered_.set_cluster(cur.pool, map);
      if (changed) {
        ++cur.changes;
        cur.last_change_ms = cur.last_refresh_ms;
        const std::string from = cur.map == nullptr ? "" : std::to_string(cur.map->masters.size());
        log(cur.map == nullptr ? LogLevel::kInfo : LogLevel::kDebug,
            cur.map == nullptr ? "cluster: map learnt" : "cluster: map changed",
            {{"pool", cur.pool},
             {"source", map->source},
             {"masters", std::to_string(map->masters.size())},
             {"replicas", std::to_string(map->replicas.size())},
             {"covered_slots", std::to_string(map->covered)}});
      }
      cur.map = map;
    }
    publish |= changed;
  }
  if (publish) publish_();  // outside the lock: the publisher reads topology and Discovered
}

void ClusterWatcher::run() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
    }
    sync();
    check_due(false);
    pollfd p{wake_fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(kHintPollMs));
  }
}

std::string ClusterWatcher::status_json() const {
  std::lock_guard lock(mu_);
  std::string o = "\"cluster\":[";
  bool first = true;
  for (const auto& [k, c] : clusters_) {
    o += first ? "{" : ",{";
    first = false;
    const auto& s = *c.shared;
    o += "\"pool\":\"" + json_escape(c.pool) + "\",\"status\":\"" + json_escape(c.status) +
         "\",\"last_error\":\"" + json_escape(c.last_error) + "\",\"source\":\"" +
         json_escape(c.map != nullptr ? c.map->source : "") +
         "\",\"refreshes\":" + std::to_string(c.refreshes) +
         ",\"changes\":" + std::to_string(c.changes) +
         ",\"failures\":" + std::to_string(c.failures) +
         ",\"last_refresh_ms\":" + std::to_string(c.last_refresh_ms) +
         ",\"last_change_ms\":" + std::to_string(c.last_change_ms) +
         ",\"covered_slots\":" + std::to_string(c.map != nullptr ? c.map->covered : 0) +
         ",\"migrating_slots\":" + std::to_string(c.map != nullptr ? c.map->migrating : 0) +
         ",\"redirections\":{\"moved\":" + std::to_string(s.moved.load()) +
         ",\"ask\":" + std::to_string(s.ask.load()) +
         ",\"tryagain\":" + std::to_string(s.tryagain.load()) +
         ",\"failed\":" + std::to_string(s.redirect_failures.load()) + "},\"nodes\":[";
    if (c.map != nullptr) {
      bool fn = true;
      auto node = [&](const redis::ClusterNodeInfo& n, const char* role, const std::string& extra) {
        o += std::string(fn ? "" : ",") + "{\"address\":\"" + json_escape(n.address) +
             "\",\"id\":\"" + json_escape(n.id) + "\",\"role\":\"" + role +
             "\",\"failed\":" + (n.failed ? "true" : "false") + extra + "}";
        fn = false;
      };
      for (std::size_t i = 0; i < c.map->masters.size(); ++i) {
        std::string ranges;
        for (const auto& r : c.map->ranges(i)) ranges += (ranges.empty() ? "" : ",") + r;
        node(c.map->masters[i], "master",
             ",\"slots\":" + std::to_string(c.map->masters[i].slots) + ",\"ranges\":\"" +
                 json_escape(ranges) + "\"");
      }
      for (const auto& r : c.map->replicas) {
        node(r, "replica", ",\"master\":\"" + json_escape(c.map->masters[r.master].address) + "\"");
      }
    }
    o += "]}";
  }
  return o + "]";
}

std::string ClusterWatcher::prometheus() const {
  std::lock_guard lock(mu_);
  if (clusters_.empty()) return "";
  std::string o;
  auto label = [](const Cluster& c) { return "pool=\"" + prometheus_label_escape(c.pool) + "\""; };
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [k, c] : clusters_) value(c, name);
  };
  family("chash_proxy_cluster_map_refreshes_total", "counter", "Cluster maps read (CLUSTER NODES).",
         [&](const Cluster& c, const char* n) {
           o += std::string(n) + "{" + label(c) + "} " + std::to_string(c.refreshes) + "\n";
         });
  family("chash_proxy_cluster_map_changes_total", "counter",
         "Cluster maps that moved a node, role or slot (each published to the workers).",
         [&](const Cluster& c, const char* n) {
           o += std::string(n) + "{" + label(c) + "} " + std::to_string(c.changes) + "\n";
         });
  family("chash_proxy_cluster_slots_covered", "gauge", "Slots with a master in the map.",
         [&](const Cluster& c, const char* n) {
           o += std::string(n) + "{" + label(c) + "} " +
                std::to_string(c.map != nullptr ? c.map->covered : 0) + "\n";
         });
  family("chash_proxy_cluster_nodes", "gauge", "Nodes in the map, by role.",
         [&](const Cluster& c, const char* n) {
           const std::size_t m = c.map != nullptr ? c.map->masters.size() : 0;
           const std::size_t r = c.map != nullptr ? c.map->replicas.size() : 0;
           o += std::string(n) + "{" + label(c) + ",role=\"master\"} " + std::to_string(m) + "\n";
           o += std::string(n) + "{" + label(c) + ",role=\"replica\"} " + std::to_string(r) + "\n";
         });
  family("chash_proxy_cluster_redirections_total", "counter",
         "Replies that sent a request elsewhere: MOVED, ASK, TRYAGAIN; failed: over the hop limit.",
         [&](const Cluster& c, const char* n) {
           const auto& s = *c.shared;
           for (const auto& [kind, v] :
                {std::pair{"moved", s.moved.load()}, std::pair{"ask", s.ask.load()},
                 std::pair{"tryagain", s.tryagain.load()},
                 std::pair{"failed", s.redirect_failures.load()}}) {
             o += std::string(n) + "{" + label(c) + ",kind=\"" + kind + "\"} " + std::to_string(v) +
                  "\n";
           }
         });
  return o;
}

}  // namespace chash::proxy
