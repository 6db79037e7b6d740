// SPDX-License-Identifier: Apache-2.0
#include "chash/cluster.h"

#include <algorithm>

#include "chash/error.h"
#include "placement/internal.h"

namespace chash {

// ---- Snapshot ----------------------------------------------------------------------------------

Snapshot::Snapshot(Router router, std::vector<bool> removed, DownSet down, std::uint64_t version)
    : router_(std::move(router)),
      removed_(std::move(removed)),
      down_(std::move(down)),
      version_(version) {}

NodeId Snapshot::find(std::string_view name) const noexcept {
  const auto nodes = router_.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!removed_[i] && nodes[i].name == name) return static_cast<NodeId>(i);
  }
  return kNoNode;
}

namespace {
constexpr std::string_view kTombstonePrefix{"\0removed#", 9};
std::string tombstone_name(NodeId id) { return std::string(kTombstonePrefix) + std::to_string(id); }
}  // namespace

// ---- Cluster -----------------------------------------------------------------------------------

Cluster::Cluster(Algorithm algorithm, std::vector<Node> nodes, TableOptions options,
                 KeyPolicy key_policy)
    : algorithm_(algorithm), options_(std::move(options)), key_policy_(key_policy) {
  std::vector<bool> removed(nodes.size(), false);
  DownSet down(nodes.size());
  rebuild(std::move(nodes), std::move(removed), {}, std::move(down));
}

Cluster::Cluster(const RoutingSpec& spec, std::vector<Node> nodes) {
  if (!spec.preset.empty()) {
    throw Error(ErrorCode::kUnsupported,
                "membership changes keep tombstones, which a preset's peer does not have; for "
                "preset " +
                    spec.preset + " build a new Router from the changed node list");
  }
  // Router::build checks the spec; its table options and key policy are then ours.
  const Router checked = Router::build(spec, nodes);
  algorithm_ = algorithm_of(*checked.table());
  options_ = Router::table_options(spec, algorithm_);
  key_policy_ = checked.key_policy();
  balance_factor_ = checked.balance_factor();
  std::vector<bool> removed(nodes.size(), false);
  DownSet down(nodes.size());
  rebuild(std::move(nodes), std::move(removed), {}, std::move(down));
}

NodeId Cluster::require(std::string_view name) const {
  const NodeId id = snapshot_->find(name);
  if (id == kNoNode) {
    throw Error(ErrorCode::kUnknownNode, "no node named " + internal::quote_name(name));
  }
  return id;
}

void Cluster::rebuild(std::vector<Node> nodes, std::vector<bool> removed,
                      std::vector<NodeId> removal_order, DownSet down) {
  TableOptions options = options_;
  options.memento.removal_order = removal_order;
  if (algorithm_ == Algorithm::kSlots && snapshot_) {
    options.slots.previous = std::make_shared<SlotTable>(std::get<SlotTable>(snapshot_->table()));
  }
  // Throws before anything changes.
  Router router = Router::build(algorithm_, nodes, options, key_policy_, balance_factor_);
  removal_order_ = std::move(removal_order);
  snapshot_ = std::make_shared<const Snapshot>(std::move(router), std::move(removed),
                                               std::move(down), ++version_);
}

void Cluster::publish_state(DownSet down) {
  // Same router (its table is shared), new down set.
  snapshot_ = std::make_shared<const Snapshot>(snapshot_->router(), snapshot_->removed(),
                                               std::move(down), ++version_);
}

NodeId Cluster::add(Node node) {
  if (node.name.starts_with(kTombstonePrefix)) {
    throw Error(ErrorCode::kInvalidArgument, "node names starting with \\0removed# are reserved");
  }
  if (snapshot_->find(node.name) != kNoNode) {
    throw Error(ErrorCode::kDuplicateNode,
                "node " + internal::quote_name(node.name) + " is already in the cluster");
  }
  std::vector<Node> nodes(snapshot_->nodes().begin(), snapshot_->nodes().end());
  std::vector<bool> removed = snapshot_->removed();
  std::vector<NodeId> order = removal_order_;
  DownSet down = snapshot_->down();
  NodeId id;
  if (!order.empty()) {
    // Reuse the most recently removed position (memento restores in this order).
    id = order.back();
    order.pop_back();
    nodes[id] = std::move(node);
    removed[id] = false;
  } else {
    id = static_cast<NodeId>(nodes.size());
    nodes.push_back(std::move(node));
    removed.push_back(false);
  }
  down.set(id, false);
  rebuild(std::move(nodes), std::move(removed), std::move(order), std::move(down));
  return id;
}

void Cluster::remove(std::string_view name) {
  const NodeId id = require(name);
  std::vector<Node> nodes(snapshot_->nodes().begin(), snapshot_->nodes().end());
  std::vector<bool> removed = snapshot_->removed();
  // Keep a tombstone under a reserved name, so the name itself can be added again.
  nodes[id].name = tombstone_name(id);
  nodes[id].weight = 0;
  removed[id] = true;
  std::vector<NodeId> order = removal_order_;
  order.push_back(id);
  DownSet down = snapshot_->down();
  down.set(id, false);
  rebuild(std::move(nodes), std::move(removed), std::move(order), std::move(down));
}

void Cluster::set_weight(std::string_view name, std::uint32_t weight) {
  const NodeId id = require(name);
  std::vector<Node> nodes(snapshot_->nodes().begin(), snapshot_->nodes().end());
  std::vector<bool> removed = snapshot_->removed();
  const bool was_drained = nodes[id].weight == 0;
  nodes[id].weight = weight;
  std::vector<NodeId> order = removal_order_;
  if (weight == 0 && !was_drained) order.push_back(id);
  if (weight != 0 && was_drained)
    order.erase(std::remove(order.begin(), order.end(), id), order.end());
  rebuild(std::move(nodes), std::move(removed), std::move(order), snapshot_->down());
}

void Cluster::mark_down(std::string_view name) {
  const NodeId id = require(name);
  DownSet down = snapshot_->down();
  down.set(id, true);
  publish_state(std::move(down));
}

void Cluster::mark_up(std::string_view name) {
  const NodeId id = require(name);
  DownSet down = snapshot_->down();
  down.set(id, false);
  publish_state(std::move(down));
}

// ---- SharedCluster ------------------------------------------------------------------------------------

// One hazard pointer per Reader.
struct internal::ReaderSlot {
  std::atomic<const Snapshot*> hazard{nullptr};
  bool in_use = false;
};

SharedCluster::SharedCluster(Cluster cluster)
    : cluster_(std::move(cluster)), current_(cluster_.snapshot()), current_ptr_(current_.get()) {}

SharedCluster::~SharedCluster() = default;

std::shared_ptr<const Snapshot> SharedCluster::snapshot() const {
  std::lock_guard<std::mutex> lock(write_mu_);
  return current_;
}

void SharedCluster::publish() {
  retired_.push_back(std::move(current_));
  current_ = cluster_.snapshot();
  current_ptr_.store(current_.get(), std::memory_order_seq_cst);
  // Free every retired snapshot no reader has announced. A reader announces before it
  // re-checks current_ptr_, so one that missed this store finds the new pointer and retries.
  std::vector<const Snapshot*> hazards;
  for (const auto& slot : slots_) {
    if (const Snapshot* h = slot->hazard.load(std::memory_order_seq_cst)) hazards.push_back(h);
  }
  std::erase_if(retired_, [&](const std::shared_ptr<const Snapshot>& s) {
    return std::find(hazards.begin(), hazards.end(), s.get()) == hazards.end();
  });
}

template <class F>
auto SharedCluster::mutate(F&& f) {
  std::lock_guard<std::mutex> lock(write_mu_);
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    publish();
  } else {
    auto r = f();
    publish();
    return r;
  }
}

NodeId SharedCluster::add(Node node) {
  return mutate([&] { return cluster_.add(std::move(node)); });
}
void SharedCluster::remove(std::string_view name) {
  mutate([&] { cluster_.remove(name); });
}
void SharedCluster::set_weight(std::string_view name, std::uint32_t weight) {
  mutate([&] { cluster_.set_weight(name, weight); });
}
void SharedCluster::mark_down(std::string_view name) {
  mutate([&] { cluster_.mark_down(name); });
}
void SharedCluster::mark_up(std::string_view name) {
  mutate([&] { cluster_.mark_up(name); });
}

SharedCluster::Reader::Reader(const SharedCluster& shared) : shared_(&shared), slot_(nullptr) {
  std::lock_guard<std::mutex> lock(shared.write_mu_);
  for (auto& s : shared.slots_) {
    if (!s->in_use) {
      slot_ = s.get();
      break;
    }
  }
  if (slot_ == nullptr) {
    shared.slots_.push_back(std::make_unique<internal::ReaderSlot>());
    slot_ = shared.slots_.back().get();
  }
  slot_->in_use = true;
}

SharedCluster::Reader::~Reader() {
  std::lock_guard<std::mutex> lock(shared_->write_mu_);
  slot_->hazard.store(nullptr, std::memory_order_release);
  slot_->in_use = false;
}

const Snapshot& SharedCluster::Reader::protect(const Snapshot* p) noexcept {
  for (;;) {
    slot_->hazard.store(p, std::memory_order_seq_cst);
    const Snapshot* again = shared_->current_ptr_.load(std::memory_order_seq_cst);
    if (again == p) break;
    p = again;
  }
  protected_ = p;
  return *p;
}

}  // namespace chash
