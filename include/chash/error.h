// SPDX-License-Identifier: Apache-2.0
// chash — error type thrown at the library's edges.
//
// The hot path (pick, pick_n, hashing) never throws and never allocates. Everything that takes
// input from a person or a file — building a table, parsing a hash name or an address, changing
// membership — reports a problem by throwing chash::Error with a message a person can act on,
// e.g. "duplicate node name \"cache-1\" (positions 0 and 3)".
#pragma once

#include <stdexcept>
#include <string>

namespace chash {

enum class ErrorCode {
  kInvalidArgument,  // a value outside its documented range
  kEmptyNodeSet,     // no node, or no node with positive weight
  kDuplicateNode,    // two nodes share a name
  kUnknownNode,      // a name that is not in the node set
  kLimitExceeded,    // weights, points or table sizes beyond the documented limits
  kUnsupported,      // an option the algorithm does not have (e.g. weights on jump)
  kParse,            // text that does not parse (a hash name, an address)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace chash
