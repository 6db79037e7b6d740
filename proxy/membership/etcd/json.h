// SPDX-License-Identifier: Apache-2.0
// chash-proxy — etcd's v3 API as JSON (its gRPC gateway, served by etcd 3.4 at /v3/...): the
// request bodies the client sends and the replies it reads, without the network.
//
// The gateway speaks proto3 JSON: keys and values are base64 ("/chash" -> "L2NoYXNo"), int64
// fields are decimal strings ("revision":"42"), and fields at their default are left out (a PUT
// event has no "type"; a DELETE has "type":"DELETE"). A watch reply is a stream of such objects,
// one per line ({"result":{...}}\n...); WatchStream splits it. Everything here reads bytes from
// the network: a reply that is not what etcd sends is an EtcdError, never a crash, and the
// splitter's line is bounded (fuzz/etcd_json_fuzz.cc, fuzz/etcd_watch_fuzz.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace chash::proxy::etcd {

// What went wrong talking to etcd: unreachable, refused, or an answer we cannot read. The
// message names the endpoint when there is one ("etcd 127.0.0.1:2379: Connection refused").
class EtcdError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string base64_encode(std::string_view bytes);
// Throws EtcdError on bad input (etcd never sends it; a man in the middle might).
std::string base64_decode(std::string_view text);

// The end of the range holding every key that starts with `prefix` (etcd's "prefix" end: the
// prefix with its last byte below 0xff incremented, the rest dropped; "\0" for "everything").
std::string prefix_end(std::string_view prefix);

struct KeyValue {
  std::string key, value;
  std::int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

struct RangeReply {
  std::int64_t revision = 0;  // the store's revision when it was read (header.revision)
  std::vector<KeyValue> kvs;
  bool more = false;
};

// One comparison of a transaction (etcd's Compare).
struct Compare {
  enum class Target : std::uint8_t { kMod, kCreate, kVersion, kValue };
  enum class Result : std::uint8_t { kEqual, kNotEqual, kLess, kGreater };
  std::string key;
  Target target = Target::kMod;
  Result result = Result::kEqual;
  std::int64_t number = 0;  // kMod, kCreate, kVersion
  std::string value;        // kValue
};
// One operation of a transaction: a put, a delete of a key or of a range, or a read.
struct Op {
  enum class Kind : std::uint8_t { kPut, kDelete, kRange };
  Kind kind = Kind::kPut;
  std::string key, value, range_end;
  std::int64_t lease = 0;
  static Op put(std::string key, std::string value, std::int64_t lease = 0) {
    return {Kind::kPut, std::move(key), std::move(value), {}, lease};
  }
  static Op del(std::string key, std::string range_end = {}) {
    return {Kind::kDelete, std::move(key), {}, std::move(range_end), 0};
  }
  static Op get(std::string key) { return {Kind::kRange, std::move(key), {}, {}, 0}; }
};
struct TxnReply {
  bool succeeded = false;
  std::int64_t revision = 0;
  std::vector<RangeReply> ranges;  // the kRange ops' answers of the branch taken, in order
};

struct WatchEvent {
  bool deleted = false;  // a DELETE (kv holds the key and the revision only); else a PUT
  KeyValue kv;
};
// One message of a watch stream.
struct WatchReply {
  std::int64_t revision = 0;  // header.revision
  bool created = false, canceled = false;
  std::int64_t compact_revision = 0;  // set when the start revision was compacted away
  std::string cancel_reason;
  std::vector<WatchEvent> events;
};

// ---- Request bodies ---------------------------------------------------------------------------

std::string range_request(std::string_view key, std::string_view range_end = {},
                          std::int64_t revision = 0);
std::string put_request(std::string_view key, std::string_view value, std::int64_t lease = 0);
std::string delete_request(std::string_view key, std::string_view range_end = {});
std::string txn_request(const std::vector<Compare>& compare, const std::vector<Op>& success,
                        const std::vector<Op>& failure);
std::string watch_request(std::string_view key, std::string_view range_end,
                          std::int64_t start_revision);
std::string lease_grant_request(std::int64_t ttl_seconds);
std::string lease_id_request(std::int64_t id);  // keepalive, revoke: {"ID":"..."}
std::string authenticate_request(std::string_view user, std::string_view password);

// ---- Replies (each throws EtcdError when the text is not such a reply) ------------------------

// The gateway's error object ({"error":..,"message":..,"code":N}); nullopt when `body` is not one.
struct ErrorReply {
  int code = 0;  // gRPC status: 16 unauthenticated, 9 failed precondition, 14 unavailable...
  std::string message;
};
std::optional<ErrorReply> parse_error(std::string_view body);

RangeReply parse_range(std::string_view body);
std::int64_t parse_put(std::string_view body);  // the revision the put made
TxnReply parse_txn(std::string_view body);
std::int64_t parse_lease_grant(std::string_view body, std::int64_t* ttl = nullptr);  // its ID
// A keepalive's answer: the lease's TTL left in seconds; 0 when it has expired.
std::int64_t parse_lease_keepalive(std::string_view body);
std::string parse_authenticate(std::string_view body);  // the token
// One line of a watch stream ({"result":{...}}, or an {"error":...} that ends it).
WatchReply parse_watch(std::string_view line);

// Splits a watch stream as it arrives into its lines (one JSON object each). A line longer than
// `max_line` bytes is an EtcdError (etcd's own request limit is 1.5 MiB; a watch message holds
// at most a few events of those).
class WatchStream {
 public:
  explicit WatchStream(std::size_t max_line = std::size_t{16} << 20) : max_line_(max_line) {}
  // Appends `bytes` and returns the complete lines in it (without their '\n'; blank lines are
  // dropped). The rest waits for more.
  std::vector<std::string> feed(std::string_view bytes);
  std::size_t pending() const noexcept { return buf_.size(); }

 private:
  std::size_t max_line_;
  std::string buf_;
  std::size_t scanned_ = 0;  // buf_[0, scanned_) holds no '\n'
};

}  // namespace chash::proxy::etcd
