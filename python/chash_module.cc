// SPDX-License-Identifier: Apache-2.0
// chash._chash — the Python binding of chash::Router (pybind11). The package `chash`
// (python/chash/__init__.py) re-exports it; docs/PYTHON.md is the API.
//
// Keys are str (hashed as their UTF-8 bytes, as uhashring and hash_ring hash them) or bytes.
// Node names are kept as the objects the caller gave, so route() answers with the caller's own
// str or bytes. A Router is immutable (a shared chash::Router); only its down set changes, and
// route_many copies that set and the keys before it releases the GIL, so other threads may mark
// nodes down or build new routers while a batch runs.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/preset.h"
#include "chash/ring_spec.h"
#include "chash/router.h"
#include "chash/table.h"

namespace py = pybind11;

namespace {

// The bytes of a key or node name: str as UTF-8, bytes as they are. Anything else is a
// TypeError naming `what`. The view lives as long as `obj`.
std::string_view bytes_of(py::handle obj, const char* what) {
  if (PyUnicode_Check(obj.ptr())) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(obj.ptr(), &size);
    if (data == nullptr) throw py::error_already_set();  // lone surrogates: UnicodeEncodeError
    return {data, static_cast<std::size_t>(size)};
  }
  if (PyBytes_Check(obj.ptr())) {
    return {PyBytes_AS_STRING(obj.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(obj.ptr()))};
  }
  throw py::type_error(std::string(what) + " must be str or bytes, not " +
                       std::string(py::str(py::type::of(obj).attr("__name__"))));
}

std::uint32_t weight_of(py::handle obj) {
  if (PyBool_Check(obj.ptr()) || !PyLong_Check(obj.ptr())) {
    throw py::type_error("a node weight must be an int, not " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  int overflow = 0;
  const long long w = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  if (overflow != 0 || w < 0 || w > 0xFFFFFFFFLL) {
    throw py::value_error("a node weight must be between 0 and 4294967295, got " +
                          std::string(py::str(obj)));
  }
  return static_cast<std::uint32_t>(w);
}

// Keyword arguments: None or a str / a non-negative int; the wrong type is a TypeError and an
// out-of-range number a ValueError, both naming the argument.
std::optional<std::string> opt_str(const py::object& o, const char* name) {
  if (o.is_none()) return std::nullopt;
  if (!py::isinstance<py::str>(o)) throw py::type_error(std::string(name) + " must be a str");
  return o.cast<std::string>();
}

template <class T>
std::optional<T> opt_uint(const py::object& o, const char* name) {
  if (o.is_none()) return std::nullopt;
  if (PyBool_Check(o.ptr()) || !PyLong_Check(o.ptr())) {
    throw py::type_error(std::string(name) + " must be an int");
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o.ptr(), &overflow);
  if (overflow != 0 || v < 0 ||
      static_cast<unsigned long long>(v) > std::numeric_limits<T>::max()) {
    throw py::value_error(std::string(name) + " out of range: " + std::string(py::str(o)));
  }
  return static_cast<T>(v);
}

struct NodeList {
  std::vector<chash::Node> nodes;
  std::vector<py::object> names;  // as the caller spelled them (str or bytes)
};

// nodes: a list of names, a list of (name, weight), or a dict name -> weight.
NodeList parse_nodes(const py::object& nodes) {
  NodeList out;
  auto add = [&](py::handle name, std::uint32_t weight) {
    out.nodes.push_back({std::string(bytes_of(name, "a node name")), weight});
    out.names.push_back(py::reinterpret_borrow<py::object>(name));
  };
  if (py::isinstance<py::dict>(nodes)) {
    for (auto [name, weight] : nodes.cast<py::dict>()) add(name, weight_of(weight));
    return out;
  }
  if (py::isinstance<py::str>(nodes) || py::isinstance<py::bytes>(nodes) ||
      !py::isinstance<py::iterable>(nodes)) {
    throw py::type_error("nodes must be a list of names, a list of (name, weight) or a dict");
  }
  for (py::handle item : nodes) {
    if (py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item)) {
      auto seq = py::reinterpret_borrow<py::sequence>(item);
      if (seq.size() != 2) throw py::type_error("a node must be a name or a (name, weight) pair");
      add(seq[0], weight_of(seq[1]));
    } else {
      add(item, 1);
    }
  }
  return out;
}

// Keys copied into one buffer, so the batch can run without the GIL (and without the objects).
struct KeyBatch {
  std::string bytes;
  std::vector<std::string_view> views;

  explicit KeyBatch(const py::object& keys) {
    if (py::isinstance<py::str>(keys) || py::isinstance<py::bytes>(keys)) {
      throw py::type_error("keys must be an iterable of str or bytes, not a single key");
    }
    std::vector<std::size_t> ends;
    if (py::hasattr(keys, "__len__")) ends.reserve(py::len(keys));
    for (py::handle k : keys) {
      bytes += bytes_of(k, "a key");
      ends.push_back(bytes.size());
    }
    views.reserve(ends.size());
    std::size_t begin = 0;
    for (std::size_t end : ends) {
      views.emplace_back(bytes.data() + begin, end - begin);
      begin = end;
    }
  }
};

class PyRouter {
 public:
  PyRouter(const py::object& nodes, chash::RoutingSpec spec) : spec_(std::move(spec)) {
    NodeList list = parse_nodes(nodes);
    if (spec_.preset.empty() && spec_.algorithm.empty() && !spec_.ring) spec_.algorithm = "ring";
    router_ = std::make_shared<const chash::Router>(chash::Router::build(spec_, list.nodes));
    names_ = std::move(list.names);
  }

  static PyRouter make(const py::object& nodes, const py::object& algorithm,
                       const py::object& preset, const py::object& hash, const py::object& hash_tag,
                       const py::object& vnodes, const py::object& table_size,
                       const py::object& probes, const py::object& point_format,
                       const py::object& settings, const py::object& ring,
                       const py::object& replicas) {
    chash::RoutingSpec spec;
    spec.algorithm = opt_str(algorithm, "algorithm").value_or("");
    spec.preset = opt_str(preset, "preset").value_or("");
    spec.ring = opt_str(ring, "ring");
    if (!spec.algorithm.empty() + !spec.preset.empty() + spec.ring.has_value() > 1) {
      throw py::value_error("give one of algorithm, preset and ring");
    }
    spec.hash = opt_str(hash, "hash");
    spec.hash_tag = opt_str(hash_tag, "hash_tag");
    spec.vnodes = opt_uint<std::uint32_t>(vnodes, "vnodes");
    spec.table_size = opt_uint<std::uint64_t>(table_size, "table_size");
    spec.probes = opt_uint<std::uint32_t>(probes, "probes");
    spec.point_format = opt_str(point_format, "point_format");
    if (!settings.is_none()) {
      py::object items = py::isinstance<py::dict>(settings) ? settings.attr("items")() : settings;
      if (!py::isinstance<py::iterable>(items)) {
        throw py::type_error("settings must be a dict or (name, value) pairs of str");
      }
      for (py::handle kv : items) {
        if (!py::isinstance<py::tuple>(kv) || py::len(kv) != 2 ||
            !py::isinstance<py::str>(kv[py::int_(0)]) ||
            !py::isinstance<py::str>(kv[py::int_(1)])) {
          throw py::type_error("settings must be a dict or (name, value) pairs of str");
        }
        spec.preset_settings.emplace_back(kv[py::int_(0)].cast<std::string>(),
                                          kv[py::int_(1)].cast<std::string>());
      }
    }
    PyRouter r(nodes, std::move(spec));
    if (const auto n = opt_uint<std::uint32_t>(replicas, "replicas")) {
      if (*n == 0) throw py::value_error("replicas must be >= 1");
      r.replicas_ = *n;
    }
    return r;
  }

  py::object name_of(chash::NodeId id) const {
    if (id == chash::kNoNode || id >= names_.size()) return py::none();
    return names_[id];
  }

  py::object route(py::handle key) const {
    const std::string_view k = bytes_of(key, "a key");
    return name_of(down_.empty() ? router_->route(k) : router_->route(k, down_));
  }

  py::list route_n(py::handle key, const py::object& n_arg) const {
    long n = 0;
    if (n_arg.is_none()) {
      n = static_cast<long>(replicas_);
    } else {
      if (!py::isinstance<py::int_>(n_arg) || py::isinstance<py::bool_>(n_arg)) {
        throw py::type_error("n must be an int");
      }
      n = n_arg.cast<long>();
    }
    if (n < 0) throw py::value_error("n must be >= 0");
    const std::string_view k = bytes_of(key, "a key");
    std::vector<chash::NodeId> ids(std::min<std::size_t>(n, router_->node_count()));
    const chash::DownSet& down = down_;
    const std::size_t got =
        down.empty()
            ? router_->route_n(k, ids)
            : router_->route_n(k, ids, [&down](chash::NodeId id) { return !down.contains(id); });
    py::list out;
    for (std::size_t i = 0; i < got; ++i) out.append(name_of(ids[i]));
    return out;
  }

  std::vector<chash::NodeId> route_ids(const py::object& keys) const {
    KeyBatch batch(keys);
    const chash::DownSet down = down_;  // a copy: mark_down may run while the GIL is released
    std::shared_ptr<const chash::Router> router = router_;
    std::vector<chash::NodeId> ids(batch.views.size());
    {
      py::gil_scoped_release release;
      router->route_batch(batch.views, ids);
      // A down node's keys walk on to their next choice that is up, as route(key, down) does.
      for (std::size_t i = 0; i < ids.size() && !down.empty(); ++i) {
        if (ids[i] != chash::kNoNode && down.contains(ids[i])) {
          ids[i] = router->route(batch.views[i], down);
        }
      }
    }
    return ids;
  }

  py::list route_many(const py::object& keys) const {
    const std::vector<chash::NodeId> ids = route_ids(keys);
    py::list out(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      py::object name = name_of(ids[i]);
      PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), name.release().ptr());
    }
    return out;
  }

  py::dict distribution(const py::object& keys) const {
    const std::vector<chash::NodeId> ids = route_ids(keys);
    std::vector<std::size_t> counts(names_.size(), 0);
    std::size_t unrouted = 0;
    for (chash::NodeId id : ids) {
      if (id < counts.size()) ++counts[id];
      else ++unrouted;
    }
    py::dict out;
    for (std::size_t i = 0; i < names_.size(); ++i) out[names_[i]] = counts[i];
    if (unrouted != 0) out[py::none()] = unrouted;
    return out;
  }

  chash::NodeId id_of(py::handle name) const {
    const chash::NodeId id = router_->find(bytes_of(name, "a node name"));
    if (id == chash::kNoNode) {
      throw py::value_error("unknown node " + std::string(py::repr(name)));
    }
    return id;
  }
  void mark_down(py::handle name) { down_.set(id_of(name), true); }
  void mark_up(py::handle name) { down_.set(id_of(name), false); }
  bool is_down(py::handle name) const { return down_.contains(id_of(name)); }

  // A new router with `name` added (or removed); the down set carries over by name.
  PyRouter with_nodes(py::list nodes) const {
    PyRouter next(nodes, spec_);
    next.replicas_ = replicas_;
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (!down_.contains(static_cast<chash::NodeId>(i))) continue;
      const chash::NodeId id = next.router_->find(router_->name(static_cast<chash::NodeId>(i)));
      if (id != chash::kNoNode) next.down_.set(id, true);
    }
    return next;
  }
  PyRouter add(py::handle name, py::handle weight) const {
    bytes_of(name, "a node name");
    py::list nodes = node_pairs();
    nodes.append(py::make_tuple(name, weight));
    return with_nodes(nodes);
  }
  PyRouter remove(py::handle name) const {
    const chash::NodeId gone = id_of(name);
    py::list nodes;
    const auto all = router_->nodes();
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i != gone) nodes.append(py::make_tuple(names_[i], all[i].weight));
    }
    return with_nodes(nodes);
  }

  py::list node_pairs() const {
    py::list out;
    const auto all = router_->nodes();
    for (std::size_t i = 0; i < all.size(); ++i)
      out.append(py::make_tuple(names_[i], all[i].weight));
    return out;
  }
  py::list nodes() const {
    py::list out;
    for (const auto& n : names_) out.append(n);
    return out;
  }
  py::dict weights() const {
    py::dict out;
    const auto all = router_->nodes();
    for (std::size_t i = 0; i < all.size(); ++i) out[names_[i]] = all[i].weight;
    return out;
  }
  py::list down() const {
    py::list out;
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (down_.contains(static_cast<chash::NodeId>(i))) out.append(names_[i]);
    }
    return out;
  }
  const std::string& describe() const { return router_->describe(); }
  std::size_t size() const { return names_.size(); }
  std::uint32_t replicas() const noexcept { return replicas_; }

 private:
  chash::RoutingSpec spec_;
  std::shared_ptr<const chash::Router> router_;
  std::vector<py::object> names_;
  chash::DownSet down_;
  std::uint32_t replicas_ = 1;  // route_n's n when it is not given
};

}  // namespace

PYBIND11_MODULE(_chash, m) {
  m.doc() = "chash: consistent hashing with byte-exact peer presets (the C++ libchash).";

  // chash::Error carries a message a person can act on; Python callers see it as ValueError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chash::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  py::class_<PyRouter>(m, "Router")
      .def(py::init(&PyRouter::make), py::arg("nodes"), py::kw_only(),
           py::arg("algorithm") = py::none(), py::arg("preset") = py::none(),
           py::arg("hash") = py::none(), py::arg("hash_tag") = py::none(),
           py::arg("vnodes") = py::none(), py::arg("table_size") = py::none(),
           py::arg("probes") = py::none(), py::arg("point_format") = py::none(),
           py::arg("settings") = py::none(), py::arg("ring") = py::none(),
           py::arg("replicas") = py::none(),
           "Router(nodes, *, algorithm=None, preset=None, hash=None, hash_tag=None, vnodes=None,\n"
           "       table_size=None, probes=None, point_format=None, settings=None, ring=None,\n"
           "       replicas=None)\n\n"
           "nodes: a list of names, a list of (name, weight) or a dict name -> weight (names str\n"
           "or bytes). algorithm: a native table (chash.algorithms(), default 'ring'); preset: a\n"
           "peer's exact mapping (chash.presets()); ring: a hand-written ring as a ring spec\n"
           "(docs/CLI.md, e.g. 'points={name}_v{i}; vnodes=150; hash=md5-int32'; vnodes\n"
           "overrides its count). replicas: route_n's n when not given (default 1).\n"
           "settings: the peer's own settings for a preset,\n"
           "e.g. {'distribution': 'CONSISTENT_KETAMA_SPY'}. Raises ValueError with chash's "
           "message.\n\n"
           ">>> r = chash.Router({'cache-1': 1, 'cache-2': 2}, preset='twemproxy', hash_tag='{}')\n"
           ">>> r.route('{user:42}.profile') == r.route('{user:42}.cart')\nTrue")
      .def("route", &PyRouter::route, py::arg("key"),
           "The node that owns key (str as UTF-8, or bytes), skipping nodes marked down; None\n"
           "when no node can take it (nginx-ip-hash given a key that is not an address).")
      .def("route_n", &PyRouter::route_n, py::arg("key"), py::arg("n") = py::none(),
           "Up to n distinct nodes in the key's preference order (replicas), route(key) first,\n"
           "skipping nodes marked down; n defaults to the Router's replicas.")
      .def("route_many", &PyRouter::route_many, py::arg("keys"),
           "[route(k) for k in keys] in one call: the keys are copied, the GIL is released and\n"
           "chash's batch lookup runs.")
      .def("distribution", &PyRouter::distribution, py::arg("keys"),
           "A dict node -> how many of keys it owns (every node, zeros included).")
      .def("mark_down", &PyRouter::mark_down, py::arg("name"),
           "Failover: the node's keys move, each to its own next choice; no other key moves.")
      .def("mark_up", &PyRouter::mark_up, py::arg("name"),
           "Undo mark_down: exactly the keys that moved away come back.")
      .def("is_down", &PyRouter::is_down, py::arg("name"))
      .def("add", &PyRouter::add, py::arg("name"), py::arg("weight") = 1,
           "A new Router with the node added last (this one is unchanged; down nodes carry over).")
      .def("remove", &PyRouter::remove, py::arg("name"),
           "A new Router without the node (this one is unchanged; down nodes carry over).")
      .def_property_readonly("nodes", &PyRouter::nodes)
      .def_property_readonly("weights", &PyRouter::weights)
      .def_property_readonly("down", &PyRouter::down)
      .def_property_readonly("replicas", &PyRouter::replicas)
      .def_property_readonly("description", &PyRouter::describe)
      .def("__len__", &PyRouter::size)
      .def("__repr__", [](const PyRouter& r) {
        return "<chash.Router " + r.describe() + ", " + std::to_string(r.size()) + " nodes>";
      });

  m.def(
      "presets",
      [] {  // name -> the peer (and version) whose mapping it reproduces
        py::dict out;
        for (const auto& p : chash::preset_list())
          out[py::str(std::string(p.name))] = std::string(p.peer);
        return out;
      },
      "A dict preset name -> the peer (and version) whose mapping it reproduces byte for byte.");
  m.def(
      "ring_spec",
      [](const std::string& preset, const py::object& vnodes) -> py::object {
        const auto spec =
            chash::preset_ring_spec(preset, opt_uint<std::uint32_t>(vnodes, "vnodes"));
        if (!spec) return py::none();
        return py::str(chash::to_string(*spec));
      },
      py::arg("preset"), py::arg("vnodes") = py::none(),
      "The ring spec a preset routes with (the articles' rings: guava-treemap,\n"
      "java-hashcode-ring, python-md5-ring, murmur64a-treemap), or None for any other preset.\n\n"
      ">>> chash.ring_spec('python-md5-ring', vnodes=3)[:36]\n'points={name}_v{i}; from=0; "
      "vnodes=3'");
  m.def(
      "canonical_ring_spec",
      [](const std::string& text) { return chash::to_string(chash::parse_ring_spec(text)); },
      py::arg("spec"),
      "A ring spec with every field spelled out, in the grammar's order; ValueError naming the\n"
      "field when it does not parse.");
  m.def(
      "address_presets",
      [] {
        py::list out;
        for (const auto& p : chash::preset_list()) {
          if (p.keys_are_addresses) out.append(std::string(p.name));
        }
        return out;
      },
      "The presets whose keys are client addresses (nginx-ip-hash).");
  m.def(
      "algorithms",
      [] {
        py::list out;
        for (auto a : chash::kAllAlgorithms) out.append(std::string(chash::algorithm_name(a)));
        return out;
      },
      "The native algorithms Router(algorithm=...) takes.");
  m.def(
      "hashes",
      [] {
        py::list out;
        for (auto h : chash::kAllKeyHashes) out.append(std::string(chash::key_hash_name(h)));
        return out;
      },
      "The key hash names Router(hash=...) and chash.hash() take.");
  m.def(
      "slot", [](py::handle key) { return chash::hash::redis_slot(bytes_of(key, "a key")); },
      py::arg("key"),
      "Redis Cluster's slot of key (CRC16/XMODEM of its {hash tag} or whole key, mod 16384).\n"
      ">>> chash.slot('123456789')\n12739");
  m.def(
      "hash",
      [](const std::string& name, py::handle key) {
        return chash::hash_key(chash::parse_key_hash(name), bytes_of(key, "a key"));
      },
      py::arg("name"), py::arg("key"),
      "The key hash called name (chash.hashes()) of key, as an int.\n"
      ">>> chash.hash('crc16', '123456789')\n12739");
}
