// SPDX-License-Identifier: Apache-2.0
#include "core/protocols.h"

#include <unistd.h>

#include "core/worker.h"
#include "proto/memcache/probe.h"
#include "proto/memcache/session.h"
#include "proto/redis/probe.h"
#include "proto/redis/session.h"
#include "proto/tcp/probe.h"
#include "proto/tcp/relay.h"

namespace chash::proxy {

void accept_client(Worker& worker, std::size_t pool_index, int fd, const sockaddr_storage& peer,
                   socklen_t peer_len) {
  (void)peer;
  (void)peer_len;
  switch (worker.pool(pool_index)->config.protocol) {
    case PoolProtocol::kRedis:
      new redis::Client(worker, pool_index, fd);  // owns itself
      return;
    case PoolProtocol::kMemcache:
      new memcache::Client(worker, pool_index, fd);  // owns itself
      return;
    case PoolProtocol::kTcp:
      (new tcp::Relay(worker, pool_index, fd, peer))->start();  // owns itself
      return;
  }
  ::close(fd);
}

std::unique_ptr<BackendConn> make_backend(Worker& worker, std::shared_ptr<const Pool> pool,
                                          NodeId node) {
  switch (pool->config.protocol) {
    case PoolProtocol::kRedis:
      return std::make_unique<redis::Backend>(worker, std::move(pool), node);
    case PoolProtocol::kMemcache:
      return std::make_unique<memcache::Backend>(worker, std::move(pool), node);
    case PoolProtocol::kTcp:
      break;
  }
  return nullptr;
}

std::unique_ptr<ProbeCheck> make_probe_check(const PoolConfig& pool, const ServerConfig& server) {
  switch (pool.protocol) {
    case PoolProtocol::kRedis:
      if (server.role == ServerRole::kReplica) {
        return std::make_unique<redis::ReplicaProbe>(
            server.password ? server.password : pool.server_password,
            server.user ? server.user : pool.server_user, pool.replica_max_lag_ms);
      }
      return std::make_unique<redis::Probe>(
          server.password ? server.password : pool.server_password,
          server.user ? server.user : pool.server_user);
    case PoolProtocol::kMemcache:
      return std::make_unique<memcache::Probe>();
    case PoolProtocol::kTcp:
      break;
  }
  return std::make_unique<tcp::Probe>();
}

std::string_view too_many_clients_reply(PoolProtocol protocol) noexcept {
  switch (protocol) {
    case PoolProtocol::kRedis:
      return "-ERR max number of clients reached\r\n";
    case PoolProtocol::kMemcache:
      return "SERVER_ERROR max number of clients reached\r\n";
    case PoolProtocol::kTcp:
      return "";
  }
  return "";
}

}  // namespace chash::proxy
