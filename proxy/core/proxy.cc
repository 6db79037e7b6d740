#include "core/proxy.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "chash/error.h"
#include "core/log.h"
#include "core/worker.h"
#include "net/socket.h"
#include "proto/redis/resp.h"

namespace chash::proxy {

// ---- Health probe: a fresh connection and the protocol's cheapest question -----------------------
//   redis: [AUTH], PING -> +PONG;  memcache: version -> VERSION ...;  tcp: the connect succeeds.
// A down backend returns after `rise` successes in a row; with health_check_interval set, a
// backend that is up is probed too and `fall` (server_failure_limit) failures take it down.

class Proxy::Probe : public net::Pollable {
 public:
  Probe(net::EventLoop& loop, std::shared_ptr<const Pool> pool, NodeId node)
      : loop_(loop), pool_(std::move(pool)), node_(node), state_(pool_->states[node]) {}
  ~Probe() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void start() {
    state_->probing = true;
    was_down_ = state_->down.load();
    const ServerConfig& s = pool_->config.servers[node_];
    std::string error;
    fd_ = net::connect_to(s.address, error);
    if (fd_ < 0 || !loop_.add(fd_, EPOLLIN | EPOLLOUT, this)) {
      finish(false, error);
      return;
    }
    switch (pool_->config.protocol) {
      case PoolProtocol::kRedis: {
        const auto& pw = s.password ? s.password : pool_->config.server_password;
        if (pw) {
          redis::append_command(out_, {"AUTH", *pw});
          ++expected_;
        }
        redis::append_command(out_, {"PING"});
        ++expected_;
        break;
      }
      case PoolProtocol::kMemcache:
        out_ = "version\r\n";
        expected_ = 1;
        break;
      case PoolProtocol::kTcp:
        break;
    }
    timer_ = loop_.add_timer(std::chrono::milliseconds(pool_->config.timeout_ms.value_or(1000)),
                             [this] { finish(false, "probe timed out"); });
  }

  void on_event(std::uint32_t events) override {
    if (done_) return;
    if (events & EPOLLERR) {
      finish(false, std::string("connect: ") + std::strerror(net::socket_error(fd_)));
      return;
    }
    if ((events & EPOLLOUT) && pool_->config.protocol == PoolProtocol::kTcp) {
      finish(true, "");
      return;
    }
    if ((events & EPOLLOUT) && !out_.empty()) {
      const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN) {
        finish(false, std::string("write: ") + std::strerror(errno));
        return;
      }
      if (n > 0) out_.erase(0, static_cast<std::size_t>(n));
      if (out_.empty()) loop_.modify(fd_, EPOLLIN, this);
    }
    if (events & (EPOLLIN | EPOLLHUP)) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        if (n < 0 && errno == EAGAIN) return;
        finish(false, "connection closed");
        return;
      }
      in_.append(buf, static_cast<std::size_t>(n));
      if (pool_->config.protocol == PoolProtocol::kMemcache) {
        const std::size_t eol = in_.find("\r\n");
        if (eol == std::string::npos) {
          if (in_.size() > 1024) finish(false, "unexpected version reply");
          return;
        }
        finish(in_.starts_with("VERSION "), "unexpected version reply");
        return;
      }
      while (expected_ > 0) {
        const auto r = parser_.parse(in_);
        if (r == redis::ParseResult::kNeedMore) return;
        if (r == redis::ParseResult::kError || parser_.type() == '-') {
          finish(false, "probe refused");
          return;
        }
        last_ = std::string(parser_.span().in(in_));
        parser_.next();
        --expected_;
      }
      finish(last_ == "+PONG\r\n", "unexpected PING reply");
    }
  }

 private:
  void finish(bool ok, const std::string& why) {
    if (done_) return;
    done_ = true;
    loop_.cancel_timer(timer_);
    if (fd_ >= 0) loop_.remove(fd_);
    const PoolConfig& pc = pool_->config;
    state_->last_check_ms = steady_ms();
    if (!was_down_) {
      // A routine check of a backend in service: failures count like request failures.
      if (ok) {
        record_success(*state_);
      } else {
        record_failure(*state_, pc, "health check: " + why);
      }
    } else if (ok) {
      const std::uint32_t n = state_->probe_successes.fetch_add(1) + 1;
      if (n >= pc.rise) {
        state_->probe_successes = 0;
        state_->failures = 0;
        state_->down = false;
        log(LogLevel::kInfo, "backend up", {{"pool", pc.name}, {"backend", state_->name}});
      } else {
        state_->down_since_ms = steady_ms();  // the next probe after server_retry_timeout
      }
    } else {
      state_->probe_successes = 0;
      state_->down_since_ms = steady_ms();
      log(LogLevel::kDebug, "probe failed", {{"pool", pc.name}, {"backend", state_->name}, {"reason", why}});
    }
    state_->probing = false;
    loop_.defer_delete(std::unique_ptr<net::Pollable>(this));
  }

  net::EventLoop& loop_;
  std::shared_ptr<const Pool> pool_;
  NodeId node_;
  std::shared_ptr<BackendState> state_;
  int fd_ = -1;
  bool done_ = false;
  bool was_down_ = false;
  int expected_ = 0;
  net::EventLoop::TimerId timer_ = 0;
  std::string out_, in_, last_;
  redis::ReplyParser parser_;
};

// ---- Signals through a signalfd, on the control loop ------------------------------------------

class Proxy::Signals : public net::Pollable {
 public:
  explicit Signals(Proxy& p) : proxy_(p) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the workers start: they inherit it
    fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd_ >= 0) proxy_.control_.add(fd_, EPOLLIN, this);
  }
  ~Signals() override {
    if (fd_ >= 0) ::close(fd_);
  }
  void on_event(std::uint32_t) override {
    signalfd_siginfo si;
    while (::read(fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGHUP) {
        std::string message;
        proxy_.reload_from_file(message);
      } else {
        log(LogLevel::kInfo, "stopping", {{"signal", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM"}});
        proxy_.control_.stop();
      }
    }
  }

 private:
  Proxy& proxy_;
  int fd_ = -1;
};

// ---- Admin HTTP: GET /metrics, GET /status, POST /reload; one request per connection ----------

class Proxy::Admin : public net::Pollable {
 public:
  Admin(Proxy& p, int fd) : proxy_(p), fd_(fd) { proxy_.control_.add(fd_, EPOLLIN, this); }
  void on_event(std::uint32_t) override {
    for (;;) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);  // blocking: tiny exchanges
      if (c < 0) return;
      timeval tv{1, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      serve(c);
      ::close(c);
      // Listener is non-blocking: loop ends on EAGAIN.
    }
  }

 private:
  void serve(int c) {
    std::string req;
    char buf[2048];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 8192) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      req.append(buf, static_cast<std::size_t>(n));
    }
    const std::size_t sp1 = req.find(' ');
    const std::size_t sp2 = sp1 == std::string::npos ? sp1 : req.find(' ', sp1 + 1);
    const std::string method = req.substr(0, sp1);
    const std::string path = sp2 == std::string::npos ? "" : req.substr(sp1 + 1, sp2 - sp1 - 1);
    int code = 200;
    std::string type = "text/plain; version=0.0.4", body;
    if (method == "GET" && path == "/metrics") {
      body = proxy_.prometheus();
    } else if (method == "GET" && (path == "/status" || path == "/")) {
      type = "application/json";
      body = proxy_.status_json();
    } else if (method == "POST" && path == "/reload") {
      std::string message;
      code = proxy_.reload_from_file(message) ? 200 : 409;
      body = message + "\n";
    } else {
      code = 404;
      body = "not found: GET /metrics, GET /status, POST /reload\n";
    }
    std::string resp = "HTTP/1.1 " + std::to_string(code) + (code == 200 ? " OK" : code == 404 ? " Not Found" : " Conflict") +
                       "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\nConnection: close\r\n\r\n" + body;
    std::size_t off = 0;
    while (off < resp.size()) {
      const ssize_t n = ::send(c, resp.data() + off, resp.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
  }

  Proxy& proxy_;
  int fd_;
};

// ---- Proxy --------------------------------------------------------------------------------------

Proxy::Proxy(ProxyConfig config, ProxyOptions options) : config_(std::move(config)), options_(std::move(options)) {
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
    admin_ = std::make_unique<Admin>(*this, admin_fd_);
  }
  if (options_.handle_signals) signals_ = std::make_unique<Signals>(*this);
}

Proxy::~Proxy() {
  stop();
  workers_.clear();
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
  log(LogLevel::kInfo, "started", {{"listen", listens}, {"workers", nw}});
  control_.add_timer(std::chrono::milliseconds(50), [this] { health_tick(); });
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

void Proxy::health_tick() {
  const auto t = topology();
  const std::int64_t now = steady_ms();
  for (const auto& pool : t->pools) {
    for (NodeId i = 0; i < pool->states.size(); ++i) {
      BackendState& s = *pool->states[i];
      if (s.probing.load()) continue;
      if (s.down.load()) {
        if (now - s.down_since_ms.load() < static_cast<std::int64_t>(pool->config.server_retry_timeout_ms)) continue;
      } else {
        const auto every = static_cast<std::int64_t>(pool->config.health_check_interval_ms);
        if (every == 0 || now - s.last_check_ms.load() < every) continue;
      }
      (new Probe(control_, pool, i))->start();  // frees itself
    }
  }
  control_.add_timer(std::chrono::milliseconds(50), [this] { health_tick(); });
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
}

std::uint16_t Proxy::port(std::size_t pool) const { return net::local_port(listen_fds_.at(pool)); }
std::uint16_t Proxy::admin_port() const { return admin_fd_ < 0 ? 0 : net::local_port(admin_fd_); }

namespace {
std::string label_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}
std::string json_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string Proxy::prometheus() const {
  const Metrics& m = metrics_;
  std::string o;
  auto counter = [&](const char* name, const char* help, std::uint64_t v, const char* type = "counter") {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
         std::to_string(v) + "\n";
  };
  counter("chash_proxy_requests_total", "Commands received from clients.", m.requests.load());
  counter("chash_proxy_local_replies_total", "Commands answered by the proxy itself.", m.local_replies.load());
  counter("chash_proxy_errors_total", "Error replies made by the proxy.", m.proxy_errors.load());
  counter("chash_proxy_protocol_errors_total", "Clients closed for malformed requests.", m.protocol_errors.load());
  counter("chash_proxy_auth_failures_total", "Failed AUTH attempts.", m.auth_failures.load());
  counter("chash_proxy_clients_accepted_total", "Client connections accepted.", m.clients_accepted.load());
  counter("chash_proxy_clients_rejected_total", "Client connections over client_connections.", m.clients_rejected.load());
  counter("chash_proxy_clients", "Open client connections.",
          static_cast<std::uint64_t>(std::max<std::int64_t>(0, m.clients_open.load())), "gauge");
  counter("chash_proxy_reloads_total", "Configuration reloads applied.", m.reloads.load());
  counter("chash_proxy_reload_failures_total", "Configuration reloads refused.", m.reload_failures.load());
  o += "# HELP chash_proxy_request_duration_seconds Time from request parsed to reply ready.\n"
       "# TYPE chash_proxy_request_duration_seconds histogram\n";
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i <= Metrics::kBucketsUs.size(); ++i) {
    cum += m.latency[i].load();
    char le[32];
    if (i < Metrics::kBucketsUs.size()) {
      std::snprintf(le, sizeof le, "%g", static_cast<double>(Metrics::kBucketsUs[i]) / 1e6);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    o += std::string("chash_proxy_request_duration_seconds_bucket{le=\"") + le + "\"} " + std::to_string(cum) + "\n";
  }
  char sum[64];
  std::snprintf(sum, sizeof sum, "%.6f", static_cast<double>(m.latency_sum_us.load()) / 1e6);
  o += std::string("chash_proxy_request_duration_seconds_sum ") + sum + "\n";
  o += "chash_proxy_request_duration_seconds_count " + std::to_string(cum) + "\n";
  const auto t = topology();
  const char* names[] = {"chash_proxy_backend_up", "chash_proxy_backend_requests_total",
                         "chash_proxy_backend_errors_total", "chash_proxy_backend_ejections_total",
                         "chash_proxy_backend_timeouts_total", "chash_proxy_backend_connections"};
  const char* helps[] = {"1 when the backend takes traffic, 0 when down/ejected.",
                         "Requests sent to the backend (tcp pools: connections relayed).",
                         "Requests that failed at the backend.", "Times the backend went down.",
                         "Requests or connects that timed out.", "Open tcp relays to the backend."};
  for (int k = 0; k < 6; ++k) {
    const bool gauge = k == 0 || k == 5;
    o += std::string("# HELP ") + names[k] + " " + helps[k] + "\n# TYPE " + names[k] + (gauge ? " gauge\n" : " counter\n");
    for (const auto& pool : t->pools) {
      for (const auto& s : pool->states) {
        const std::uint64_t v = k == 0 ? (s->down.load() ? 0 : 1)
                                : k == 1 ? s->requests.load()
                                : k == 2 ? s->errors.load()
                                : k == 3 ? s->ejections.load()
                                : k == 4 ? s->timeouts.load()
                                         : static_cast<std::uint64_t>(std::max<std::int64_t>(0, s->active.load()));
        o += std::string(names[k]) + "{pool=\"" + label_escape(pool->config.name) + "\",backend=\"" +
             label_escape(s->name) + "\"} " + std::to_string(v) + "\n";
      }
    }
  }
  return o;
}

std::uint64_t Proxy::applied_version() const {
  std::uint64_t v = topology()->version;
  for (const auto& w : workers_) v = std::min(v, w->applied_version());
  return v;
}

std::string Proxy::status_json() const {
  const auto t = topology();
  std::string o = "{\"version\":" + std::to_string(t->version) +
                  ",\"applied_version\":" + std::to_string(applied_version()) +
                  ",\"workers\":" + std::to_string(worker_count_) +
                  ",\"requests\":" + std::to_string(metrics_.requests.load()) +
                  ",\"clients\":" + std::to_string(metrics_.clients_open.load()) + ",\"pools\":[";
  for (std::size_t p = 0; p < t->pools.size(); ++p) {
    const Pool& pool = *t->pools[p];
    o += std::string(p ? "," : "") + "{\"name\":\"" + json_escape(pool.config.name) + "\",\"listen\":\"" +
         json_escape(pool.config.listen.text()) + "\",\"protocol\":\"" + protocol_name(pool.config.protocol) +
         "\",\"routing\":\"" +
         (pool.config.protocol == PoolProtocol::kTcp && pool.config.balance != Balance::kHash &&
                  pool.config.balance != Balance::kIpHash
              ? std::string(balance_name(pool.config.balance))
              : json_escape(pool.router.describe())) +
         "\",\"clients\":" + std::to_string(pool.shared->clients.load()) + ",\"auto_eject_hosts\":" +
         std::string(pool.config.auto_eject_hosts ? "true" : "false") + ",\"servers\":[";
    for (std::size_t i = 0; i < pool.states.size(); ++i) {
      const BackendState& s = *pool.states[i];
      o += std::string(i ? "," : "") + "{\"name\":\"" + json_escape(s.name) + "\",\"address\":\"" +
           json_escape(pool.config.servers[i].address.text()) + "\",\"weight\":" +
           std::to_string(pool.config.servers[i].weight) + ",\"up\":" + (s.down.load() ? "false" : "true") +
           ",\"requests\":" + std::to_string(s.requests.load()) + ",\"errors\":" + std::to_string(s.errors.load()) +
           ",\"ejections\":" + std::to_string(s.ejections.load()) +
           ",\"connections\":" + std::to_string(std::max<std::int64_t>(0, s.active.load())) + "}";
    }
    o += "]}";
  }
  return o + "]}\n";
}

}  // namespace chash::proxy
