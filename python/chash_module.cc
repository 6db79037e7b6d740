// SPDX-License-Identifier: Apache-2.0
// chash._chash — the Python binding of chash::Router (pybind11). The package `chash`
// (python/chash/__init__.py) re-exports it; docs/PYTHON.md is the API.
//
// Keys are str (hashed as their UTF-8 bytes, as uhashring and hash_ring hash them) or bytes.
// Node names are kept as the objects the caller gave, so route() answers with the caller's own
// str or bytes. A Router is immutable (a shared chash::Router); only its down set changes, and
// route_many copies that set and holds its keys before it releases the GIL, so other threads may
// mark nodes down or build new routers while a batch runs.
//
// The two hot calls are written against the CPython API directly (bench/python/bench.py,
// docs/BENCHMARKS.md): route() is a METH_FASTCALL method descriptor installed on the class, not a
// pybind11 binding, because pybind11's dispatch (argument loaders, overload loop, the instance's
// value lookup) costs more than the lookup it wraps; route_many() reads the keys' bytes in place
// (str's own UTF-8, bytes' buffer; only a caller's list routed without the GIL is copied, into
// one buffer: see KeyBatch) and answers with the Router's name objects, not new strings.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
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
#include "chash/version.h"

namespace py = pybind11;

namespace {

// The bytes of a key or node name without a copy: str as UTF-8 (a compact ASCII str is its own
// UTF-8; any other str caches its UTF-8 form in the object), bytes as they are. The pointer lives
// as long as `obj`. nullptr with a Python error set: TypeError naming `what` for another type,
// UnicodeEncodeError (a ValueError) for a str with lone surrogates.
inline const char* key_data(PyObject* obj, Py_ssize_t* size, const char* what) noexcept {
  if (PyUnicode_Check(obj)) {
    if (PyUnicode_IS_COMPACT_ASCII(obj)) [[likely]] {
      *size = PyUnicode_GET_LENGTH(obj);
      return static_cast<const char*>(PyUnicode_DATA(obj));
    }
    return PyUnicode_AsUTF8AndSize(obj, size);
  }
  if (PyBytes_Check(obj)) {
    *size = PyBytes_GET_SIZE(obj);
    return PyBytes_AS_STRING(obj);
  }
  PyErr_Format(PyExc_TypeError, "%s must be str or bytes, not %.200s", what, Py_TYPE(obj)->tp_name);
  return nullptr;
}

// key_data for pybind11 code: the error as a C++ exception.
std::string_view bytes_of(py::handle obj, const char* what) {
  Py_ssize_t size = 0;
  const char* data = key_data(obj.ptr(), &size, what);
  if (data == nullptr) throw py::error_already_set();
  return {data, static_cast<std::size_t>(size)};
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

// Batches shorter than this keep the GIL: releasing and taking it back costs about as much as
// routing this many keys, and another thread holding it can keep this one waiting for a switch
// interval (5 ms) to get it back.
constexpr Py_ssize_t kReleaseGilFrom = 512;

// A key batch's working memory: views of the keys' bytes, the bytes themselves when they have
// to be copied, and the answers. Kept per thread between calls (up to kKeepKeys keys and
// kKeepBytes bytes) so a steady stream of batches does not pay for fresh pages each time; a call
// takes it out of the thread's slot and puts it back when done, so a call re-entered from a
// destructor gets its own.
struct BatchScratch {
  std::vector<std::string_view> views;
  std::vector<chash::NodeId> ids;
  std::string bytes;
};
constexpr std::size_t kKeepKeys = std::size_t{1} << 18;
constexpr std::size_t kKeepBytes = std::size_t{1} << 23;
thread_local BatchScratch t_scratch;

// The keys of one route_many/distribution call as views of their bytes. The views point into the
// key objects themselves (str's UTF-8, bytes' buffer) when those stay alive for the whole batch:
// a tuple (immutable; held), a list of our own (any other iterable, drawn into it), or the
// caller's list when the batch keeps the GIL. A caller's list routed without the GIL may be
// changed by another thread meanwhile, which could free a key: its bytes are copied (one
// sequential copy is cheaper than taking and dropping a reference on every key object).
class KeyBatch {
 public:
  explicit KeyBatch(py::handle keys) : scratch_(std::move(t_scratch)) {
    PyObject* k = keys.ptr();
    if (PyUnicode_Check(k) || PyBytes_Check(k)) {
      throw py::type_error("keys must be an iterable of str or bytes, not a single key");
    }
    PyObject* const* items = nullptr;
    Py_ssize_t n = 0;
    bool copy = false;
    if (PyTuple_CheckExact(k)) {
      owner_ = py::reinterpret_borrow<py::object>(keys);
      items = &PyTuple_GET_ITEM(k, 0);
      n = PyTuple_GET_SIZE(k);
    } else if (PyList_CheckExact(k)) {
      items = &PyList_GET_ITEM(k, 0);
      n = PyList_GET_SIZE(k);
      copy = n >= kReleaseGilFrom;
    } else {
      owner_ = py::reinterpret_steal<py::object>(PySequence_List(k));
      if (!owner_) throw py::error_already_set();
      items = &PyList_GET_ITEM(owner_.ptr(), 0);
      n = PyList_GET_SIZE(owner_.ptr());
    }
    const auto count = static_cast<std::size_t>(n);
    scratch_.views.resize(count);
    scratch_.ids.resize(count);
    std::string_view* views = scratch_.views.data();
    if (!copy) {
      for (std::size_t i = 0; i < count; ++i) views[i] = view_of(items[i]);
      return;
    }
    // Copy: each view first holds its key's end offset in `bytes` (the buffer may move while it
    // grows), then the views are pointed into the final buffer.
    std::string& bytes = scratch_.bytes;
    if (bytes.size() < bytes.capacity()) bytes.resize(bytes.capacity());
    std::size_t used = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::string_view v = view_of(items[i]);
      if (bytes.size() - used < v.size()) bytes.resize(std::max(2 * bytes.size(), used + v.size()));
      copy_key(bytes.data() + used, v);
      used += v.size();
      views[i] = {nullptr, used};
    }
    std::size_t begin = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t end = views[i].size();
      views[i] = {bytes.data() + begin, end - begin};
      begin = end;
    }
  }
  KeyBatch(const KeyBatch&) = delete;
  KeyBatch& operator=(const KeyBatch&) = delete;
  ~KeyBatch() {
    if (t_scratch.views.capacity() != 0) return;  // a re-entered call put its own back
    if (scratch_.views.capacity() > kKeepKeys) {
      scratch_.views = {};
      scratch_.ids = {};
    }
    if (scratch_.bytes.capacity() > kKeepBytes) scratch_.bytes = {};
    t_scratch = std::move(scratch_);
  }

  std::span<const std::string_view> views() const noexcept { return scratch_.views; }
  std::span<chash::NodeId> ids() noexcept { return scratch_.ids; }
  std::size_t size() const noexcept { return scratch_.views.size(); }

 private:
  // memcpy for the short keys a batch is made of, inline: a call to the library's memmove per
  // key costs more than the copy. Reads and writes exactly v.size() bytes.
  static void copy_key(char* out, std::string_view v) noexcept {
    const char* in = v.data();
    const std::size_t n = v.size();
    if (n >= 16 && n <= 32) {
      std::memcpy(out, in, 16);
      std::memcpy(out + n - 16, in + n - 16, 16);
    } else if (n >= 8 && n < 16) {
      std::memcpy(out, in, 8);
      std::memcpy(out + n - 8, in + n - 8, 8);
    } else if (n > 32) {
      std::memcpy(out, in, n);
    } else if (n >= 4) {
      std::memcpy(out, in, 4);
      std::memcpy(out + n - 4, in + n - 4, 4);
    } else if (n != 0) {
      out[0] = in[0];
      out[n / 2] = in[n / 2];
      out[n - 1] = in[n - 1];
    }
  }

  static std::string_view view_of(PyObject* key) {
    Py_ssize_t size = 0;
    const char* data = key_data(key, &size, "a key");
    if (data == nullptr) throw py::error_already_set();
    return {data, static_cast<std::size_t>(size)};
  }

  BatchScratch scratch_;
  py::object owner_;
};

class PyRouter {
 public:
  PyRouter(const py::object& nodes, chash::RoutingSpec spec) : spec_(std::move(spec)) {
    NodeList list = parse_nodes(nodes);
    if (spec_.preset.empty() && spec_.algorithm.empty() && !spec_.ring) spec_.algorithm = "ring";
    router_ = std::make_shared<const chash::Router>(chash::Router::build(spec_, list.nodes));
    names_ = std::move(list.names);
    for (const auto& n : names_) name_ptrs_.push_back(n.ptr());
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

  // Routes the batch: without the GIL from kReleaseGilFrom keys on (the router and the down set
  // are copies, so mark_down or a new Router elsewhere does not touch this batch).
  void route_batch(KeyBatch& batch) const {
    const std::shared_ptr<const chash::Router> router = router_;
    const std::span<const std::string_view> views = batch.views();
    const std::span<chash::NodeId> ids = batch.ids();
    auto run = [&router, views, ids](const chash::DownSet& down) noexcept {
      router->route_batch(views, ids);
      // A down node's keys walk on to their next choice that is up, as route(key, down) does.
      if (down.empty()) return;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] != chash::kNoNode && down.contains(ids[i]))
          ids[i] = router->route(views[i], down);
      }
    };
    if (batch.size() < static_cast<std::size_t>(kReleaseGilFrom)) {
      run(down_);
      return;
    }
    const chash::DownSet down = down_;
    py::gil_scoped_release release;
    run(down);
  }

  // as_str: every key that is not a str is routed as str(key) (uhashring's rule: b"k" is
  // "b'k'", 42 is "42"). The str objects are made here, once, in a tuple the batch holds; a
  // batch of str keys (the usual case) is routed as it is, with no new object per key.
  py::list route_many(py::handle keys, bool as_str) const {
    if (!as_str) return route_ids(keys);
    PyObject* k = keys.ptr();
    if (PyUnicode_Check(k) || PyBytes_Check(k)) {
      throw py::type_error("keys must be an iterable, not a single key");
    }
    py::object seq = (PyList_CheckExact(k) || PyTuple_CheckExact(k))
                         ? py::reinterpret_borrow<py::object>(keys)
                         : py::reinterpret_steal<py::object>(PySequence_Tuple(k));
    if (!seq) throw py::error_already_set();
    PyObject* const* items = PyList_CheckExact(seq.ptr()) ? &PyList_GET_ITEM(seq.ptr(), 0)
                                                          : &PyTuple_GET_ITEM(seq.ptr(), 0);
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    Py_ssize_t first = 0;
    while (first < n && PyUnicode_CheckExact(items[first])) ++first;
    if (first == n) return route_ids(seq);
    py::tuple converted(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = items[i];
      PyObject* text = PyUnicode_CheckExact(item) ? (Py_INCREF(item), item) : PyObject_Str(item);
      if (text == nullptr) throw py::error_already_set();
      PyTuple_SET_ITEM(converted.ptr(), i, text);
    }
    return route_ids(converted);
  }

  py::list route_ids(py::handle keys) const {
    KeyBatch batch(keys);
    route_batch(batch);
    // The answers are the Router's own name objects (one reference each), not new strings.
    const std::span<chash::NodeId> ids = batch.ids();
    PyObject* out = PyList_New(static_cast<Py_ssize_t>(ids.size()));
    if (out == nullptr) throw py::error_already_set();
    PyObject* const* names = name_ptrs_.data();
    const std::size_t count = name_ptrs_.size();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      PyObject* name = ids[i] < count ? names[ids[i]] : Py_None;
      Py_INCREF(name);
      PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), name);
    }
    return py::reinterpret_steal<py::list>(out);
  }

  // route() for the fast entry point below: a new reference, or nullptr with a Python error set.
  PyObject* route_raw(PyObject* key) const noexcept {
    Py_ssize_t size = 0;
    const char* data = key_data(key, &size, "a key");
    if (data == nullptr) return nullptr;
    const std::string_view k(data, static_cast<std::size_t>(size));
    const chash::NodeId id = down_.empty() ? router_->route(k) : router_->route(k, down_);
    PyObject* name = id < name_ptrs_.size() ? name_ptrs_[id] : Py_None;
    Py_INCREF(name);
    return name;
  }

  py::dict distribution(py::handle keys) const {
    KeyBatch batch(keys);
    route_batch(batch);
    const std::span<chash::NodeId> ids = batch.ids();
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
  std::vector<PyObject*> name_ptrs_;  // names_' objects (borrowed from names_), for the hot paths
  chash::DownSet down_;
  std::uint32_t replicas_ = 1;  // route_n's n when it is not given
};

// Router.route(key): the hottest call, so it skips pybind11. A METH_FASTCALL method descriptor
// on the class is what CPython's own builtin methods are: `router.route(key)` loads it without a
// bound-method object (LOAD_METHOD) and calls route_fast with the instance and the key in place.
// The descriptor checks that self is a Router (or a subclass) before it calls in; the C++ object
// is the pybind11 instance's value. The same errors as the other entry points (TypeError for a
// key that is not str or bytes, UnicodeEncodeError for lone surrogates); `key=` is accepted.
PyObject* route_fast(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames) noexcept {
  PyObject* key = nullptr;
  if (kwnames == nullptr && nargs == 1) [[likely]] {
    key = args[0];
  } else {
    const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs + nkw != 1) {
      PyErr_Format(PyExc_TypeError, "route() takes exactly one argument (key), %zd given",
                   nargs + nkw);
      return nullptr;
    }
    if (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "key") != 0) {
      PyErr_Format(PyExc_TypeError, "route() got an unexpected keyword argument '%U'",
                   PyTuple_GET_ITEM(kwnames, 0));
      return nullptr;
    }
    key = args[0];
  }
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  const auto* router = inst->get_value_and_holder(nullptr, false).value_ptr<PyRouter>();
  if (router == nullptr) {  // a subclass whose __init__ did not call Router.__init__
    PyErr_SetString(PyExc_TypeError, "route() on a Router that was not initialised");
    return nullptr;
  }
  return router->route_raw(key);
}

constexpr const char* kRouteDoc =
    "route($self, key)\n--\n\n"
    "The node that owns key (str as UTF-8, or bytes), skipping nodes marked down; None\n"
    "when no node can take it (nginx-ip-hash given a key that is not an address).";

PyMethodDef route_def = {"route",
                         reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(route_fast)),
                         METH_FASTCALL | METH_KEYWORDS, kRouteDoc};

}  // namespace

PYBIND11_MODULE(_chash, m) {
  m.doc() = "chash: consistent hashing with byte-exact peer presets (the C++ libchash).";
  // The library's version (CMakeLists.txt project()), which the wheel's metadata also carries.
  m.attr("__version__") = CHASH_VERSION_STRING;

  // chash::Error carries a message a person can act on; Python callers see it as ValueError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chash::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  py::class_<PyRouter> router_class(m, "Router");
  router_class
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
      .def("route_n", &PyRouter::route_n, py::arg("key"), py::arg("n") = py::none(),
           "Up to n distinct nodes in the key's preference order (replicas), route(key) first,\n"
           "skipping nodes marked down; n defaults to the Router's replicas.")
      .def("route_many", &PyRouter::route_many, py::arg("keys"), py::kw_only(),
           py::arg("as_str") = false,
           "[route(k) for k in keys] in one call (keys: any iterable of str or bytes): chash's\n"
           "batch lookup runs on the keys' own bytes, without the GIL from 512 keys on.\n"
           "as_str=True: any other key is routed as str(key), as [route(str(k)) for k in keys].")
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
  {
    PyObject* descr =
        PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(router_class.ptr()), &route_def);
    if (descr == nullptr) throw py::error_already_set();
    router_class.attr("route") = py::reinterpret_steal<py::object>(descr);
  }

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
