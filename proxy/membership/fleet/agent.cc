// SPDX-License-Identifier: Apache-2.0
#include "membership/fleet/agent.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "chash/error.h"
#include "chash/internal/uri_decode.h"
#include "chash/version.h"
#include "base/log.h"
#include "base/text.h"
#include "membership/fleet/ops.h"

namespace chash::proxy::fleet {

namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
constexpr std::int64_t kRetryMs = 1000;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void block_signals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

etcd::ClientOptions client_options(const EtcdMembership& m) {
  etcd::ClientOptions o;
  for (const auto& e : m.endpoints) o.endpoints.push_back(etcd::parse_endpoint(e));
  o.tls = m.tls;
  o.ca = m.ca;
  o.cert = m.cert;
  o.key = m.key;
  o.verify = m.verify;
  o.user = m.user;
  o.password = m.password;
  o.timeout = std::chrono::milliseconds(m.timeout_ms);
  return o;
}

// The values of `name` in a query string ("pool=a&server=x&server=y"), URI-decoded.
std::vector<std::string> params(std::string_view query, std::string_view name) {
  std::vector<std::string> out;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    const std::size_t eq = kv.find('=');
    if (eq != std::string_view::npos && kv.substr(0, eq) == name) {
      std::string v, decoded;
      for (const char c : kv.substr(eq + 1)) v += c == '+' ? ' ' : c;
      if (chash::internal::uri_decode(v, decoded)) out.push_back(std::move(decoded));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::string spec_of(const ServerConfig& s) {
  return s.address.text() + ":" + std::to_string(s.weight) + " " + s.name;
}

}  // namespace

// What the watch thread, the sweeper and the rebalancer tell the main thread.
struct Agent::Event {
  enum class Kind : std::uint8_t {
    kSnapshot,
    kWatch,
    kSwept,
    kFlushed,
    kFlushRequest,
    kRebalanced
  };
  Kind kind = Kind::kSnapshot;
  std::vector<etcd::KeyValue> kvs;       // kSnapshot
  std::vector<etcd::WatchEvent> events;  // kWatch
  std::int64_t revision = 0;
  std::string pool, server;
  std::uint64_t epoch = 0;
  bool final = false, complete = false;
  FailbackSweeper::Outcome outcome;
};

// The queue the other threads write to. Shared with the callbacks handed to the sweeper and the
// rebalancer, which may outlive the Agent: once closed, what they push is dropped.
struct Agent::Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> events;
  bool closed = false;
  void push(Event e) {
    {
      std::lock_guard lock(mu);
      if (closed) return;
      events.push_back(std::move(e));
    }
    cv.notify_all();
  }
};

Agent::Agent(std::shared_ptr<const EtcdMembership> membership, std::vector<PoolConfig> pools,
             Host host)
    : m_(std::move(membership)), host_(std::move(host)), inbox_(std::make_shared<Inbox>()) {
  layout_.prefix = m_->prefix;
  client_ = std::make_unique<etcd::Client>(client_options(*m_));
  watch_client_ = std::make_unique<etcd::Client>(client_options(*m_));
  edit_client_ = std::make_unique<etcd::Client>(client_options(*m_));
  if (const etcd::ClientOptions o = client_options(*m_); o.endpoints.size() > 1) {
    for (const etcd::Endpoint& e : o.endpoints) {
      etcd::ClientOptions one = o;
      one.endpoints = {e};
      one.timeout = std::min(one.timeout, std::chrono::milliseconds(1000));
      probe_clients_.push_back(std::make_unique<etcd::Client>(std::move(one)));
    }
  }
  for (auto& p : pools) pools_.emplace(p.name, std::move(p));
  pools_now_ = pools_;
  reg_.id = host_.id;
  reg_.address = host_.address;
  reg_.admin = host_.admin;
  reg_.version = CHASH_VERSION_STRING;
  reg_.pid = ::getpid();
  reg_.started_ms = wall_ms();
  for (const auto& [name, pc] : pools_now_) reg_.pools[name];
}

Agent::~Agent() {
  {
    std::lock_guard lock(inbox_->mu);
    inbox_->closed = true;
    stop_ = true;
  }
  inbox_->cv.notify_all();
  watch_client_->stop();
  edit_client_->stop();
  {
    std::lock_guard lock(probe_mu_);
    probe_stop_ = true;
  }
  probe_cv_.notify_all();
  for (const auto& c : probe_clients_) c->stop();
  if (probe_thread_.joinable()) probe_thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  if (main_thread_.joinable()) main_thread_.join();
  // Leave at once rather than after the lease's TTL: the fleet need not wait for this proxy.
  if (lease_ != 0 && up_) {
    try {
      client_->revoke(lease_);
    } catch (const etcd::EtcdError&) {
    }
  }
}

bool Agent::serves(const std::string& pool) const {
  std::lock_guard lock(mu_);
  return pools_.count(pool) != 0;
}

void Agent::set_pools(std::vector<PoolConfig> pools) {
  {
    std::lock_guard lock(mu_);
    pools_.clear();
    for (auto& p : pools) pools_.emplace(p.name, std::move(p));
    pools_changed_ = true;
  }
  inbox_->cv.notify_all();
}

void Agent::discover_now() {
  // The first read, on the caller's thread, so that the proxy starts routing as the fleet does
  // rather than by the file (and the file's servers only when etcd cannot be reached).
  const std::int64_t deadline = steady_ms() + m_->start_timeout_ms;
  bool read = false;
  do {
    if (read_range(*client_)) {
      read = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (steady_ms() < deadline);
  if (!read) {
    log(LogLevel::kWarn, "etcd unreachable at start: serving the file's servers until it answers",
        {{"etcd", m_->endpoints.front()}, {"reason", etcd_error_}});
    return;
  }
  // Lease, registration, seeding and the pools' states, each a round at most: applied before
  // the first client is accepted.
  for (int round = 0; round < 6; ++round) {
    step();
    bool applied = true;
    for (const auto& [name, pc] : pools_now_) applied &= applied_epoch_[name] != 0;
    if (applied || !up_) break;
  }
}

void Agent::start() {
  if (main_thread_.joinable()) return;
  watch_thread_ = std::thread([this] { watch_loop(); });
  ::pthread_setname_np(watch_thread_.native_handle(), "etcd-watch");
  main_thread_ = std::thread([this] { main_loop(); });
  ::pthread_setname_np(main_thread_.native_handle(), "fleet");
  if (!probe_clients_.empty()) {
    probe_thread_ = std::thread([this] { probe_loop(); });
    ::pthread_setname_np(probe_thread_.native_handle(), "etcd-probe");
  }
}

void Agent::probe_loop() {
  for (;;) {
    // Each client records what it heard (etcd::Client::endpoint_status); the answer itself
    // is not needed.
    for (const auto& c : probe_clients_) {
      try {
        (void)c->get(layout_.leader());
      } catch (const etcd::EtcdError&) {
      }
    }
    std::unique_lock lock(probe_mu_);
    if (probe_cv_.wait_for(lock, std::chrono::milliseconds(kProbeMs),
                           [this] { return probe_stop_; }))
      return;
  }
}

bool Agent::read_range(etcd::Client& c) {
  try {
    etcd::RangeReply r = c.range_prefix(layout_.prefix + "/");
    Event e;
    e.kind = Event::Kind::kSnapshot;
    e.kvs = std::move(r.kvs);
    e.revision = r.revision;
    inbox_->push(std::move(e));
    return true;
  } catch (const etcd::EtcdError& e) {
    etcd_error_ = e.what();
    return false;
  }
}

// ---- The watch thread ---------------------------------------------------------------------------

void Agent::watch_loop() {
  block_signals();
  const std::string prefix = layout_.prefix + "/";
  const std::string end = etcd::prefix_end(prefix);
  std::int64_t next = 0;  // the revision to watch from; 0: read the range first
  int backoff_ms = 100;
  while (!watch_client_->stopped()) {
    try {
      if (next == 0) {
        etcd::RangeReply r = watch_client_->range_prefix(prefix);
        next = r.revision + 1;
        Event e;
        e.kind = Event::Kind::kSnapshot;
        e.kvs = std::move(r.kvs);
        e.revision = r.revision;
        inbox_->push(std::move(e));
      }
      watch_client_->watch(prefix, end, next, [&](const etcd::WatchReply& w) {
        if (w.compact_revision != 0 || w.canceled) {
          // Compacted past what we saw: what happened in between is gone; read it whole.
          next = 0;
          return false;
        }
        backoff_ms = 100;
        if (w.events.empty()) return true;
        for (const auto& ev : w.events) next = std::max(next, ev.kv.mod_revision + 1);
        Event e;
        e.kind = Event::Kind::kWatch;
        e.events = w.events;
        e.revision = w.revision;
        inbox_->push(std::move(e));
        return true;
      });
    } catch (const etcd::EtcdError&) {
      if (watch_client_->stopped()) break;
      // The main thread's keepalive says whether etcd is away; here we only try again.
      std::unique_lock lock(inbox_->mu);
      inbox_->cv.wait_for(lock, std::chrono::milliseconds(backoff_ms), [&] { return stop_; });
      backoff_ms = std::min(backoff_ms * 2, 2000);
    }
  }
}

// ---- The main thread ----------------------------------------------------------------------------

void Agent::main_loop() {
  block_signals();
  for (;;) {
    {
      std::unique_lock lock(inbox_->mu);
      inbox_->cv.wait_for(lock, kTick, [&] { return stop_ || !inbox_->events.empty(); });
      if (stop_) return;
    }
    step();
  }
}

void Agent::step() {
  std::deque<Event> events;
  {
    std::lock_guard lock(inbox_->mu);
    events.swap(inbox_->events);
  }
  {
    std::lock_guard lock(mu_);
    if (pools_changed_) {
      pools_changed_ = false;
      pools_now_ = pools_;
      for (auto it = reg_.pools.begin(); it != reg_.pools.end();) {
        it = pools_now_.count(it->first) ? std::next(it) : reg_.pools.erase(it);
      }
      for (const auto& [name, pc] : pools_now_) reg_.pools[name];
      // A pool's settings may change how it parses its servers: its state is applied again.
      applied_state_rev_.clear();
      applied_epoch_.clear();
      reg_dirty_ = true;
    }
  }
  bool etcd_answered = false;  // the watch got a range or events: etcd answers again
  for (Event& e : events) {
    etcd_answered |= e.kind == Event::Kind::kSnapshot || e.kind == Event::Kind::kWatch;
    switch (e.kind) {
      case Event::Kind::kSnapshot:
        kvs_.clear();
        for (auto& kv : e.kvs) kvs_.emplace(kv.key, std::move(kv));
        revision_ = e.revision;
        fresh_ = true;
        break;
      case Event::Kind::kWatch:
        for (auto& ev : e.events) {
          if (ev.deleted) kvs_.erase(ev.kv.key);
          else kvs_[ev.kv.key] = std::move(ev.kv);
        }
        revision_ = std::max(revision_, e.revision);
        break;
      case Event::Kind::kSwept:
        on_swept(e);
        break;
      case Event::Kind::kFlushed:
        flushing_.erase(e.pool);
        if (e.outcome.ok) {
          progress_.flushed[e.pool] = e.epoch;
          log(LogLevel::kInfo, "fleet: returning server emptied before it takes traffic",
              {{"pool", e.pool}, {"backend", e.server}});
        } else {
          log(LogLevel::kWarn, "fleet: flush failed; the return waits",
              {{"pool", e.pool}, {"backend", e.server}, {"reason", e.outcome.error}});
        }
        break;
      case Event::Kind::kFlushRequest:
        if (flushing_.count(e.pool) == 0) start_flush(e.pool, e.server, e.epoch);
        break;
      case Event::Kind::kRebalanced: {
        const auto it = rebalancing_.find(e.pool);
        if (it == rebalancing_.end()) break;
        if (e.complete) progress_.rebalanced[e.pool] = it->second;
        else rebalance_retry_ms_[e.pool] = steady_ms() + 2 * kRetryMs;
        rebalancing_.erase(it);
        break;
      }
    }
  }
  // After an outage the lease is tried again at once, not at the next retry: the proxy applies
  // what the watch brings under a live lease, and says etcd is up (chash_proxy_etcd_up) then.
  if (etcd_answered && !up_.load()) next_keepalive_ms_ = 0;
  try {
    session();
    if (fresh_) {
      apply_pools();
      report_health();
      run_plan();
      if (reg_dirty_) put_registration();
    }
  } catch (const etcd::EtcdError& e) {
    set_down(e.what());
  }
  publish_status();
}

void Agent::set_down(const std::string& why) {
  if (up_.exchange(false) || etcd_error_ != why) {
    log(LogLevel::kWarn,
        "etcd unreachable: serving the last applied membership; membership changes are refused",
        {{"reason", why}});
  }
  etcd_error_ = why;
  next_keepalive_ms_ = steady_ms() + kRetryMs / 2;
  watch_client_->interrupt();  // its connection may be as dead: it reconnects
}

void Agent::set_up() {
  if (!up_.exchange(true)) {
    if (!etcd_error_.empty())
      log(LogLevel::kInfo, "etcd reachable again", {{"etcd", client_->endpoint()}});
    etcd_error_.clear();
  }
}

void Agent::session() {
  const std::int64_t now = steady_ms();
  if (now < next_keepalive_ms_) return;
  const std::int64_t ttl_s = std::max<std::int64_t>(2, (m_->lease_ttl_ms + 999) / 1000);
  next_keepalive_ms_ = now + std::max<std::int64_t>(200, ttl_s * 1000 / 3);
  if (lease_ != 0 && client_->keepalive(lease_) > 0) {
    set_up();
    return;
  }
  const bool renewed = lease_ != 0;
  lease_ = client_->grant(ttl_s);
  set_up();
  reg_.lease = lease_;
  markers_.clear();  // written again under the new lease
  put_registration();
  put_markers();
  if (renewed)
    log(LogLevel::kWarn, "fleet: the lease had expired; registered again", {{"id", reg_.id}});
}

void Agent::put_registration() {
  if (lease_ == 0) return;
  reg_.etcd_revision = revision_;
  client_->put(layout_.proxy(reg_.id), encode_registration(reg_), lease_);
  reg_dirty_ = false;
}

// Each server this proxy writes elsewhere while the fleet has it ejected: a marker (no lease),
// so that its return knows this proxy's writes must be swept — even if this proxy is gone then.
void Agent::put_markers() {
  if (lease_ == 0) return;
  for (const auto& [key, since] : ejected_since_) {
    const std::size_t slash = key.find('/');
    const std::string pool = key.substr(0, slash), server = key.substr(slash + 1);
    if (markers_.count({pool, server}) != 0) continue;
    client_->put(layout_.absence(pool, server, reg_.id), encode_marker({lease_, since}));
    markers_.insert({pool, server});
  }
}

std::shared_ptr<const FleetPool> Agent::fleet_pool(const PoolConfig& pc, const View& v,
                                                   std::string& error) const {
  auto fp = std::make_shared<FleetPool>();
  fp->epoch = v.epoch;
  fp->revision = v.revision;
  fp->phase = phase_name(v.phase);
  // A tcp pool's relays hold no data that two proxies could split: each keeps its own health.
  fp->health = m_->health && pc.protocol != PoolProtocol::kTcp;
  try {
    fp->route = {servers_from_strings(pc, v.route.servers), v.route.ejected};
    for (const Routing& r : v.reads)
      fp->reads.push_back({servers_from_strings(pc, r.servers), r.ejected});
    for (const auto& [server, r] : v.homes)
      fp->homes.push_back({server, {servers_from_strings(pc, r.servers), r.ejected}});
  } catch (const Error& e) {
    error = e.what();
    return nullptr;
  }
  // An ejection names a member of its routing: a name absent from the servers would route as
  // if every member were up while the state says one is out (a hand-edited or foreign value).
  std::vector<const FleetRouting*> routings = {&fp->route};
  for (const FleetRouting& r : fp->reads) routings.push_back(&r);
  for (const auto& h : fp->homes) routings.push_back(&h.second);
  for (const FleetRouting* r : routings) {
    for (const std::string& name : r->ejected) {
      if (std::none_of(r->servers.begin(), r->servers.end(),
                       [&](const ServerConfig& s) { return s.name == name; })) {
        error = "the state ejects '" + name.substr(0, 64) + "', which is none of its servers";
        return nullptr;
      }
    }
  }
  return fp;
}

void Agent::acknowledge(const std::string& pool, const PoolState& st) {
  PoolReport& r = reg_.pools[pool];
  r.epoch = st.epoch;
  r.phase = st.phase;
  r.revision = st.revision;
  r.swept = false;
  r.overflow = false;
  reg_dirty_ = true;
}

bool Agent::publish(const PoolConfig& pc, const PoolState& st, bool ack) {
  std::string error;
  const View v = view_of(st);
  auto fp = fleet_pool(pc, v, error);
  if (fp != nullptr && !st.returning.empty() &&
      std::none_of(fp->route.servers.begin(), fp->route.servers.end(),
                   [&](const ServerConfig& s) { return s.name == st.returning; })) {
    error = "the state returns '" + st.returning.substr(0, 64) + "', which is none of its servers";
    fp = nullptr;
  }
  if (fp == nullptr) {
    note_refused(layout_.state(pc.name), applied_state_rev_[pc.name], error);
    return false;
  }
  const std::uint64_t before = applied_epoch_[pc.name];
  host_.discovered->set_fleet(pc.name, std::move(fp));
  host_.publish();  // every worker routes by it when this returns
  applied_epoch_[pc.name] = st.epoch;
  applied_phase_[pc.name] = phase_name(st.phase);
  if (ack) acknowledge(pc.name, st);
  // The servers ejected in what it routes by now: from here on its writes of their keys go
  // elsewhere (their markers), and a vote for their return needs a probe after this.
  auto& seen = ejected_seen_[pc.name];
  std::map<std::string, std::int64_t> next_seen;
  for (const auto& e : v.route.ejected) {
    next_seen[e] = seen.count(e) ? seen[e] : steady_ms();
    const auto at = st.ejected_at.find(e);
    ejected_since_[pc.name + "/" + e] = at == st.ejected_at.end() ? 0 : at->second;
  }
  seen = std::move(next_seen);
  for (auto it = ejected_since_.begin(); it != ejected_since_.end();) {
    const bool mine = it->first.starts_with(pc.name + "/");
    const std::string server = it->first.substr(pc.name.size() + 1);
    if (mine && !seen.count(server) && server != st.returning) {
      markers_.erase({pc.name, server});
      it = ejected_since_.erase(it);
    } else {
      ++it;
    }
  }
  put_markers();
  if (before != st.epoch) {
    log(LogLevel::kInfo, "fleet: routing applied",
        {{"pool", pc.name},
         {"epoch", std::to_string(st.epoch)},
         {"phase", phase_name(st.phase)},
         {"revision", std::to_string(st.revision)}});
  }
  return true;
}

void Agent::start_sweep(const PoolConfig& pc, const PoolState& st, bool final, bool after) {
  Pending& p = sweeping_[pc.name];
  p.epoch = st.epoch;
  p.final = final;
  p.after = after;
  p.done = false;
  p.running = true;
  p.retry_ms = 0;
  std::weak_ptr<Inbox> inbox = inbox_;
  const std::string pool = pc.name, server = st.returning;
  const std::uint64_t epoch = st.epoch;
  host_.sweeper->sweep_for_fleet(
      pool, server, [inbox, pool, server, epoch, final](const FailbackSweeper::Outcome& o) {
        Event e;
        e.kind = Event::Kind::kSwept;
        e.pool = pool;
        e.server = server;
        e.epoch = epoch;
        e.final = final;
        e.outcome = o;
        if (auto in = inbox.lock()) in->push(std::move(e));
      });
}

void Agent::on_swept(const Event& e) {
  const auto it = sweeping_.find(e.pool);
  if (it == sweeping_.end() || it->second.epoch != e.epoch) return;  // the fleet moved on
  Pending& p = it->second;
  p.running = false;
  if (!e.outcome.ok) {
    p.retry_ms = steady_ms() + kRetryMs;
    log(LogLevel::kWarn, "fleet: sweep of a returning server failed; trying again",
        {{"pool", e.pool}, {"backend", e.server}, {"reason", e.outcome.error}});
    return;
  }
  log(LogLevel::kInfo, "fleet: swept what this proxy wrote elsewhere while it was out",
      {{"pool", e.pool},
       {"backend", e.server},
       {"keys", std::to_string(e.outcome.keys)},
       {"overflow", e.outcome.overflow ? "true" : "false"}});
  p.done = true;
  PoolReport& r = reg_.pools[e.pool];
  if (!e.final) {
    r.swept = !e.outcome.overflow;
    r.overflow = e.outcome.overflow;
    reg_dirty_ = true;
  }
  // A final sweep: the prepare it waited for is published by apply_pools.
}

void Agent::apply_pools() {
  const std::int64_t now = steady_ms();
  for (const auto& [name, pc] : pools_now_) {
    const auto kv = kvs_.find(layout_.state(name));
    if (kv == kvs_.end()) continue;
    PoolState st;
    try {
      st = decode_state(kv->second.value);
    } catch (const std::invalid_argument& e) {
      note_refused(kv->first, kv->second.mod_revision, e.what());
      continue;
    }
    applied_state_rev_[name] = kv->second.mod_revision;
    const bool fresh_epoch = applied_epoch_[name] != st.epoch;
    auto pend = sweeping_.find(name);
    const bool pending_here = pend != sweeping_.end() && pend->second.epoch == st.epoch;
    const bool retry_due =
        pending_here && !pend->second.running && !pend->second.done && now >= pend->second.retry_ms;
    if (st.phase == Phase::kSweep) {
      // Route as before (the server stays out) and sweep what this proxy wrote at its keys'
      // other owners; the ack (swept) follows the sweep.
      if (fresh_epoch && publish(pc, st) && !pending_here) start_sweep(pc, st, false, false);
      else if (retry_due) start_sweep(pc, st, false, false);
      continue;
    }
    if (st.phase == Phase::kPrepare && !st.returning.empty()) {
      // A return's prepare reads the server through: first delete there what this proxy
      // noted since its sweep (writes it made before it saw this phase), then route by it —
      // and sweep once more before acknowledging it. A write routed by the sweep phase
      // between the first sweep's last round and the routing's switch went to the fallback
      // without deleting the server's old copy (only prepare's writes do); once every worker
      // routes by prepare (the sweeper quiesces them) the log holds every such key, and no
      // proxy can be in commit (routing writes to the server) before this one acknowledges.
      if (fresh_epoch) {
        if (!pending_here || retry_due) {
          if (!pending_here || !pend->second.running) start_sweep(pc, st, true, false);
          continue;
        }
        if (!pend->second.done) continue;
        if (!publish(pc, st, /*ack=*/false)) continue;
        start_sweep(pc, st, true, true);
        continue;
      }
      if (pending_here && pend->second.after) {
        if (retry_due) {
          start_sweep(pc, st, true, true);
        } else if (pend->second.done) {
          acknowledge(name, st);
          sweeping_.erase(pend);
        }
      }
      continue;
    }
    if (!fresh_epoch) continue;
    if (!publish(pc, st)) continue;
    if (st.phase == Phase::kCommit && !st.returning.empty()) {
      // Back in for every proxy: what it noted is read through or deleted by the writes.
      const auto t = host_.topology();
      for (const auto& p : t->pools) {
        if (p->config.name != name) continue;
        for (const auto& s : p->states) {
          if (s->name == st.returning) s->absence.clear();
        }
      }
    }
    if (pending_here) sweeping_.erase(pend);
  }
}

void Agent::report_health() {
  const auto t = host_.topology();
  for (const auto& p : t->pools) {
    const auto pc = pools_now_.find(p->config.name);
    if (pc == pools_now_.end()) continue;
    PoolReport& r = reg_.pools[p->config.name];
    std::map<std::string, std::string> down;
    std::vector<std::string> up;
    const auto& seen = ejected_seen_[p->config.name];
    for (NodeId i = 0; i < p->nodes; ++i) {
      const BackendState& s = *p->states[i];
      const std::string& name = p->servers[i].name;
      if (s.down.load()) {
        std::string why = s.last_error();
        down.emplace(name, why.empty() ? "down" : why);
        continue;
      }
      const auto e = seen.find(name);
      if (e != seen.end()) {
        // Ejected by the fleet, so no request of ours goes there: only a successful probe since
        // is a vote for its return.
        if (s.last_check_ms.load() < e->second || s.failures.load() != 0) continue;
      }
      up.push_back(name);
    }
    if (down != r.down || up != r.up) {
      r.down = std::move(down);
      r.up = std::move(up);
      reg_dirty_ = true;
    }
  }
}

std::vector<PoolPolicy> Agent::policies() const {
  std::vector<PoolPolicy> out;
  for (const auto& [name, pc] : pools_now_) {
    PoolPolicy p;
    p.name = name;
    for (const auto& s : pc.servers) p.seed.push_back(spec_of(s));
    p.auto_eject = pc.auto_eject_hosts;
    p.health = m_->health && pc.protocol != PoolProtocol::kTcp;
    p.warmup = pc.warmup;
    p.overflow_flush = pc.failover_overflow_flush;
    p.quorum = m_->quorum;
    p.window_ms = pc.warmup_window_ms;
    const PoolConfig* config = &pc;
    p.validate = [config](const std::vector<std::string>& servers,
                          std::vector<std::string>& names) -> std::string {
      try {
        for (const auto& s : servers_from_strings(*config, servers)) names.push_back(s.name);
      } catch (const Error& e) {
        return e.what();
      }
      return {};
    };
    out.push_back(std::move(p));
  }
  return out;
}

void Agent::note_refused(const std::string& key, std::int64_t revision, const std::string& why) {
  if (!refused_.insert({key, revision}).second) return;
  ++refused_total_;
  log(LogLevel::kError, "fleet: refused a value in etcd; the last good membership stays",
      {{"key", key}, {"revision", std::to_string(revision)}, {"reason", why}});
  last_refused_.push_back({key, why, revision});
  if (last_refused_.size() > 8) last_refused_.erase(last_refused_.begin());
}

void Agent::run_plan() {
  if (!up_ || lease_ == 0) return;
  const auto leader = kvs_.find(layout_.leader());
  leader_ =
      leader != kvs_.end() && leader->second.value == reg_.id && leader->second.lease == lease_;
  const Plan p = plan(kvs_, layout_, policies(), leader_, progress_, wall_ms());
  for (const auto& r : p.refused) note_refused(r.key, r.mod_revision, r.why);
  auto cas = [&](const std::string& key, const std::string& value, std::int64_t mod,
                 std::int64_t lease) {
    etcd::Compare c;
    c.key = key;
    c.target = mod == 0 ? etcd::Compare::Target::kCreate : etcd::Compare::Target::kMod;
    c.number = mod;
    const etcd::TxnReply r = client_->txn({c}, {etcd::Op::put(key, value, lease)});
    if (r.succeeded) {
      // Mirrored now, not when the watch says so: the next plan starts from it.
      etcd::KeyValue& kv = kvs_[key];
      kv.key = key;
      kv.value = value;
      kv.mod_revision = r.revision;
      if (kv.create_revision == 0) kv.create_revision = r.revision;
      kv.lease = lease;
    }
    return r.succeeded;
  };
  if (p.claim_leader && cas(layout_.leader(), reg_.id, 0, lease_)) {
    leader_ = true;
    log(LogLevel::kInfo, "fleet: this proxy leads (rebalance, flushes)", {{"id", reg_.id}});
  }
  for (const auto& w : p.writes) {
    if (cas(w.key, w.value, w.mod_revision, 0)) {
      ++transitions_;
      log(LogLevel::kInfo, "fleet: state written", {{"change", w.why}});
    }
  }
  if (leader_) leader_work(p);
}

void Agent::leader_work(const Plan& p) {
  const std::int64_t now = steady_ms();
  for (const auto& w : p.rebalance) {
    const auto running = rebalancing_.find(w.pool);
    if (running != rebalancing_.end() && running->second == w.epoch) continue;
    if (host_.rebalancer->running() || now < rebalance_retry_ms_[w.pool]) continue;
    // Nothing read through here (no previous routing): nothing to move.
    bool warming = false;
    for (const auto& pl : host_.topology()->pools) {
      if (pl->config.name == w.pool) warming = pl->warming();
    }
    if (!warming) {
      progress_.rebalanced[w.pool] = w.epoch;
      continue;
    }
    std::string message;
    if (host_.rebalancer->start(w.pool, m_->rebalance_rate, message)) {
      rebalancing_[w.pool] = w.epoch;
      log(LogLevel::kInfo, "fleet: rebalancing after a committed change",
          {{"pool", w.pool}, {"epoch", std::to_string(w.epoch)}});
    } else {
      rebalance_retry_ms_[w.pool] = now + 2 * kRetryMs;
    }
  }
  for (const auto& w : p.flush) {
    if (flushing_.count(w.pool) != 0) continue;
    log(LogLevel::kWarn,
        "fleet: emptying a returning server (some proxy's writes during its absence are unknown)",
        {{"pool", w.pool}, {"backend", w.server}});
    start_flush(w.pool, w.server, w.epoch);
  }
  for (const auto& prefix : p.clear) client_->del(prefix, etcd::prefix_end(prefix));
}

void Agent::start_flush(const std::string& pool, const std::string& server, std::uint64_t epoch) {
  flushing_.insert(pool);
  std::weak_ptr<Inbox> inbox = inbox_;
  host_.sweeper->flush_for_fleet(pool, server,
                                 [inbox, pool, server, epoch](const FailbackSweeper::Outcome& o) {
                                   Event e;
                                   e.kind = Event::Kind::kFlushed;
                                   e.pool = pool;
                                   e.server = server;
                                   e.epoch = epoch;
                                   e.outcome = o;
                                   if (auto in = inbox.lock()) in->push(std::move(e));
                                 });
}

void Agent::rebalanced(const std::string& pool, bool complete) {
  Event e;
  e.kind = Event::Kind::kRebalanced;
  e.pool = pool;
  e.complete = complete;
  inbox_->push(std::move(e));
}

// ---- Admin --------------------------------------------------------------------------------------

bool Agent::edit(std::string_view action, std::string_view query, std::string& message) {
  const auto pool = params(query, "pool");
  if (pool.size() != 1) {
    message = "POST /fleet/" + std::string(action) + "?pool=NAME&server=...";
    return false;
  }
  PoolConfig pc;
  {
    std::lock_guard lock(mu_);
    const auto it = pools_.find(pool[0]);
    if (it == pools_.end()) {
      message = "pool '" + pool[0] + "' does not take its servers from etcd here";
      return false;
    }
    pc = it->second;
  }
  EditKind kind;
  std::vector<std::string> args = params(query, "server");
  if (action == "add") {
    kind = EditKind::kAdd;
  } else if (action == "remove" || action == "drain") {
    kind = EditKind::kRemove;
  } else if (action == "set") {
    kind = EditKind::kSet;
    const auto json = params(query, "servers");
    if (json.size() == 1) {
      try {
        args = decode_servers(json[0]);
      } catch (const std::invalid_argument& e) {
        message = std::string("servers: ") + e.what();
        return false;
      }
    }
  } else {
    message = "POST /fleet/add, /fleet/remove, /fleet/drain or /fleet/set";
    return false;
  }
  if (args.empty()) {
    message = "give the servers: &server=... (or set's &servers=[JSON array])";
    return false;
  }
  std::lock_guard lock(edit_mu_);
  try {
    const EditResult r = edit_servers(*edit_client_, layout_, pool[0], kind, args,
                                      [&pc](const std::vector<std::string>& list) -> std::string {
                                        try {
                                          (void)servers_from_strings(pc, list);
                                        } catch (const Error& e) {
                                          return e.what();
                                        }
                                        return {};
                                      });
    message = r.message;
    if (r.ok && action == "drain") {
      message += "; the fleet moves its keys off (rebalance), then lets it go";
    }
    return r.ok;
  } catch (const etcd::EtcdError& e) {
    message = std::string("membership change refused: etcd unreachable (") + e.what() +
              "); serving the last applied membership";
    return false;
  }
}

bool Agent::flush(const std::string& pool, const std::string& backend, std::string& message) {
  std::uint64_t epoch = 0;
  {
    std::lock_guard lock(mu_);
    const auto it = states_.find(pool);
    if (it == states_.end()) {
      message = "pool '" + pool + "': no fleet state to flush for";
      return false;
    }
    const PoolState& st = it->second;
    if (st.phase != Phase::kSweep || st.returning != backend) {
      message = "pool '" + pool + "': '" + backend + "' is not returning (nothing held to flush)";
      return false;
    }
    epoch = st.epoch;
  }
  Event e;
  e.kind = Event::Kind::kFlushRequest;
  e.pool = pool;
  e.server = backend;
  e.epoch = epoch;
  inbox_->push(std::move(e));
  message = "flushing " + pool + "/" + backend + "; the fleet lets it back once it is empty";
  return true;
}

// ---- Status and metrics -------------------------------------------------------------------------

std::string Agent::status_json() const {
  std::lock_guard lock(mu_);
  return status_;
}

void Agent::metrics(MetricLines& out) const {
  std::lock_guard lock(mu_);
  for (const auto& [name, lines] : metrics_) {
    auto& o = out[name];
    o.insert(o.end(), lines.begin(), lines.end());
  }
}

void Agent::publish_status() {
  std::string status = build_status();
  MetricLines metrics;
  build_metrics(metrics);
  std::map<std::string, PoolState> states;
  for (const auto& [name, pc] : pools_now_) {
    const auto kv = kvs_.find(layout_.state(name));
    if (kv == kvs_.end()) continue;
    try {
      states.emplace(name, decode_state(kv->second.value));
    } catch (const std::invalid_argument&) {
    }
  }
  std::lock_guard lock(mu_);
  status_ = std::move(status);
  metrics_ = std::move(metrics);
  states_ = std::move(states);
}

std::string Agent::build_status() const {
  using nlohmann::json;
  json pools = json::array();
  const auto regs = registrations(kvs_, layout_);
  for (const auto& [name, pc] : pools_now_) {
    json p = {{"pool", name}};
    const auto ep = applied_epoch_.find(name);
    p["applied_epoch"] = ep == applied_epoch_.end() ? 0 : ep->second;
    const auto ph = applied_phase_.find(name);
    p["applied_phase"] = ph == applied_phase_.end() ? "" : ph->second;
    const auto sk = kvs_.find(layout_.servers(name));
    p["servers_revision"] = sk == kvs_.end() ? 0 : sk->second.mod_revision;
    std::uint64_t epoch = 0;
    const auto kv = kvs_.find(layout_.state(name));
    if (kv != kvs_.end()) {
      try {
        const PoolState st = decode_state(kv->second.value);
        epoch = st.epoch;
        p["state"] = json::parse(encode_state(st));
      } catch (const std::invalid_argument& e) {
        p["state_error"] = e.what();
      }
    }
    json members = json::array();
    for (const auto& [id, r] : regs) {
      const auto it = r.pools.find(name);
      if (it == r.pools.end()) continue;
      members.push_back({{"id", id},
                         {"address", r.address},
                         {"admin", r.admin},
                         {"version", r.version},
                         {"epoch", it->second.epoch},
                         {"phase", phase_name(it->second.phase)},
                         {"revision", it->second.revision},
                         {"lag", epoch > it->second.epoch ? epoch - it->second.epoch : 0},
                         {"down", it->second.down},
                         {"swept", it->second.swept}});
    }
    p["members"] = std::move(members);
    pools.push_back(std::move(p));
  }
  json refused = json::array();
  for (const auto& r : last_refused_) {
    refused.push_back({{"key", r.key}, {"revision", r.revision}, {"reason", r.why}});
  }
  // Each endpoint as the main, the watch and its probe connection last heard it (the latest word
  // wins).
  std::vector<etcd::Client::EndpointStatus> heard = client_->endpoint_status();
  const auto later = [&](std::size_t i, const etcd::Client::EndpointStatus& s) {
    if (i < heard.size() && s.at_ms > heard[i].at_ms) heard[i] = s;
  };
  const auto watched = watch_client_->endpoint_status();
  for (std::size_t i = 0; i < watched.size(); ++i) later(i, watched[i]);
  for (std::size_t i = 0; i < probe_clients_.size(); ++i) {
    later(i, probe_clients_[i]->endpoint_status().front());
  }
  json endpoints = json::array();
  for (const auto& e : heard) {
    endpoints.push_back({{"endpoint", e.endpoint},
                         {"state", e.state > 0   ? "up"
                                   : e.state < 0 ? "down"
                                                 : "unknown"},
                         {"error", e.error},
                         {"at_ms", e.at_ms}});
  }
  const auto leader = kvs_.find(layout_.leader());
  json o = {{"id", reg_.id},
            {"prefix", layout_.prefix},
            {"etcd",
             {{"up", up_.load()},
              {"endpoints", m_->endpoints},
              {"endpoint_status", endpoints},
              {"error", etcd_error_}}},
            {"revision", revision_},
            {"leader", leader == kvs_.end() ? "" : leader->second.value},
            {"lease", lease_},
            {"pools", pools},
            {"refused", refused}};
  return o.dump();
}

void Agent::build_metrics(MetricLines& out) const {
  const std::string prefix = "prefix=\"" + prometheus_label_escape(layout_.prefix) + "\"";
  out["chash_proxy_etcd_up"].push_back("{" + prefix + "} " + (up_.load() ? "1" : "0"));
  out["chash_proxy_fleet_leader"].push_back("{" + prefix + "} " + (leader_ ? "1" : "0"));
  out["chash_proxy_fleet_transitions_total"].push_back("{" + prefix + "} " +
                                                       std::to_string(transitions_.load()));
  out["chash_proxy_fleet_refused_total"].push_back("{" + prefix + "} " +
                                                   std::to_string(refused_total_.load()));
  const auto regs = registrations(kvs_, layout_);
  for (const auto& [name, pc] : pools_now_) {
    const std::string pool = "pool=\"" + prometheus_label_escape(name) + "\"";
    const auto ep = applied_epoch_.find(name);
    const auto rp = reg_.pools.find(name);
    out["chash_proxy_membership_revision"].push_back(
        "{" + pool + "} " + std::to_string(rp == reg_.pools.end() ? 0 : rp->second.revision));
    out["chash_proxy_fleet_epoch"].push_back(
        "{" + pool + "} " + std::to_string(ep == applied_epoch_.end() ? 0 : ep->second));
    std::uint64_t epoch = 0;
    if (const auto kv = kvs_.find(layout_.state(name)); kv != kvs_.end()) {
      try {
        const PoolState st = decode_state(kv->second.value);
        epoch = st.epoch;
        // Every server of the pool, 0 or 1: a gauge that disappears would read as "no data".
        for (const auto& spec : st.target.servers) {
          std::string server;
          try {
            server = server_name(spec);
          } catch (const Error&) {
            continue;
          }
          const bool ejected = std::find(st.target.ejected.begin(), st.target.ejected.end(),
                                         server) != st.target.ejected.end();
          out["chash_proxy_fleet_ejected"].push_back("{" + pool + ",backend=\"" +
                                                     prometheus_label_escape(server) + "\"} " +
                                                     (ejected ? "1" : "0"));
        }
      } catch (const std::invalid_argument&) {
      }
    }
    std::size_t n = 0;
    for (const auto& [id, r] : regs) {
      const auto it = r.pools.find(name);
      if (it == r.pools.end()) continue;
      ++n;
      const std::uint64_t lag = epoch > it->second.epoch ? epoch - it->second.epoch : 0;
      out["chash_proxy_fleet_member_lag"].push_back(
          "{" + pool + ",proxy=\"" + prometheus_label_escape(id) + "\"} " + std::to_string(lag));
    }
    out["chash_proxy_fleet_members"].push_back("{" + pool + "} " + std::to_string(n));
  }
}

}  // namespace chash::proxy::fleet
