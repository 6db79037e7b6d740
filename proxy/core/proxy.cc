// SPDX-License-Identifier: Apache-2.0
#include "core/proxy.h"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "core/log.h"
#include "core/sd_notify.h"
#include "core/status.h"
#include "core/worker.h"
#include "net/socket.h"

namespace chash::proxy {

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
          sd_notify_stopping();
          control_.stop();
        });
  }
  health_ = std::make_unique<HealthChecker>(control_, [this] { return topology(); });
}

Proxy::~Proxy() {
  stop();
  workers_.clear();
  health_.reset();
  signals_.reset();
  admin_.reset();
  if (admin_fd_ >= 0) ::close(admin_fd_);
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
  // TODO(stats): the port actually bound (Proxy::stats_port()) once the stats port serves.
  const std::string stats = config_.stats ? config_.stats->text() : "off";
  log(LogLevel::kInfo, "started", {{"listen", listens}, {"workers", nw}, {"stats", stats}});
  // systemd Type=notify; handle_signals: only the process's own Proxy (main), not tests'.
  if (options_.handle_signals) sd_notify_ready("serving " + listens);
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
    metrics_.reload_failures.fetch_add(1);
    log(LogLevel::kWarn, "reload refused", {{"reason", message}});
    return false;
  }
  std::shared_ptr<const Topology> next;
  try {
    next = build_topology(config, topology_.get(), version_ + 1);
  } catch (const std::exception& e) {
    message = std::string("reload refused: ") + e.what();
    metrics_.reload_failures.fetch_add(1);
    log(LogLevel::kWarn, "reload refused", {{"reason", e.what()}});
    return false;
  }
  message = describe_change(*topology_, *next);
  if (message.empty()) message = "no change\n";
  ++version_;
  topology_ = next;
  config_.pools = config.pools;
  for (auto& w : workers_) w->set_topology(next);
  metrics_.reloads.fetch_add(1);
  std::string one_line = message;
  for (char& c : one_line) c = c == '\n' ? ';' : c;
  const std::string v = std::to_string(version_);
  log(LogLevel::kInfo, "reloaded", {{"version", v}, {"changes", one_line}});
  return true;
}

bool Proxy::reload_from_file(std::string& message) {
  if (options_.handle_signals) sd_notify_reloading();  // systemd: READY=1 again below
  const bool ok = [&] {
    if (options_.config_path.empty()) {
      message = "reload refused: no config file";
      return false;
    }
    try {
      return reload(load_config(options_.config_path), message);
    } catch (const std::exception& e) {
      message = std::string("reload refused: ") + e.what();
      metrics_.reload_failures.fetch_add(1);
      log(LogLevel::kWarn, "reload refused", {{"reason", e.what()}});
      return false;
    }
  }();
  if (options_.handle_signals) {
    sd_notify_ready(ok ? "serving; reloaded to version " + std::to_string(topology()->version)
                       : "serving; " + message);
  }
  return ok;
}

std::uint16_t Proxy::port(std::size_t pool) const { return net::local_port(listen_fds_.at(pool)); }
std::uint16_t Proxy::admin_port() const { return admin_fd_ < 0 ? 0 : net::local_port(admin_fd_); }

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
