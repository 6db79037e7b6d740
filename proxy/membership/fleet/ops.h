// SPDX-License-Identifier: Apache-2.0
// chash-proxy — membership edits as operators make them (the admin port's POST /fleet/...,
// `chash fleet`): read a pool's servers key, change the list, and write it back in a transaction
// on the revision read, so two edits at once cannot lose one (the loser reads again).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "membership/etcd/client.h"
#include "membership/fleet/state.h"

namespace chash::proxy::fleet {

enum class EditKind : std::uint8_t {
  kSet,     // the list becomes `args` (server strings)
  kAdd,     // `args` (server strings) join; a name already there is an error
  kRemove,  // the servers named `args` (names or whole strings) leave; the last may not
};

struct EditResult {
  bool ok = false;
  std::string message;        // what changed, or why nothing did
  std::int64_t revision = 0;  // the servers key's new mod_revision
  std::vector<std::string> servers;
};

// `check` validates the new list ("" good, else why not): the proxy's pool parser, or the CLI's
// syntax check (the proxies refuse what their pool cannot route, and keep the last good list).
// Throws etcd::EtcdError when etcd cannot be reached.
EditResult edit_servers(etcd::Client& etcd, const Layout& layout, const std::string& pool,
                        EditKind kind, const std::vector<std::string>& args,
                        const std::function<std::string(const std::vector<std::string>&)>& check);

// The CLI's check: a non-empty list of server strings, none named twice.
std::string check_server_strings(const std::vector<std::string>& servers);

}  // namespace chash::proxy::fleet
