// SPDX-License-Identifier: Apache-2.0
// chash internal — per-thread scratch memory for walks past their inline buffers.
//
// A lookup that walks a key's preference order (failover past many down nodes, replicas, bounded
// loads) tracks the nodes it has seen in an inline buffer first; a walk past that needs a bitmap
// of node_count bits, or a list of node_count ids. Allocating those per lookup is what the hot
// path must not do (Envoy's and twemproxy's lookups do not allocate either). So they come from
// a per-thread pool: the first long walk on a thread allocates, every later one reuses. Leases
// nest (a visit inside a visit takes a second buffer). Not part of the API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "chash/node.h"

namespace chash::internal {

// A zeroed bitmap of at least `bits` bits, returned to the thread's pool (and its set words
// cleared) when the lease ends.
class ScratchBitmap {
 public:
  explicit ScratchBitmap(std::size_t bits);
  ~ScratchBitmap();
  ScratchBitmap(const ScratchBitmap&) = delete;
  ScratchBitmap& operator=(const ScratchBitmap&) = delete;

  std::uint64_t* words() noexcept { return words_->data(); }

 private:
  std::vector<std::uint64_t>* words_;
  std::size_t used_words_;
};

// A buffer of at least `count` node ids (contents unspecified), returned to the thread's pool
// when the lease ends.
class ScratchIds {
 public:
  explicit ScratchIds(std::size_t count);
  ~ScratchIds();
  ScratchIds(const ScratchIds&) = delete;
  ScratchIds& operator=(const ScratchIds&) = delete;

  std::span<NodeId> ids() noexcept { return {ids_->data(), count_}; }

 private:
  std::vector<NodeId>* ids_;
  std::size_t count_;
};

}  // namespace chash::internal
