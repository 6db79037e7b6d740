#include "chash/cluster.h"

#include <algorithm>

#include "chash/error.h"
#include "placement/internal.h"

namespace chash {

// ---- Snapshot ----------------------------------------------------------------------------------

Snapshot::Snapshot(std::vector<Node> nodes, std::vector<bool> removed,
                   std::shared_ptr<const AnyTable> table, DownSet down, std::uint64_t version)
    : nodes_(std::move(nodes)),
      removed_(std::move(removed)),
      table_(std::move(table)),
      down_(std::move(down)),
      version_(version) {}

NodeId Snapshot::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!removed_[i] && nodes_[i].name == name) return static_cast<NodeId>(i);
  }
  return kNoNode;
}

namespace {
constexpr std::string_view kTombstonePrefix{"\0removed#", 9};
std::string tombstone_name(NodeId id) {
  return std::string(kTombstonePrefix) + std::to_string(id);
}
}  // namespace

// ---- Cluster -----------------------------------------------------------------------------------

Cluster::Cluster(Algorithm algorithm, std::vector<Node> nodes, TableOptions options)
    : algorithm_(algorithm), options_(std::move(options)) {
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
  auto table = std::make_shared<const AnyTable>(build_table(algorithm_, nodes, options));
  removal_order_ = std::move(removal_order);
  snapshot_ = std::make_shared<const Snapshot>(std::move(nodes), std::move(removed),
                                               std::move(table), std::move(down), ++version_);
}

void Cluster::publish_state(DownSet down) {
  snapshot_ = std::make_shared<const Snapshot>(snapshot_->nodes(), snapshot_->removed(),
                                               snapshot_->shared_table(), std::move(down),
                                               ++version_);
}

NodeId Cluster::add(Node node) {
  if (node.name.starts_with(kTombstonePrefix)) {
    throw Error(ErrorCode::kInvalidArgument, "node names starting with \\0removed# are reserved");
  }
  if (snapshot_->find(node.name) != kNoNode) {
    throw Error(ErrorCode::kDuplicateNode,
                "node " + internal::quote_name(node.name) + " is already in the cluster");
  }
  std::vector<Node> nodes = snapshot_->nodes();
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
  std::vector<Node> nodes = snapshot_->nodes();
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
  std::vector<Node> nodes = snapshot_->nodes();
  std::vector<bool> removed = snapshot_->removed();
  const bool was_drained = nodes[id].weight == 0;
  nodes[id].weight = weight;
  std::vector<NodeId> order = removal_order_;
  if (weight == 0 && !was_drained) order.push_back(id);
  if (weight != 0 && was_drained) order.erase(std::remove(order.begin(), order.end(), id), order.end());
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

// ---- Router ------------------------------------------------------------------------------------

// One hazard pointer per Reader.
struct internal::ReaderSlot {
  std::atomic<const Snapshot*> hazard{nullptr};
  bool in_use = false;
};

Router::Router(Cluster cluster)
    : cluster_(std::move(cluster)), current_(cluster_.snapshot()), current_ptr_(current_.get()) {}

Router::~Router() = default;

std::shared_ptr<const Snapshot> Router::snapshot() const {
  std::lock_guard<std::mutex> lock(write_mu_);
  return current_;
}

void Router::publish() {
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
auto Router::mutate(F&& f) {
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

NodeId Router::add(Node node) { return mutate([&] { return cluster_.add(std::move(node)); }); }
void Router::remove(std::string_view name) { mutate([&] { cluster_.remove(name); }); }
void Router::set_weight(std::string_view name, std::uint32_t weight) {
  mutate([&] { cluster_.set_weight(name, weight); });
}
void Router::mark_down(std::string_view name) { mutate([&] { cluster_.mark_down(name); }); }
void Router::mark_up(std::string_view name) { mutate([&] { cluster_.mark_up(name); }); }

Router::Reader::Reader(const Router& router) : router_(&router), slot_(nullptr) {
  std::lock_guard<std::mutex> lock(router.write_mu_);
  for (auto& s : router.slots_) {
    if (!s->in_use) {
      slot_ = s.get();
      break;
    }
  }
  if (slot_ == nullptr) {
    router.slots_.push_back(std::make_unique<internal::ReaderSlot>());
    slot_ = router.slots_.back().get();
  }
  slot_->in_use = true;
}

Router::Reader::~Reader() {
  std::lock_guard<std::mutex> lock(router_->write_mu_);
  slot_->hazard.store(nullptr, std::memory_order_release);
  slot_->in_use = false;
}

const Snapshot& Router::Reader::protect(const Snapshot* p) noexcept {
  for (;;) {
    slot_->hazard.store(p, std::memory_order_seq_cst);
    const Snapshot* again = router_->current_ptr_.load(std::memory_order_seq_cst);
    if (again == p) break;
    p = again;
  }
  protected_ = p;
  return *p;
}

}  // namespace chash
