// SPDX-License-Identifier: Apache-2.0
#include "membership/fleet/ops.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "chash/internal/did_you_mean.h"
#include "config/config.h"
#include "config/parse_util.h"
#include "base/utf8.h"

namespace chash::proxy::fleet {

namespace {

std::string name_or(const std::string& spec) {
  try {
    return server_name(spec);
  } catch (const std::exception&) {
    return spec;
  }
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::string check_server_strings(const std::vector<std::string>& servers) {
  if (servers.empty()) return "no servers (a pool needs at least one)";
  std::set<std::string> names;
  for (const auto& s : servers) {
    std::string name;
    try {
      name = server_name(s);
    } catch (const std::exception& e) {
      return e.what();
    }
    if (!names.insert(name).second) return "the name '" + name + "' is given twice";
  }
  try {
    std::vector<ServerConfig> parsed;
    for (const auto& s : servers) parsed.push_back(config_detail::parse_server(s, "server"));
    if (std::string dup = same_server(parsed); !dup.empty()) return dup;
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

EditResult edit_servers(etcd::Client& etcd, const Layout& layout, const std::string& pool,
                        EditKind kind, const std::vector<std::string>& args,
                        const std::function<std::string(const std::vector<std::string>&)>& check) {
  EditResult out;
  if (!valid_segment(pool)) {
    out.message = "'" + pool.substr(0, 60) + "' is not a pool name";
    return out;
  }
  const std::string key = layout.servers(pool);
  for (int attempt = 0; attempt < 5; ++attempt) {
    const etcd::RangeReply now = etcd.get(key);
    std::vector<std::string> list;
    std::int64_t mod = 0;
    if (!now.kvs.empty()) {
      mod = now.kvs.front().mod_revision;
      try {
        list = decode_servers(now.kvs.front().value);
      } catch (const std::invalid_argument& e) {
        if (kind != EditKind::kSet) {
          out.message = "the servers key of pool '" + pool + "' holds a bad value (" + e.what() +
                        "); replace it with set-servers";
          return out;
        }
      }
    } else if (kind != EditKind::kSet) {
      // Most likely a misspelt pool: name the ones etcd has (set-servers would create a new one).
      std::set<std::string> known;
      for (const auto& kv : etcd.range_prefix(layout.pools()).kvs) {
        const std::string rest = kv.key.substr(std::min(kv.key.size(), layout.pools().size()));
        if (const auto slash = rest.find('/'); slash != std::string::npos && slash > 0)
          known.insert(rest.substr(0, slash));
      }
      out.message = "pool '" + pool + "' has no servers in etcd (" + key + ")";
      if (!known.empty()) {
        const std::vector<std::string_view> names(known.begin(), known.end());
        const std::string_view near = internal::nearest_name(pool, names);
        out.message += near.empty() ? "; pools there: " + joined({known.begin(), known.end()})
                                    : "; did you mean '" + std::string(near) + "'?";
      }
      out.message += " (set-servers creates a pool)";
      return out;
    }
    std::vector<std::string> next = list;
    std::string what;
    switch (kind) {
      case EditKind::kSet:
        next = args;
        what = "servers set to " + joined(next);
        break;
      case EditKind::kAdd:
        for (const auto& a : args) {
          const std::string name = name_or(a);
          for (const auto& s : next) {
            if (name_or(s) == name) {
              out.message = "pool '" + pool + "' already has a server named '" + name + "'";
              return out;
            }
          }
          next.push_back(a);
        }
        what = "added " + joined(args);
        break;
      case EditKind::kRemove:
        for (const auto& a : args) {
          const std::string name = name_or(a);
          const auto it = std::find_if(next.begin(), next.end(),
                                       [&](const std::string& s) { return name_or(s) == name; });
          if (it == next.end()) {
            out.message = "pool '" + pool + "' has no server named '" + name + "'";
            return out;
          }
          next.erase(it);
        }
        if (next.empty()) {
          out.message = "pool '" + pool + "' would have no servers left";
          return out;
        }
        what = "removed " + joined(args);
        break;
    }
    // etcd holds the list as JSON, which is UTF-8 text: a name with other bytes cannot be stored
    // (and would change if it were replaced), so it is refused here, before any other check.
    for (const auto& s : next) {
      if (!is_utf8(s)) {
        out.message = "refused: server '" + printable_utf8(s.substr(0, 60)) +
                       "' is not UTF-8 text (etcd holds the servers as JSON)";
        return out;
      }
    }
    if (const std::string bad = check ? check(next) : check_server_strings(next); !bad.empty()) {
      out.message = "refused: " + bad;
      return out;
    }
    if (next == list && mod != 0) {
      out.ok = true;
      out.revision = mod;
      out.servers = next;
      out.message = "no change";
      return out;
    }
    etcd::Compare c;
    c.key = key;
    c.target = mod == 0 ? etcd::Compare::Target::kCreate : etcd::Compare::Target::kMod;
    c.number = mod;
    const etcd::TxnReply r = etcd.txn({c}, {etcd::Op::put(key, encode_servers(next))});
    if (r.succeeded) {
      out.ok = true;
      out.revision = r.revision;
      out.servers = std::move(next);
      out.message = "pool " + pool + ": " + what + " (revision " + std::to_string(r.revision) + ")";
      return out;
    }
    // Another edit got there first: read it and apply ours to it.
  }
  out.message = "pool '" + pool + "': the servers key kept changing under the edit; try again";
  return out;
}

}  // namespace chash::proxy::fleet
