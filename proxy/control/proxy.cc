// SPDX-License-Identifier: Apache-2.0
#include "control/proxy.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "chash/version.h"
#include "base/log.h"
#include "control/handover_state.h"
#include "control/sd_notify.h"
#include "control/status.h"
#include "net/socket.h"

namespace chash::proxy {

namespace {
// A pool's listening socket, by address as configured; an ephemeral port ("host:0", tests) is
// its pool's own.
std::string listen_key(const PoolConfig& pc) {
  const std::string text = pc.listen.text();
  return pc.listen.unix_path.empty() && pc.listen.port == 0 ? text + "#" + pc.name : text;
}
std::string pool_key(const PoolConfig& pc) { return "pool " + listen_key(pc); }
std::string admin_key(const Address& a) { return "admin " + a.text(); }
std::string stats_key(const Address& a) { return "stats " + a.text(); }
constexpr auto kDrainPoll = std::chrono::milliseconds(20);
// How often chash_proxy.state_file is compared with the backends' health (and rewritten when it
// moved): a crash forgets at most this much of it.
constexpr auto kStateFileEvery = std::chrono::milliseconds(100);

std::int64_t wall_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// /metrics: the reload counters, the last attempt's time and outcome.
void note_reload(Metrics& m, bool ok) noexcept {
  (ok ? m.reloads : m.reload_failures).fetch_add(1);
  m.last_reload_ms.store(wall_ms());
  m.last_reload_ok.store(ok);
}

}  // namespace

Proxy::Proxy(ProxyConfig config, ProxyOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  unsigned w = options_.workers != 0 ? options_.workers : config_.workers;
  if (w == 0) w = std::max(1u, std::thread::hardware_concurrency());
  worker_count_ = w;
  resolver_ = std::make_unique<Resolver>(options_.lookup);
  if (options_.takeover) {
    if (options_.handover_socket.empty()) {
      throw std::runtime_error("--takeover needs --handover-socket PATH");
    }
    predecessor_ = std::make_unique<HandoverClient>(options_.handover_socket);
  }
  topology_ = build_topology(config_, nullptr, version_, &discovered_);
  // Names are looked up here, before any worker runs (workers never resolve).
  resolver_->resolve_now(*topology_);
  state_file_ = config_.state_file;
  // The predecessor's view is the newer one when there is a predecessor to ask.
  if (predecessor_ == nullptr || !adopt_predecessor_state()) load_state_file();
  // Sentinel-managed masters and Redis Cluster maps likewise (membership/sentinel.h,
  // membership/cluster.h); none reachable is logged, not fatal: the watchers keep asking.
  sentinel_ =
      std::make_unique<SentinelWatcher>([this] { return topology(); }, SentinelWatcher::Options{},
                                        &discovered_, [this] { republish(); });
  sentinel_->discover_now();
  cluster_ = std::make_unique<ClusterWatcher>([this] { return topology(); }, discovered_,
                                              [this] { republish(); });
  cluster_->discover_now();
  std::string error;
  if (!open_listeners(config_, listen_, error)) throw std::runtime_error(error);
  if (config_.admin) {
    admin_fd_ = take_or_listen(admin_key(*config_.admin), *config_.admin, 64, error);
    if (admin_fd_ < 0) throw std::runtime_error("admin: " + error);
    admin_ = std::make_unique<AdminServer>(
        control_, admin_fd_,
        AdminServer::Handlers{
            [this] { return prometheus(); }, [this] { return status_json(); },
            [this](std::string& message) { return reload_from_file(message); },
            [this](std::string_view query, std::string& message) {
              return flush_backend(query, message);
            },
            [this](std::string_view query, std::string& message) {
              return start_rebalance(query, message);
            },
            [this] { return etcd_->fleet_json(); },
            [this](std::string_view action, std::string_view query, std::string& message) {
              return etcd_->edit(action, query, message);
            },
            [this] { return status_page(); },
            [this](std::string_view query, std::string& body) {
              const std::string pool = query_value(query, "pool");
              auto picture = render_pool_svg(*topology(), pool);
              body = picture ? std::move(*picture)
                             : "no pool \"" + pool + "\" (GET /ring.svg?pool=NAME)";
              return picture.has_value();
            }});
    admin_->set_auth(config_.admin_auth);
    admin_->set_tls(config_.admin_tls);
    const std::string& host = config_.admin->host;
    const bool loopback = !config_.admin->unix_path.empty() || host.starts_with("127.") ||
                          host == "::1" || host == "localhost";
    if (!loopback && !config_.admin_auth.enabled()) {
      log(LogLevel::kWarn, "admin port reachable from other hosts without admin_auth",
          {{"admin", config_.admin->text()}});
    }
  }
  if (!options_.handover_socket.empty() && !options_.takeover) serve_handover();
  if (options_.handle_signals) {
    signals_ = std::make_unique<SignalHandler>(
        control_,
        [this] {
          std::string message;
          reload_from_file(message);
        },
        [this](std::string_view signal) {
          log(LogLevel::kInfo, "stopping", {{"signal", signal}});
          if (options_.handle_signals) sd_notify_stopping();
          begin_drain(signal);
        });
  }
  if (config_.stats) {
    stats_fd_ = take_or_listen(stats_key(*config_.stats), *config_.stats, 64, error);
    if (stats_fd_ < 0) {
      admin_.reset();
      if (admin_fd_ >= 0) ::close(admin_fd_);
      throw std::runtime_error("stats: " + error);
    }
    StatsPort::Limits limits;
    limits.interval = std::chrono::milliseconds(config_.stats_interval_ms);
    stats_ = std::make_unique<StatsPort>(
        control_, stats_fd_,
        StatsPort::Handlers{[this] { return stats_header(); },
                            [this] { return render_stats_pools(*topology()); }},
        limits);
  }
  metrics_.last_reload_ms.store(wall_ms());  // the initial load counts as the last (good) one
  health_ = std::make_unique<HealthChecker>(
      control_, [this] { return topology(); }, resolver_.get());
  rebalancer_ =
      std::make_unique<Rebalancer>([this] { return topology(); }, [this] { republish(); });
  rebalancer_->set_done_hook(
      [this](const std::string& pool, bool complete) { etcd_->rebalanced(pool, complete); });
  failback_ = std::make_unique<FailbackSweeper>(
      [this] { return topology(); }, [this] { quiesce_workers(); }, [this] { republish(); });
  // A single proxy's return: what its fallbacks took meanwhile goes home now, not on each key's
  // next miss — until then only this process's warm-up routing reads it, and a restart would
  // lose it (tests/chaos, mixed: a partition's return, then the proxy SIGKILLed).
  failback_->set_in_hook([this](const std::string& pool) {
    // A fleet's pool is the leader's to rebalance, in the fleet's commit phase.
    const auto t = topology();
    for (const auto& p : t->pools) {
      if (p->config.name == pool && p->config.etcd != nullptr) return;
    }
    std::string message;
    if (!rebalancer_->start(pool, 0, message)) {
      log(LogLevel::kInfo, "rebalance after a return not started",
          {{"pool", pool}, {"reason", message}});
    }
  });
  health_->set_return_hook([this](const Pool& pool, NodeId node) {
    // Safe return (membership/failback.h): a backend that missed writes is swept before it is in.
    // A fleet's pool: the fleet lets it back (membership/fleet/state.h), not this proxy alone.
    if (!pool.fleet_out.empty()) return false;
    const PoolConfig& pc = pool.config;
    if (!pc.auto_eject_hosts || !pc.failover_invalidate || node >= pool.nodes) return false;
    AbsenceLog& absence = pool.states[node]->absence;
    // Being swept, or held (kFlipped is a return already made whose last noted keys are
    // deleted on first use: a new absence's return sweeps them with the rest).
    const AbsenceLog::Phase phase = absence.phase();
    if (phase == AbsenceLog::Phase::kSweeping || phase == AbsenceLog::Phase::kHeld) return true;
    if (absence.empty()) return false;                               // it missed nothing
    absence.set_phase(AbsenceLog::Phase::kSweeping);
    failback_->returned(pc.name, pool.states[node]->name);
    return true;
  });
  // Pools whose servers come from etcd: routed as the fleet says before the first client.
  fleet::Agent::Host host;
  host.topology = [this] { return topology(); };
  host.publish = [this] {
    republish();
    quiesce_workers();  // posted after the new topology: each worker routes by it once this returns
  };
  host.discovered = &discovered_;
  host.sweeper = failback_.get();
  host.rebalancer = rebalancer_.get();
  // This proxy's name in the fleet unless `membership: id` says: <hostname>:<its admin port, else
  // its first pool's port>; and its addresses, for `chash fleet status`.
  std::uint16_t first_port = 0;
  for (std::size_t i = 0; i < config_.pools.size() && first_port == 0; ++i) {
    const auto l = listen_.find(listen_key(config_.pools[i]));
    if (l == listen_.end()) continue;
    first_port = net::local_port(l->second->fd);
    host.address = config_.pools[i].listen.host + ":" + std::to_string(first_port);
  }
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  host.id =
      std::string(hostname) + ":" + std::to_string(admin_fd_ >= 0 ? admin_port() : first_port);
  if (config_.admin) host.admin = config_.admin->host + ":" + std::to_string(admin_port());
  etcd_ = std::make_unique<fleet::EtcdSource>(std::move(host));
  file_ = std::make_unique<FileSource>(
      options_.config_path,
      [this](const ProxyConfig& c, std::string& message) { return reload(c, message); },
      [this](const std::string& why) {
        note_reload(metrics_, false);
        log(LogLevel::kWarn, "reload refused", {{"reason", why}});
      });
  sources_ = {file_.get(), sentinel_.get(), cluster_.get(), etcd_.get()};
  etcd_->sync(config_);
}

Proxy::~Proxy() {
  stop();
  rebalancer_->set_done_hook(nullptr);  // it reports to etcd_, which goes first
  sources_.clear();
  etcd_.reset();      // its agents' threads publish topologies and run sweeps: first to go
  sentinel_.reset();  // their threads read topology()
  cluster_.reset();
  failback_.reset();
  rebalancer_.reset();
  workers_.clear();
  health_.reset();
  signals_.reset();
  admin_.reset();
  handover_.reset();
  stats_.reset();
  if (admin_fd_ >= 0) ::close(admin_fd_);
  if (stats_fd_ >= 0) ::close(stats_fd_);
}

int Proxy::take_or_listen(const std::string& key, const Address& address, int backlog,
                          std::string& error) {
  if (predecessor_ != nullptr) {
    const int fd = predecessor_->take(key);
    if (fd >= 0) return fd;
  }
  return net::listen_on(address, backlog, error);
}

bool Proxy::open_listeners(const ProxyConfig& config,
                           std::map<std::string, std::shared_ptr<ListenSocket>>& out,
                           std::string& error) {
  std::map<std::string, std::shared_ptr<ListenSocket>> next;
  for (const auto& pc : config.pools) {
    const std::string key = listen_key(pc);
    if (const auto it = listen_.find(key); it != listen_.end()) {
      next.emplace(key, it->second);
      continue;
    }
    std::string why;
    const int fd = take_or_listen(pool_key(pc), pc.listen, pc.backlog, why);
    if (fd < 0) {
      error = "pool " + pc.name + ": " + why;
      return false;  // the new sockets close with `next`
    }
    next.emplace(key, std::make_shared<ListenSocket>(fd, key));
  }
  out = std::move(next);
  return true;
}

Listeners Proxy::listeners_for(const Topology& t) const {
  Listeners out;
  for (const auto& p : t.pools) {
    const auto it = listen_.find(listen_key(p->config));
    if (it != listen_.end()) out.emplace_back(p->slot, it->second);
  }
  return out;
}

void Proxy::run() {
  {
    std::lock_guard lock(mu_);
    for (unsigned i = 0; i < worker_count_; ++i) {
      workers_.push_back(
          std::make_unique<Worker>(i, listeners_for(*topology_), topology_, metrics_));
    }
  }
  for (auto& w : workers_) w->start();
  std::string listens;
  for (const auto& pc : config_.pools) listens += (listens.empty() ? "" : ",") + pc.listen.text();
  const std::string nw = std::to_string(worker_count_);
  const std::string stats =
      config_.stats ? config_.stats->host + ":" + std::to_string(stats_port()) : "off";
  log(LogLevel::kInfo, "started", {{"listen", listens}, {"workers", nw}, {"stats", stats}});
  // systemd Type=notify; handle_signals: only the process's own Proxy (main), not tests'.
  if (options_.handle_signals) sd_notify_ready("serving " + listens);
  if (predecessor_ != nullptr) {
    // Serving: the predecessor may stop accepting now. If it cannot be told, both keep
    // accepting on the same sockets (nothing is lost) and the operator sees why.
    try {
      const std::string pid = std::to_string(predecessor_->release());
      log(LogLevel::kInfo, "hand-over: took over the listening sockets", {{"from_pid", pid}});
    } catch (const std::exception& e) {
      log(LogLevel::kError, "hand-over", {{"reason", e.what()}});
    }
    predecessor_.reset();  // closes the sockets the new config does not use
    serve_handover();
  }
  health_->start();
  hot_keys_tick();
  ui_tick();
  state_file_tick();
  for (MembershipSource* s : sources_) s->start();
  {
    std::lock_guard lock(run_mu_);
    running_ = true;
  }
  run_cv_.notify_all();
  if (!stop_requested_) control_.run();
  for (auto& w : workers_) w->stop();
  if (!state_file_handed_) write_state_file();  // what the last moments changed
}

void Proxy::hot_keys_tick() {
  const auto t = topology();
  if (t != hot_configured_) {
    for (const auto& pool : t->pools) {
      pool->shared->hot.configure(pool->config.hot_keys, pool->config.hot_cache, worker_count_);
    }
    hot_configured_ = t;
  }
  const std::int64_t now = steady_ms();
  for (const auto& pool : t->pools) {
    hotkeys::HotKeys& hot = pool->shared->hot;
    if (!hot.due(now)) continue;
    const Pool& p = *pool;
    hot.rotate(p.config.name, wall_ms(), now, [&p](std::string_view key) -> std::string {
      const NodeId n =
          p.config.is_cluster() ? p.slot_owner(chash::redis_key_slot(key)) : p.route(key);
      return n < p.states.size() ? p.states[n]->name : std::string("none");
    });
  }
  control_.add_timer(std::chrono::milliseconds(100), [this] { hot_keys_tick(); });
}

namespace {

// What adopt_backend_state took, logged alike for the hand-over and the state file (`path`).
void log_adopted(const AdoptedState& a, std::string_view msg, const std::string& path) {
  const std::string down = std::to_string(a.down), keys = std::to_string(a.keys),
                    skipped = std::to_string(a.skipped);
  std::vector<LogField> fields;
  if (!path.empty()) fields.emplace_back("path", path);
  fields.insert(fields.end(), {{"down", down}, {"noted_keys", keys}, {"skipped", skipped}});
  if (!a.error.empty()) fields.emplace_back("reason", a.error);
  log(a.error.empty() ? LogLevel::kInfo : LogLevel::kWarn,
      a.error.empty() ? std::string(msg) : std::string(msg) + " up to a malformed line", fields);
}

}  // namespace

bool Proxy::adopt_predecessor_state() {
  std::string error;
  const auto text = predecessor_->state(error);
  if (!text) {
    log(LogLevel::kWarn,
        state_file_.empty() ? "hand-over: no backend state from the old process; every backend starts up"
                            : "hand-over: no backend state from the old process; reading state_file",
        {{"reason", error}});
    return false;
  }
  // Before any worker serves: the first request already avoids a backend the old one ejected.
  // What the old process notes after this answer, while its last clients drain, is not here
  // (docs/RUNNING.md "Graceful stop and binary upgrade").
  log_adopted(adopt_backend_state(*topology_, *text), "hand-over: backend state taken over", "");
  return true;
}

void Proxy::load_state_file() {
  if (state_file_.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(state_file_, ec)) return;  // the first start: nothing to read
  std::ifstream in(state_file_, std::ios::binary);
  if (!in) {
    log(LogLevel::kWarn, "state_file: cannot read it; every backend starts up",
        {{"path", state_file_}, {"reason", std::strerror(errno)}});
    return;
  }
  std::stringstream text;
  text << in.rdbuf();
  log_adopted(adopt_backend_state(*topology_, text.str()), "state_file: backend state loaded",
              state_file_);
}

void Proxy::state_file_tick() {
  if (!state_file_handed_) write_state_file();
  control_.add_timer(kStateFileEvery, [this] { state_file_tick(); });
}

void Proxy::write_state_file() {
  if (state_file_.empty()) return;
  // Cheap to compare every tick; the file is rewritten only when something in it moved.
  const auto t = topology();
  std::string fingerprint;
  for (const auto& pool : t->pools) {
    for (const auto& st : pool->states) {
      fingerprint += pool->config.name + '\0' + st->name + '\0' +
                     (st->down.load(std::memory_order_relaxed) ? '1' : '0') +
                     std::to_string(static_cast<int>(st->absence.phase())) + ':' +
                     std::to_string(st->absence.changes()) + '\n';
    }
  }
  if (fingerprint == state_fingerprint_) return;
  // Written whole beside it, then renamed over it: a crash leaves the old file or the new one.
  const std::string tmp = state_file_ + ".tmp";
  const std::string text = encode_backend_state(*t);
  std::string error;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) error = std::string("cannot write ") + tmp + ": " + std::strerror(errno);
  }
  if (error.empty() && std::rename(tmp.c_str(), state_file_.c_str()) != 0) {
    error = std::string("cannot rename ") + tmp + ": " + std::strerror(errno);
  }
  if (!error.empty()) {
    if (error != state_file_error_) {
      log(LogLevel::kError, "state_file: not written; a restart would forget the backends' health",
          {{"reason", error}});
    }
    state_file_error_ = error;
    return;
  }
  state_file_error_.clear();
  state_fingerprint_ = std::move(fingerprint);
}

void Proxy::serve_handover() {
  std::string error;
  const int fd = HandoverServer::listen(options_.handover_socket, error);
  if (fd < 0) {
    log(LogLevel::kError, "hand-over socket", {{"reason", error}});
    return;
  }
  handover_ = std::make_unique<HandoverServer>(
      control_, fd, [this] { return handover_sockets(); }, [this] { begin_drain("hand-over"); },
      [this] { return encode_backend_state(*topology()); });
}

HandoverSockets Proxy::handover_sockets() const {
  HandoverSockets out;
  std::lock_guard lock(mu_);
  for (const auto& pc : config_.pools) {
    const auto it = listen_.find(listen_key(pc));
    if (it != listen_.end()) out.emplace(pool_key(pc), it->second->fd);
  }
  if (config_.admin && admin_fd_ >= 0) out.emplace(admin_key(*config_.admin), admin_fd_);
  if (config_.stats && stats_fd_ >= 0) out.emplace(stats_key(*config_.stats), stats_fd_);
  return out;
}

void Proxy::stop() {
  stop_requested_ = true;
  control_.post([this] { control_.stop(); });
}

void Proxy::drain() {
  control_.post([this] { begin_drain("requested"); });
}

void Proxy::begin_drain(std::string_view why) {
  if (why == "hand-over") state_file_handed_ = true;  // the state file is the successor's now
  if (draining_ || config_.drain_timeout_ms == 0) {
    control_.stop();  // a second SIGTERM, or no drain configured: stop now
    return;
  }
  draining_ = true;
  const std::string ms = std::to_string(config_.drain_timeout_ms);
  log(LogLevel::kInfo, "draining", {{"reason", why}, {"drain_timeout_ms", ms}});
  {
    std::lock_guard lock(mu_);
    for (auto& w : workers_) w->drain();
    listen_.clear();  // each socket closes when the last worker has let go of it
  }
  drain_deadline_ = net::Clock::now() + std::chrono::milliseconds(config_.drain_timeout_ms);
  control_.add_timer(kDrainPoll, [this] { check_drained(); });
}

void Proxy::check_drained() {
  std::size_t open = 0;
  for (const auto& w : workers_) open += w->open_clients();
  if (open == 0 || net::Clock::now() >= drain_deadline_) {
    const std::string left = std::to_string(open);
    log(open == 0 ? LogLevel::kInfo : LogLevel::kWarn, "drained", {{"clients_left", left}});
    control_.stop();
    return;
  }
  control_.add_timer(kDrainPoll, [this] { check_drained(); });
}

void Proxy::wait_running() {
  std::unique_lock lock(run_mu_);
  run_cv_.wait(lock, [this] { return running_; });
}

std::shared_ptr<const Topology> Proxy::topology() const {
  std::lock_guard lock(mu_);
  return topology_;
}

bool Proxy::reload(const ProxyConfig& config, std::string& message) {
  {
    std::lock_guard lock(mu_);
    if (!reload_locked(config, message)) return false;
  }
  // Outside mu_: an agent publishes (Proxy::republish takes mu_) from its own thread.
  etcd_->sync(config);
  return true;
}

bool Proxy::reload_locked(const ProxyConfig& config, std::string& message) {
  auto refuse = [&](const std::string& why) {
    message = "reload refused: " + why;
    note_reload(metrics_, false);
    log(LogLevel::kWarn, "reload refused", {{"reason", why}});
    return false;
  };
  if (draining_) return refuse("draining");
  std::shared_ptr<const Topology> next;
  try {
    next = build_topology(config, topology_.get(), version_ + 1, &discovered_);
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  // Pools and listen addresses may come and go: new addresses are bound before anything
  // changes (a bind that fails refuses the whole reload), and the ones no pool uses any more
  // close once every worker has stopped accepting on them.
  std::map<std::string, std::shared_ptr<ListenSocket>> listen;
  std::string error;
  if (!open_listeners(config, listen, error)) return refuse(error);
  if (config.admin.has_value() != config_.admin.has_value() ||
      (config.admin && config.admin->text() != config_.admin->text()) ||
      config.workers != config_.workers) {
    log(LogLevel::kWarn,
        "reload: chash_proxy.admin and workers take effect at the next start "
        "(or binary hand-over)");
  }
  resolver_->resolve_later(*next);  // names of new or readdressed backends, off this thread
  message = describe_change(*topology_, *next);
  if (message.empty()) message = "no change\n";
  ++version_;
  topology_ = next;
  listen_ = std::move(listen);
  config_.pools = config.pools;
  // A new admin token applies at once (rotating it needs no restart), a new admin certificate
  // to the next connection.
  config_.admin_auth = config.admin_auth;
  config_.admin_tls = config.admin_tls;
  if (admin_ != nullptr && config.admin) {
    admin_->set_auth(config.admin_auth);
    admin_->set_tls(config.admin_tls);
  }
  for (auto& w : workers_) w->set_topology(next, listeners_for(*next));
  note_reload(metrics_, true);
  std::string one_line = message;
  for (char& c : one_line) c = c == '\n' ? ';' : c;
  const std::string v = std::to_string(version_);
  log(LogLevel::kInfo, "reloaded", {{"version", v}, {"changes", one_line}});
  return true;
}

void Proxy::quiesce_workers() {
  std::vector<Worker*> workers;
  {
    std::lock_guard lock(mu_);
    for (auto& w : workers_) workers.push_back(w.get());
  }
  for (Worker* w : workers) w->quiesce(std::chrono::milliseconds(1000));
}

namespace {

// The value of `name` in a query string "a=1&b=2" ("" when absent).
std::string query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    const std::size_t eq = kv.find('=');
    if (eq != std::string_view::npos && kv.substr(0, eq) == name)
      return std::string(kv.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace

bool Proxy::start_rebalance(std::string_view query, std::string& message) {
  if (query_param(query, "stop") == "1") return rebalancer_->stop(message);
  const std::string pool = query_param(query, "pool"), rate = query_param(query, "rate");
  double r = 0;
  if (!rate.empty()) {
    try {
      r = std::stod(rate);
    } catch (const std::exception&) {
      r = -1;
    }
  }
  if (pool.empty() || r < 0) {
    message = "POST /rebalance?pool=NAME[&rate=KEYS_PER_SECOND], or POST /rebalance?stop=1";
    return false;
  }
  return rebalancer_->start(pool, r, message);
}

bool Proxy::flush_backend(std::string_view query, std::string& message) {
  // "pool=P&backend=B" (the admin port's POST /flush?...).
  const std::string pool = query_param(query, "pool"), backend = query_param(query, "backend");
  if (pool.empty() || backend.empty()) {
    message = "POST /flush?pool=NAME&backend=NAME";
    return false;
  }
  // A fleet's returning server is held by the fleet, not by this proxy's sweeper.
  if (etcd_->serves(pool)) return etcd_->flush(pool, backend, message);
  return failback_->flush(pool, backend, message);
}

void Proxy::republish() {
  std::lock_guard lock(mu_);
  std::shared_ptr<const Topology> next;
  try {
    // The same config and version: only what the watchers learnt is new.
    next = build_topology(config_, topology_.get(), topology_->version, &discovered_);
  } catch (const std::exception& e) {
    log(LogLevel::kError, "cannot route with what was discovered", {{"reason", e.what()}});
    return;
  }
  topology_ = next;
  for (auto& w : workers_) w->set_topology(next, listeners_for(*next));
}

bool Proxy::reload_from_file(std::string& message) {
  if (options_.handle_signals) sd_notify_reloading();  // systemd: READY=1 again below
  const bool ok = file_->reload(message);
  if (options_.handle_signals) {
    sd_notify_ready(ok ? "serving; reloaded to version " + std::to_string(topology()->version)
                       : "serving; " + message);
  }
  return ok;
}

std::uint16_t Proxy::port(std::size_t pool) const {
  std::lock_guard lock(mu_);
  const auto it = listen_.find(listen_key(config_.pools.at(pool)));
  return it == listen_.end() ? 0 : net::local_port(it->second->fd);
}

std::uint16_t Proxy::port(const std::string& name) const {
  std::lock_guard lock(mu_);
  for (const auto& pc : config_.pools) {
    if (pc.name != name) continue;
    const auto it = listen_.find(listen_key(pc));
    return it == listen_.end() ? 0 : net::local_port(it->second->fd);
  }
  return 0;
}

std::uint16_t Proxy::admin_port() const { return admin_fd_ < 0 ? 0 : net::local_port(admin_fd_); }
std::uint16_t Proxy::stats_port() const { return stats_fd_ < 0 ? 0 : net::local_port(stats_fd_); }

StatsHeader Proxy::stats_header() const {
  StatsHeader h;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) h.source = host;
  h.version = CHASH_VERSION_STRING;
  h.uptime =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
          .count();
  h.timestamp = wall_ms() / 1000;
  // nutcracker counts every connection it holds: listeners, clients and servers.
  const auto topology = this->topology();
  std::uint64_t backends_open = 0;
  for (const auto& pool : topology->pools) {
    for (const auto& s : pool->states) {
      backends_open += static_cast<std::uint64_t>(std::max<std::int64_t>(0, s->active.load()));
    }
  }
  const auto clients_open =
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, metrics_.clients_open.load()));
  std::size_t listeners = 0;
  {
    std::lock_guard lock(mu_);
    listeners = listen_.size();
  }
  h.total_connections =
      listeners + metrics_.clients_accepted.load() + metrics_.backend_connects.load();
  h.curr_connections = listeners + clients_open + backends_open;
  return h;
}

std::string Proxy::prometheus() const {
  std::string out = render_prometheus(metrics_, *topology());
  for (const MembershipSource* s : sources_) out += s->prometheus();
  return out + rebalancer_->prometheus();
}

std::uint64_t Proxy::applied_version() const {
  std::uint64_t v = topology()->version;
  for (const auto& w : workers_) v = std::min(v, w->applied_version());
  return v;
}

std::string Proxy::status_page() const {
  const auto t = topology();
  const UiSample now = take_ui_sample(*t, steady_ms());
  const std::string status = status_json();
  std::optional<UiSample> base;
  {
    std::lock_guard lock(ui_mu_);
    base = ui_history_.baseline(now);
  }
  return render_ui(*t, status, now, base ? &*base : nullptr);
}

void Proxy::ui_tick() {
  const UiSample s = take_ui_sample(*topology(), steady_ms());
  {
    std::lock_guard lock(ui_mu_);
    ui_history_.add(s);
  }
  control_.add_timer(std::chrono::milliseconds(kUiSampleMs), [this] { ui_tick(); });
}

std::string Proxy::status_json() const {
  std::string o = render_status_json(metrics_, *topology(), applied_version(), worker_count_);
  // Each source's member ("sentinel":[...], "cluster":[...], "fleet":[...]) where it has one,
  // and the rebalance's, before the closing "}\n".
  std::vector<std::string> parts;
  for (const MembershipSource* s : sources_) parts.push_back(s->status_json());
  parts.push_back(rebalancer_->status_json());
  for (const std::string& part : parts) {
    if (part.empty() || part.ends_with(":[]") || o.size() < 2) continue;
    o.insert(o.size() - 2, "," + part);
  }
  return o;
}

}  // namespace chash::proxy
