// chash-proxy — Redis client and backend connections.
//
// A Client parses requests (pipelined: many per read), turns each into a Msg at the back of its
// in-order queue, and writes replies strictly in request order as Msgs complete. A Msg is
// answered locally, forwarded whole to one backend, or split into one part per backend (MGET,
// MSET, DEL, ...) and merged when every part has answered.
//
// A Backend is one connection to one redis-server, owned by one worker: requests are written
// in order and its replies complete the queued parts in the same order (RESP has no ids). When
// it fails (connect error, timeout, closed mid-reply, unparsable reply) every queued part gets
// "-ERR backend <name>: <why>" and the connection is dropped; the next request reconnects.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/session.h"
#include "core/topology.h"
#include "net/event_loop.h"
#include "proto/redis/commands.h"
#include "proto/redis/resp.h"

namespace chash::proxy::redis_session {

class Client;

struct Msg final : Reply {
  redis::Merge merge = redis::Merge::kNone;
  struct Part {
    std::string raw;  // the backend's whole reply
    char type = 0;
    std::vector<redis::Span> elements;  // of raw, for kArray merges
  };
  std::vector<Part> parts;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> key_map;  // MGET: key -> (part, element)

  // Called by Backend for each part; finishes the Msg when it was the last.
  void complete_part(std::uint32_t part, std::string_view raw, char type,
                     const std::vector<redis::Span>* elements);
  void fail_part(std::uint32_t part, std::string_view error) override {
    complete_part(part, error, '-', nullptr);
  }
  void finish();
};

class Backend final : public BackendSession {
 public:
  Backend(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node);

  // Queues one request; its reply completes msg->parts[part].
  void send(std::shared_ptr<Msg> msg, std::uint32_t part, std::string_view bytes);

 private:
  void handshake() override;  // AUTH / SELECT
  void on_input() override;
  std::string failure_reply(const std::string& why) const override;

  redis::ReplyParser parser_;
  bool parser_started_ = false;
};

class Client final : public ClientSession {
 public:
  Client(Worker& worker, std::size_t pool_index, int fd);

 private:
  void process() override;
  void dispatch();
  void forward_one(const redis::Command& cmd, NodeId node, const std::shared_ptr<Msg>& m);
  bool check_node(NodeId node, std::string_view what, std::string& error) const;
  void split(const redis::Command& cmd);
  std::shared_ptr<Msg> new_msg();

  bool authed_ = false;
  redis::RequestParser parser_;
};

}  // namespace chash::proxy::redis_session
