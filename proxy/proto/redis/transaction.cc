// SPDX-License-Identifier: Apache-2.0
#include "proto/redis/transaction.h"

namespace chash::proxy::redis {

void Transaction::begin(NodeId node, std::size_t max_bytes) {
  reset();
  active_ = true;
  node_ = node;
  max_bytes_ = max_bytes;
}

std::string_view Transaction::queue(NodeId node, std::string_view request) {
  if (node != kNoNode) {
    // The first keyed command (or WATCH) picks the backend; every other key must agree.
    if (node_ == kNoNode) {
      node_ = node;
    } else if (node != node_) {
      aborted_ = true;
      return kCrossBackendTransaction;
    }
  }
  if (ends_.size() >= kMaxCommands) {
    aborted_ = true;
    return "ERR chash-proxy: a transaction may queue at most 10000 commands";
  }
  if (request.size() > max_bytes_ || bytes_.size() > max_bytes_ - request.size()) {
    aborted_ = true;
    return "ERR chash-proxy: the transaction's queued commands exceed max_request_bytes";
  }
  bytes_.append(request);
  ends_.push_back(bytes_.size());
  return {};
}

void Transaction::reset() {
  active_ = false;
  aborted_ = false;
  node_ = kNoNode;
  std::string().swap(bytes_);
  std::vector<std::size_t>().swap(ends_);
}

}  // namespace chash::proxy::redis
