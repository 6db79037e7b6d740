// SPDX-License-Identifier: Apache-2.0
// chash fleet — a fleet of chash-proxies fed by one etcd (docs/FLEET.md): show the pools'
// states, the proxies (what each applied, what each cannot reach) and the health votes, and make
// membership changes as the proxies take them (a transaction on the servers key), optionally
// waiting until every proxy has applied the change and the fleet is stable again.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "chash/error.h"
#include "commands.h"

#if CHASH_CLI_FLEET
#include "config/config.h"
#include "membership/etcd/client.h"
#include "membership/fleet/ops.h"
#include "membership/fleet/planner.h"
#include "membership/fleet/state.h"
#endif

namespace chash::cli {

#if CHASH_CLI_FLEET

namespace {

using proxy::etcd::EtcdError;
namespace fleet = proxy::fleet;
namespace etcd = proxy::etcd;

struct FleetArgs {
  std::vector<std::string> endpoints;
  std::string prefix = "/chash";
  std::string user, password, password_file;
  std::string cacert, cert, key;
  bool insecure = false;
  double timeout = 2;
  std::string pool;
  std::vector<std::string> servers;
  bool json = false;
  bool wait = false;
  double wait_timeout = 600;
};

void add_connection_flags(CLI::App* sub, FleetArgs& a) {
  sub->add_option("--etcd", a.endpoints, "etcd endpoints, host:port (comma-separated or repeated)")
      ->delimiter(',')
      ->required();
  sub->add_option("--prefix", a.prefix, "The fleet's key prefix in etcd")->capture_default_str();
  sub->add_option("--user", a.user, "etcd user (etcd's own auth)");
  sub->add_option("--password", a.password, "etcd password (visible in ps: prefer --password-file)");
  sub->add_option("--password-file", a.password_file, "File whose first line is the etcd password");
  sub->add_option("--cacert", a.cacert, "CA file that verifies etcd's certificates (https)");
  sub->add_option("--cert", a.cert, "Client certificate for etcd (with --key)");
  sub->add_option("--key", a.key, "Client key for etcd");
  sub->add_flag("--insecure-skip-tls-verify", a.insecure, "https without checking etcd's certificate");
  sub->add_option("--timeout", a.timeout, "Seconds for each etcd request")->capture_default_str();
}

etcd::Client connect(const FleetArgs& a) {
  etcd::ClientOptions o;
  for (const auto& e : a.endpoints) o.endpoints.push_back(etcd::parse_endpoint(e));
  o.tls = !a.cacert.empty() || !a.cert.empty() || a.insecure;
  o.ca = a.cacert;
  o.cert = a.cert;
  o.key = a.key;
  o.verify = !a.insecure;
  o.user = a.user;
  o.password = a.password;
  if (!a.password_file.empty()) {
    std::ifstream in(a.password_file);
    if (!in) throw Error(ErrorCode::kInvalidArgument, "--password-file " + a.password_file + ": cannot read");
    std::getline(in, o.password);
  }
  o.timeout = std::chrono::milliseconds(static_cast<long>(a.timeout * 1000));
  return etcd::Client(o);
}

fleet::Layout layout_of(const FleetArgs& a) {
  fleet::Layout l;
  try {
    l.prefix = fleet::normalize_prefix(a.prefix);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("--prefix: ") + e.what());
  }
  return l;
}

std::map<std::string, etcd::KeyValue> read_all(etcd::Client& c, const fleet::Layout& l) {
  std::map<std::string, etcd::KeyValue> kvs;
  for (auto& kv : c.range_prefix(l.prefix + "/").kvs) kvs.emplace(kv.key, std::move(kv));
  return kvs;
}

// The pools named under <prefix>/pools/.
std::vector<std::string> pools_of(const std::map<std::string, etcd::KeyValue>& kvs,
                                  const fleet::Layout& l) {
  std::vector<std::string> out;
  const std::string p = l.pools();
  for (auto it = kvs.lower_bound(p); it != kvs.end() && it->first.starts_with(p); ++it) {
    const std::string rest = it->first.substr(p.size());
    const std::string name = rest.substr(0, rest.find('/'));
    if (out.empty() || out.back() != name) out.push_back(name);
  }
  return out;
}

std::string joined(const std::vector<std::string>& v, const char* none = "none") {
  if (v.empty()) return none;
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void print_status(const FleetArgs& a) {
  auto c = connect(a);
  const fleet::Layout l = layout_of(a);
  const auto kvs = read_all(c, l);
  const auto regs = fleet::registrations(kvs, l);
  const auto leader = kvs.find(l.leader());
  nlohmann::json out = {{"etcd", c.endpoint()},
                        {"prefix", l.prefix},
                        {"leader", leader == kvs.end() ? "" : leader->second.value},
                        {"pools", nlohmann::json::array()}};
  if (!a.json) {
    std::printf("etcd %s  prefix %s  leader %s  proxies %zu\n", c.endpoint().c_str(),
                l.prefix.empty() ? "/" : l.prefix.c_str(),
                leader == kvs.end() ? "(none)" : leader->second.value.c_str(), regs.size());
  }
  for (const std::string& pool : pools_of(kvs, l)) {
    if (!a.pool.empty() && pool != a.pool) continue;
    nlohmann::json pj = {{"pool", pool}};
    const auto sk = kvs.find(l.servers(pool));
    const auto tk = kvs.find(l.state(pool));
    fleet::PoolState st;
    std::string state_error;
    if (tk != kvs.end()) {
      try {
        st = fleet::decode_state(tk->second.value);
      } catch (const std::invalid_argument& e) {
        state_error = e.what();
      }
    }
    const std::int64_t servers_rev = sk == kvs.end() ? 0 : sk->second.mod_revision;
    pj["servers_revision"] = servers_rev;
    pj["state"] = tk == kvs.end() || !state_error.empty() ? nlohmann::json(nullptr)
                                                           : nlohmann::json::parse(fleet::encode_state(st));
    if (!a.json) {
      std::printf("\npool %s  servers revision %lld  epoch %llu  %s%s\n", pool.c_str(),
                  static_cast<long long>(servers_rev), static_cast<unsigned long long>(st.epoch),
                  fleet::phase_name(st.phase),
                  servers_rev > st.revision && tk != kvs.end() ? "  (a newer servers value is pending or refused)" : "");
      if (!state_error.empty()) std::printf("  state: unreadable (%s)\n", state_error.c_str());
      std::printf("  servers:  %s\n", joined(st.target.servers).c_str());
      std::printf("  ejected:  %s\n", joined(st.target.ejected).c_str());
      if (!st.returning.empty()) std::printf("  returning: %s%s\n", st.returning.c_str(), st.held ? " (held: POST /flush)" : "");
      for (std::size_t i = 0; i < st.previous.size(); ++i) {
        std::printf("  previous %zu: %s\n", i + 1, joined(st.previous[i].servers).c_str());
      }
      std::printf("  %-24s %-22s %6s %-8s %4s  %s\n", "proxy", "address", "epoch", "phase", "lag",
                  "cannot reach");
    }
    nlohmann::json members = nlohmann::json::array();
    std::map<std::string, std::size_t> votes;
    std::size_t serving = 0;
    for (const auto& [id, r] : regs) {
      const auto it = r.pools.find(pool);
      if (it == r.pools.end()) continue;
      ++serving;
      const auto& rp = it->second;
      const std::uint64_t lag = st.epoch > rp.epoch ? st.epoch - rp.epoch : 0;
      std::string down;
      for (const auto& [server, why] : rp.down) {
        ++votes[server];
        down += (down.empty() ? "" : ", ") + server + " (" + why + ")";
      }
      members.push_back({{"id", id}, {"address", r.address}, {"admin", r.admin}, {"epoch", rp.epoch},
                         {"phase", fleet::phase_name(rp.phase)}, {"lag", lag}, {"down", rp.down}});
      if (!a.json) {
        std::printf("  %-24s %-22s %6llu %-8s %4llu  %s\n", id.c_str(), r.address.c_str(),
                    static_cast<unsigned long long>(rp.epoch), fleet::phase_name(rp.phase),
                    static_cast<unsigned long long>(lag), down.empty() ? "-" : down.c_str());
      }
    }
    pj["members"] = std::move(members);
    pj["down_votes"] = votes;
    if (!a.json && !votes.empty()) {
      std::string v;
      for (const auto& [server, n] : votes) v += (v.empty() ? "" : ", ") + server + " " + std::to_string(n) + "/" + std::to_string(serving);
      std::printf("  down votes: %s (a majority ejects, unless the proxies set membership: quorum)\n", v.c_str());
    }
    out["pools"].push_back(std::move(pj));
  }
  if (a.json) std::printf("%s\n", out.dump(2).c_str());
}

// Waits until the pool's state is stable at an epoch newer than `after` with every live proxy
// acknowledging it, printing each phase as it comes.
void wait_stable(etcd::Client& c, const fleet::Layout& l, const std::string& pool,
                 std::int64_t revision, double limit_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(limit_s * 1000));
  std::string last;
  for (;;) {
    const auto kvs = read_all(c, l);
    const auto tk = kvs.find(l.state(pool));
    if (tk != kvs.end()) {
      try {
        const fleet::PoolState st = fleet::decode_state(tk->second.value);
        std::size_t live = 0, acked = 0;
        for (const auto& [id, r] : fleet::registrations(kvs, l)) {
          if (!r.pools.count(pool)) continue;
          ++live;
          acked += fleet::acked(r, pool, st.epoch, st.phase) ? 1 : 0;
        }
        const std::string now = std::string(fleet::phase_name(st.phase)) + " (epoch " +
                                std::to_string(st.epoch) + ", " + std::to_string(acked) + "/" +
                                std::to_string(live) + " proxies)";
        if (now != last) std::fprintf(stderr, "chash fleet: %s\n", now.c_str());
        last = now;
        if (st.revision >= revision && st.phase == fleet::Phase::kStable && acked == live) return;
      } catch (const std::invalid_argument&) {
      }
    }
    if (std::chrono::steady_clock::now() > end) {
      throw Error(ErrorCode::kInvalidArgument,
                  "pool " + pool + ": not stable after " + std::to_string(static_cast<int>(limit_s)) +
                      " s (last: " + last + "); `chash fleet status` shows who holds it back");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void run_edit(const FleetArgs& a, fleet::EditKind kind, bool wait) {
  auto c = connect(a);
  const fleet::Layout l = layout_of(a);
  const fleet::EditResult r = fleet::edit_servers(c, l, a.pool, kind, a.servers, nullptr);
  std::printf("%s\n", r.message.c_str());
  if (!r.ok) throw ExitWith{kExitFailure};
  if (wait) wait_stable(c, l, a.pool, r.revision, a.wait_timeout);
}

}  // namespace

void add_fleet(CLI::App& app) {
  auto* fleet_cmd = app.add_subcommand(
      "fleet",
      "A fleet of chash-proxies fed by one etcd: its state, and membership changes "
      "(docs/FLEET.md)");
  fleet_cmd->require_subcommand(1);
  // Its own exit codes (docs/CLI.md), not the routing commands' the top level lists.
  fleet_cmd->footer(
      "Exit codes: 0 done; 1 refused (a name given twice, no such server, the last server) or "
      "etcd unreachable (the message names the endpoint and the reason); 2 usage error.");
  auto args = std::make_shared<FleetArgs>();
  auto guarded = [](auto f) {
    return [f] {
      try {
        f();
      } catch (const EtcdError& e) {
        throw Error(ErrorCode::kInvalidArgument, e.what());
      }
    };
  };
  auto* status = fleet_cmd->add_subcommand("status", "The pools' states, the proxies and what each cannot reach");
  add_connection_flags(status, *args);
  status->add_option("--pool", args->pool, "Only this pool");
  status->add_flag("--json", args->json, "JSON instead of a table");
  status->callback(guarded([args] { print_status(*args); }));

  struct Edit {
    const char* name;
    const char* help;
    const char* what;
    fleet::EditKind kind;
    bool wait;
  };
  for (const Edit& e : {Edit{"set-servers", "Replace the pool's servers", "SERVER", fleet::EditKind::kSet, false},
                        Edit{"add", "Add servers to the pool", "SERVER", fleet::EditKind::kAdd, false},
                        Edit{"remove", "Remove servers from the pool (by name)", "NAME", fleet::EditKind::kRemove, false},
                        Edit{"drain", "Remove servers and wait until the fleet has moved their keys off", "NAME",
                             fleet::EditKind::kRemove, true}}) {
    auto* sub = fleet_cmd->add_subcommand(e.name, e.help);
    add_connection_flags(sub, *args);
    sub->add_option("--pool", args->pool, "The pool")->required();
    sub->add_option("servers", args->servers,
                    std::string(e.what) + "... as in nutcracker.yml: \"127.0.0.1:6379:1 r1\" (names for remove/drain)")
        ->required();
    if (!e.wait) sub->add_flag("--wait", args->wait, "Wait until every proxy applied it and the fleet is stable");
    sub->add_option("--wait-timeout", args->wait_timeout, "Seconds to wait at most")->capture_default_str();
    const fleet::EditKind kind = e.kind;
    const bool always = e.wait;
    sub->callback(guarded([args, kind, always] { run_edit(*args, kind, always || args->wait); }));
  }
}

#else

void add_fleet(CLI::App& app) {
  auto* f = app.add_subcommand("fleet", "(not in this build: chash-proxy's library was not built)");
  f->callback([] {
    throw Error(ErrorCode::kInvalidArgument, "chash fleet needs chash-proxy's library (yaml-cpp)");
  });
}

#endif

}  // namespace chash::cli
