// SPDX-License-Identifier: Apache-2.0
#include "core/proxy.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "chash/version.h"
#include "core/log.h"
#include "core/status.h"
#include "core/worker.h"
#include "net/socket.h"

namespace chash::proxy {

namespace {

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
  topology_ = build_topology(config_, nullptr, version_);
  for (const auto& pc : config_.pools) {
    std::string error;
    const int fd = net::listen_on(pc.listen, pc.backlog, error);
    if (fd < 0) {
      for (const int f : listen_fds_) ::close(f);
      throw std::runtime_error("pool " + pc.name + ": " + error);
    }
    listen_fds_.push_back(fd);
  }
  if (config_.admin) {
    std::string error;
    admin_fd_ = net::listen_on(*config_.admin, 64, error);
    if (admin_fd_ < 0) {
      for (const int f : listen_fds_) ::close(f);
      throw std::runtime_error("admin: " + error);
    }
    admin_ = std::make_unique<AdminServer>(
        control_, admin_fd_,
        AdminServer::Handlers{[this] { return prometheus(); }, [this] { return status_json(); },
                              [this](std::string& message) { return reload_from_file(message); }});
  }
  if (options_.handle_signals) {
    signals_ = std::make_unique<SignalHandler>(
        control_,
        [this] {
          std::string message;
          reload_from_file(message);
        },
        [this](std::string_view signal) {
          log(LogLevel::kInfo, "stopping", {{"signal", signal}});
          control_.stop();
        });
  }
  if (config_.stats) {
    std::string error;
    stats_fd_ = net::listen_on(*config_.stats, 64, error);
    if (stats_fd_ < 0) {
      admin_.reset();
      if (admin_fd_ >= 0) ::close(admin_fd_);
      for (const int f : listen_fds_) ::close(f);
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
  health_ = std::make_unique<HealthChecker>(control_, [this] { return topology(); });
}

Proxy::~Proxy() {
  stop();
  workers_.clear();
  health_.reset();
  signals_.reset();
  admin_.reset();
  stats_.reset();
  if (admin_fd_ >= 0) ::close(admin_fd_);
  if (stats_fd_ >= 0) ::close(stats_fd_);
  for (const int f : listen_fds_) ::close(f);
}

void Proxy::run() {
  for (unsigned i = 0; i < worker_count_; ++i) {
    workers_.push_back(std::make_unique<Worker>(i, listen_fds_, topology(), metrics_));
  }
  for (auto& w : workers_) w->start();
  std::string listens;
  for (const auto& pc : config_.pools) listens += (listens.empty() ? "" : ",") + pc.listen.text();
  const std::string nw = std::to_string(worker_count_);
  log(LogLevel::kInfo, "started", {{"listen", listens}, {"workers", nw}});
  health_->start();
  {
    std::lock_guard lock(run_mu_);
    running_ = true;
  }
  run_cv_.notify_all();
  if (!stop_requested_) control_.run();
  for (auto& w : workers_) w->stop();
}

void Proxy::stop() {
  stop_requested_ = true;
  control_.post([this] { control_.stop(); });
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
  std::lock_guard lock(mu_);
  // Listeners are bound once: pools and their listen addresses must stay.
  bool same = config.pools.size() == config_.pools.size();
  for (std::size_t i = 0; same && i < config.pools.size(); ++i) {
    same = config.pools[i].name == config_.pools[i].name &&
           config.pools[i].listen.text() == config_.pools[i].listen.text();
  }
  if (!same) {
    message = "reload refused: pools and their listen addresses cannot change without a restart";
    note_reload(metrics_, false);
    log(LogLevel::kWarn, "reload refused", {{"reason", message}});
    return false;
  }
  std::shared_ptr<const Topology> next;
  try {
    next = build_topology(config, topology_.get(), version_ + 1);
  } catch (const std::exception& e) {
    message = std::string("reload refused: ") + e.what();
    note_reload(metrics_, false);
    log(LogLevel::kWarn, "reload refused", {{"reason", e.what()}});
    return false;
  }
  message = describe_change(*topology_, *next);
  if (message.empty()) message = "no change\n";
  ++version_;
  topology_ = next;
  config_.pools = config.pools;
  for (auto& w : workers_) w->set_topology(next);
  note_reload(metrics_, true);
  std::string one_line = message;
  for (char& c : one_line) c = c == '\n' ? ';' : c;
  const std::string v = std::to_string(version_);
  log(LogLevel::kInfo, "reloaded", {{"version", v}, {"changes", one_line}});
  return true;
}

bool Proxy::reload_from_file(std::string& message) {
  if (options_.config_path.empty()) {
    message = "reload refused: no config file";
    return false;
  }
  try {
    return reload(load_config(options_.config_path), message);
  } catch (const std::exception& e) {
    message = std::string("reload refused: ") + e.what();
    note_reload(metrics_, false);
    log(LogLevel::kWarn, "reload refused", {{"reason", e.what()}});
    return false;
  }
}

std::uint16_t Proxy::port(std::size_t pool) const { return net::local_port(listen_fds_.at(pool)); }
std::uint16_t Proxy::admin_port() const { return admin_fd_ < 0 ? 0 : net::local_port(admin_fd_); }
std::uint16_t Proxy::stats_port() const { return stats_fd_ < 0 ? 0 : net::local_port(stats_fd_); }

StatsHeader Proxy::stats_header() const {
  StatsHeader h;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) h.source = host;
  h.version = CHASH_VERSION_STRING;
  h.uptime = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                              started_)
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
  h.total_connections = listen_fds_.size() + metrics_.clients_accepted.load() +
                        metrics_.backend_connects.load();
  h.curr_connections = listen_fds_.size() + clients_open + backends_open;
  return h;
}

std::string Proxy::prometheus() const { return render_prometheus(metrics_, *topology()); }

std::uint64_t Proxy::applied_version() const {
  std::uint64_t v = topology()->version;
  for (const auto& w : workers_) v = std::min(v, w->applied_version());
  return v;
}

std::string Proxy::status_json() const {
  return render_status_json(metrics_, *topology(), applied_version(), worker_count_);
}

}  // namespace chash::proxy
