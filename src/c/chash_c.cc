// SPDX-License-Identifier: Apache-2.0
// The C ABI (chash/chash_c.h) over chash::Router. Built into libchash_c.so only (not libchash):
// this file is compiled with -fvisibility=hidden, and src/c/chash_c.map keeps chash_* alone
// exported, so libchash's C++ symbols inside libchash_c.so stay private to it.
//
// Every entry point that can fail runs its body inside guarded(), which turns each exception —
// chash::Error, std::bad_alloc, anything else — into a status code and an error object: no C++
// exception may unwind into a C caller (that is undefined behaviour, usually an abort).
#include "chash/chash_c.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/node.h"
#include "chash/preset.h"
#include "chash/router.h"
#include "chash/version.h"
#include "presets/java_strings.h"

struct chash_router {
  chash::RoutingSpec spec;  // kept to rebuild the router on a membership change
  chash::Router router;
};

struct chash_error {
  int code;
  std::string message;
};

namespace {

// Out of memory, an error object cannot be allocated either: this static one is handed out
// instead, and chash_error_free knows not to free it.
chash_error g_no_memory{CHASH_ERR_NO_MEMORY, "out of memory"};

// The C codes are chash::ErrorCode's in the same order, offset by one (CHASH_OK is 0).
int code_of(chash::ErrorCode code) noexcept {
  switch (code) {
    case chash::ErrorCode::kInvalidArgument:
      return CHASH_ERR_INVALID_ARGUMENT;
    case chash::ErrorCode::kEmptyNodeSet:
      return CHASH_ERR_EMPTY_NODE_SET;
    case chash::ErrorCode::kDuplicateNode:
      return CHASH_ERR_DUPLICATE_NODE;
    case chash::ErrorCode::kUnknownNode:
      return CHASH_ERR_UNKNOWN_NODE;
    case chash::ErrorCode::kLimitExceeded:
      return CHASH_ERR_LIMIT_EXCEEDED;
    case chash::ErrorCode::kUnsupported:
      return CHASH_ERR_UNSUPPORTED;
    case chash::ErrorCode::kParse:
      return CHASH_ERR_PARSE;
  }
  return CHASH_ERR_INTERNAL;
}

// Stores an error for the caller (when it asked for one) and returns its code.
int fail(chash_error** err, int code, const char* message) noexcept {
  if (err != nullptr) {
    try {
      *err = new chash_error{code, message};
    } catch (...) {
      *err = &g_no_memory;
    }
  }
  return code;
}

// Runs body() (which returns a status) with every exception turned into a code and a message.
template <class Body>
int guarded(chash_error** err, Body&& body) noexcept {
  try {
    return body();
  } catch (const chash::Error& e) {
    return fail(err, code_of(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    if (err != nullptr) *err = &g_no_memory;
    return CHASH_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    return fail(err, CHASH_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(err, CHASH_ERR_INTERNAL, "unknown exception inside libchash");
  }
}

// A NULL where the header asks for a pointer: an error naming the argument, not a crash.
class NullArgument : public chash::Error {
 public:
  explicit NullArgument(const char* what)
      : chash::Error(chash::ErrorCode::kInvalidArgument, std::string(what) + " is NULL") {}
};

std::string_view bytes(const char* p, std::size_t n, const char* what) {
  if (p == nullptr && n != 0) throw NullArgument(what);
  return n == 0 ? std::string_view() : std::string_view(p, n);
}

// An unsigned decimal option value that fits T, as CLI11 takes --vnodes and the like.
template <class T>
T parse_number(std::string_view name, std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw chash::Error(chash::ErrorCode::kParse,
                       "option \"" + std::string(name) + "\" takes an unsigned number up to " +
                           std::to_string(std::numeric_limits<T>::max()) + ", got \"" +
                           std::string(text.substr(0, 64)) + "\"");
  }
  return value;
}

chash::RoutingSpec to_routing_spec(const chash_spec& s) {
  chash::RoutingSpec spec;
  // NULL and "" both leave a selector unset, as an absent flag does for the CLI.
  if (s.preset != nullptr) spec.preset = s.preset;
  if (s.algorithm != nullptr) spec.algorithm = s.algorithm;
  if (s.ring != nullptr && s.ring[0] != '\0') spec.ring = s.ring;
  if (s.hash != nullptr) spec.hash = s.hash;
  if (s.hash_tag != nullptr) spec.hash_tag = s.hash_tag;
  if (s.num_options != 0 && s.options == nullptr) throw NullArgument("spec->options");
  for (std::size_t i = 0; i < s.num_options; ++i) {
    const chash_option& o = s.options[i];
    if (o.name == nullptr) throw NullArgument("an option's name");
    const std::string_view name = o.name;
    if (o.value == nullptr) {
      throw chash::Error(chash::ErrorCode::kInvalidArgument,
                         "option \"" + std::string(name.substr(0, 64)) + "\" has a NULL value");
    }
    const std::string_view value = o.value;
    if (name == "vnodes") {
      spec.vnodes = parse_number<std::uint32_t>(name, value);
    } else if (name == "table-size") {
      spec.table_size = parse_number<std::uint64_t>(name, value);
    } else if (name == "probes") {
      spec.probes = parse_number<std::uint32_t>(name, value);
    } else if (name == "point-format") {
      spec.point_format = std::string(value);
    } else if (name == "balance-factor") {
      spec.balance_factor = parse_number<std::uint32_t>(name, value);
    } else if (name == "preset-option") {
      const auto eq = value.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        throw chash::Error(chash::ErrorCode::kParse,
                           "option \"preset-option\" takes KEY=VALUE, got \"" +
                               std::string(value.substr(0, 64)) + "\"");
      }
      spec.preset_settings.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else {
      throw chash::Error(chash::ErrorCode::kInvalidArgument,
                         "unknown option \"" + std::string(name.substr(0, 64)) +
                             "\" (options: vnodes, table-size, probes, point-format, "
                             "balance-factor, preset-option)");
    }
  }
  return spec;
}

std::vector<chash::Node> to_nodes(const chash_nodes& n) {
  if (n.count != 0 && n.names == nullptr) throw NullArgument("nodes->names");
  std::vector<chash::Node> nodes;
  nodes.reserve(n.count);
  for (std::size_t i = 0; i < n.count; ++i) {
    const char* name = n.names[i];
    if (name == nullptr) {
      throw chash::Error(chash::ErrorCode::kInvalidArgument,
                         "nodes->names[" + std::to_string(i) + "] is NULL");
    }
    chash::Node node;
    node.name =
        n.name_lengths != nullptr ? std::string(name, n.name_lengths[i]) : std::string(name);
    node.weight = n.weights != nullptr ? n.weights[i] : 1;
    nodes.push_back(std::move(node));
  }
  // Router::build validates the list (empty, duplicates, limits) with the placement's rules.
  return nodes;
}

// Builds the handle; the node list is what Router::build checks.
int make_router(chash::RoutingSpec spec, const std::vector<chash::Node>& nodes,
                chash_router** out) {
  chash::Router router = chash::Router::build(spec, nodes);
  *out = new chash_router{std::move(spec), std::move(router)};
  return CHASH_OK;
}

// The current node list with one change applied by `edit`, rebuilt into a new handle.
template <class Edit>
int derive(const chash_router* router, const char* name, std::size_t name_len, chash_router** out,
           chash_error** err, Edit&& edit) noexcept {
  return guarded(err, [&] {
    if (router == nullptr) throw NullArgument("router");
    if (out == nullptr) throw NullArgument("out");
    const std::string_view n = bytes(name, name_len, "name");
    const auto current = router->router.nodes();
    std::vector<chash::Node> nodes(current.begin(), current.end());
    edit(nodes, n, router->router.find(n));
    return make_router(router->spec, nodes, out);
  });
}

[[noreturn]] void unknown_node(std::string_view name) {
  throw chash::Error(chash::ErrorCode::kUnknownNode,
                     "no node named \"" + std::string(name.substr(0, 64)) + "\"");
}

}  // namespace

extern "C" {

// ---- Building and freeing ----------------------------------------------------------------------

int chash_router_new(const chash_spec* spec, const chash_nodes* nodes, chash_router** out,
                     chash_error** err) {
  return guarded(err, [&] {
    if (spec == nullptr) throw NullArgument("spec");
    if (nodes == nullptr) throw NullArgument("nodes");
    if (out == nullptr) throw NullArgument("out");
    return make_router(to_routing_spec(*spec), to_nodes(*nodes), out);
  });
}

void chash_router_free(chash_router* router) { delete router; }

// ---- Lookups -----------------------------------------------------------------------------------

uint32_t chash_route(const chash_router* router, const char* key, size_t key_len) {
  if (router == nullptr || (key == nullptr && key_len != 0)) return CHASH_NO_NODE;
  return router->router.route(std::string_view(key_len == 0 ? "" : key, key_len));
}

const char* chash_route_name(const chash_router* router, const char* key, size_t key_len,
                             size_t* name_len) {
  const uint32_t id = chash_route(router, key, key_len);
  return chash_router_node_name(router, id, name_len);
}

int chash_route_batch(const chash_router* router, const char* const* keys,
                      const size_t* key_lengths, size_t count, uint32_t* out, chash_error** err) {
  return guarded(err, [&] {
    if (router == nullptr) throw NullArgument("router");
    if (count == 0) return CHASH_OK;
    if (keys == nullptr) throw NullArgument("keys");
    if (key_lengths == nullptr) throw NullArgument("key_lengths");
    if (out == nullptr) throw NullArgument("out");
    // Keys become string_views a chunk at a time on the stack: no allocation per call, and a
    // chunk is as long as Router::route_batch's own (chash/batch.h's kRouteChunk is 64).
    constexpr std::size_t kChunk = 256;
    std::string_view views[kChunk];
    for (std::size_t i = 0; i < count; i += kChunk) {
      const std::size_t n = std::min(kChunk, count - i);
      for (std::size_t k = 0; k < n; ++k) {
        if (keys[i + k] == nullptr && key_lengths[i + k] != 0) {
          throw chash::Error(chash::ErrorCode::kInvalidArgument,
                             "keys[" + std::to_string(i + k) + "] is NULL");
        }
        views[k] = key_lengths[i + k] == 0 ? std::string_view()
                                           : std::string_view(keys[i + k], key_lengths[i + k]);
      }
      router->router.route_batch(std::span<const std::string_view>(views, n),
                                 std::span<chash::NodeId>(out + i, n));
    }
    return CHASH_OK;
  });
}

int chash_route_java_strings(const chash_router* router, const char* data, size_t data_len,
                             const uint8_t* coders, const int32_t* offsets, size_t count,
                             uint32_t* out, chash_error** err) {
  return guarded(err, [&] {
    if (router == nullptr) throw NullArgument("router");
    if (count == 0) return CHASH_OK;
    if (offsets == nullptr) throw NullArgument("offsets");
    if (out == nullptr) throw NullArgument("out");
    if (data == nullptr && data_len != 0) throw NullArgument("data");
    chash::presets::route_java_strings(
        router->router, chash::presets::JavaStrings{data, data_len, coders, offsets, count}, out);
    return CHASH_OK;
  });
}

int chash_route_n(const chash_router* router, const char* key, size_t key_len, uint32_t* out,
                  size_t max, size_t* count, chash_error** err) {
  return guarded(err, [&] {
    if (router == nullptr) throw NullArgument("router");
    if (count == nullptr) throw NullArgument("count");
    if (out == nullptr && max != 0) throw NullArgument("out");
    const std::string_view k = bytes(key, key_len, "key");
    // No replica list for a key that has no owner (route_n would still list every node).
    if (max == 0 || router->router.route(k) == chash::kNoNode) {
      *count = 0;
      return CHASH_OK;
    }
    *count = router->router.route_n(k, std::span<chash::NodeId>(out, max));
    return CHASH_OK;
  });
}

// ---- Membership changes ------------------------------------------------------------------------

int chash_router_add_node(const chash_router* router, const char* name, size_t name_len,
                          uint32_t weight, chash_router** out, chash_error** err) {
  return derive(router, name, name_len, out, err,
                [&](std::vector<chash::Node>& nodes, std::string_view n, chash::NodeId) {
                  // A duplicate is left for Router::build to name (with both positions).
                  nodes.push_back(chash::Node{std::string(n), weight});
                });
}

int chash_router_remove_node(const chash_router* router, const char* name, size_t name_len,
                             chash_router** out, chash_error** err) {
  return derive(router, name, name_len, out, err,
                [](std::vector<chash::Node>& nodes, std::string_view n, chash::NodeId id) {
                  if (id == chash::kNoNode) unknown_node(n);
                  nodes.erase(nodes.begin() + id);
                });
}

int chash_router_set_weight(const chash_router* router, const char* name, size_t name_len,
                            uint32_t weight, chash_router** out, chash_error** err) {
  return derive(router, name, name_len, out, err,
                [&](std::vector<chash::Node>& nodes, std::string_view n, chash::NodeId id) {
                  if (id == chash::kNoNode) unknown_node(n);
                  nodes[id].weight = weight;
                });
}

// ---- Description -------------------------------------------------------------------------------

size_t chash_router_node_count(const chash_router* router) {
  return router == nullptr ? 0 : router->router.node_count();
}

const char* chash_router_node_name(const chash_router* router, uint32_t index, size_t* name_len) {
  if (router == nullptr || index >= router->router.node_count()) return nullptr;
  // Node names are std::strings: NUL-terminated, and they live as long as the router.
  const std::string& name = router->router.nodes()[index].name;
  if (name_len != nullptr) *name_len = name.size();
  return name.c_str();
}

uint32_t chash_router_node_weight(const chash_router* router, uint32_t index) {
  if (router == nullptr || index >= router->router.node_count()) return 0;
  return router->router.nodes()[index].weight;
}

uint32_t chash_router_find_node(const chash_router* router, const char* name, size_t name_len) {
  if (router == nullptr || (name == nullptr && name_len != 0)) return CHASH_NO_NODE;
  return router->router.find(std::string_view(name_len == 0 ? "" : name, name_len));
}

const char* chash_router_describe(const chash_router* router) {
  return router == nullptr ? "" : router->router.describe().c_str();
}

size_t chash_preset_count(void) { return chash::preset_list().size(); }

const char* chash_preset_name(size_t index) {
  const auto list = chash::preset_list();
  // The names are string literals (src/presets/registry.cc), hence NUL-terminated.
  return index < list.size() ? list[index].name.data() : nullptr;
}

// ---- Errors ------------------------------------------------------------------------------------

int chash_error_code(const chash_error* error) {
  return error == nullptr ? CHASH_ERR_INVALID_ARGUMENT : error->code;
}

const char* chash_error_message(const chash_error* error) {
  return error == nullptr ? "" : error->message.c_str();
}

void chash_error_free(chash_error* error) {
  if (error != &g_no_memory) delete error;
}

const char* chash_status_name(int code) {
  switch (code) {
    case CHASH_OK:
      return "CHASH_OK";
    case CHASH_ERR_INVALID_ARGUMENT:
      return "CHASH_ERR_INVALID_ARGUMENT";
    case CHASH_ERR_EMPTY_NODE_SET:
      return "CHASH_ERR_EMPTY_NODE_SET";
    case CHASH_ERR_DUPLICATE_NODE:
      return "CHASH_ERR_DUPLICATE_NODE";
    case CHASH_ERR_UNKNOWN_NODE:
      return "CHASH_ERR_UNKNOWN_NODE";
    case CHASH_ERR_LIMIT_EXCEEDED:
      return "CHASH_ERR_LIMIT_EXCEEDED";
    case CHASH_ERR_UNSUPPORTED:
      return "CHASH_ERR_UNSUPPORTED";
    case CHASH_ERR_PARSE:
      return "CHASH_ERR_PARSE";
    case CHASH_ERR_NO_MEMORY:
      return "CHASH_ERR_NO_MEMORY";
    case CHASH_ERR_INTERNAL:
      return "CHASH_ERR_INTERNAL";
    default:
      return "CHASH_ERR_UNKNOWN";
  }
}

// ---- Versions ----------------------------------------------------------------------------------

const char* chash_version(void) { return CHASH_VERSION_STRING; }

uint32_t chash_version_number(void) { return CHASH_VERSION; }

uint32_t chash_c_abi_version(void) { return CHASH_C_ABI_MAJOR * 1000 + CHASH_C_ABI_MINOR; }

}  // extern "C"
