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

#include "core/connection.h"
#include "core/topology.h"
#include "net/event_loop.h"
#include "proto/redis/commands.h"
#include "proto/redis/resp.h"

namespace chash::proxy {
class Worker;
}

namespace chash::proxy::redis_session {

class Client;

struct Msg {
  Client* client = nullptr;  // null once the client has gone
  std::string reply;
  bool done = false;
  bool close_after = false;  // QUIT / protocol error: close once this reply is written
  redis::Merge merge = redis::Merge::kNone;
  std::uint32_t outstanding = 0;
  struct Part {
    std::string raw;  // the backend's whole reply
    char type = 0;
    std::vector<redis::Span> elements;  // of raw, for kArray merges
  };
  std::vector<Part> parts;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> key_map;  // MGET: key -> (part, element)
  net::Clock::time_point start;

  // Called by Backend for each part; finishes the Msg when it was the last.
  void complete_part(std::uint32_t part, std::string_view raw, char type,
                     const std::vector<redis::Span>* elements);
  void finish();
};

class Backend : public BackendConn {
 public:
  Backend(Worker& worker, std::shared_ptr<const Pool> pool, NodeId node);
  ~Backend() override;

  // Starts connecting and queues AUTH / SELECT. False (with `error`) when it cannot start.
  bool start(std::string& error) override;
  // Queues one request; its reply completes msg->parts[part].
  void send(std::shared_ptr<Msg> msg, std::uint32_t part, std::string_view bytes);
  void flush() override;
  void check_timeout(net::Clock::time_point now) override;
  // Removed from the topology: close once nothing is in flight.
  void drain() override;

  void on_event(std::uint32_t events) override;
  const std::string& name() const noexcept { return state_->name; }

 private:
  struct Pending {
    std::shared_ptr<Msg> msg;  // null: the proxy's own AUTH / SELECT
    std::uint32_t part = 0;
    net::Clock::time_point sent;
  };
  void fail(const std::string& why);
  void close();
  void read();
  void update_events();

  Worker& worker_;
  std::shared_ptr<const Pool> pool_;
  std::shared_ptr<BackendState> state_;
  NodeId node_;
  int fd_ = -1;
  bool connecting_ = true;
  bool closed_ = false;
  bool draining_ = false;
  bool want_write_ = false;
  net::Clock::time_point connect_deadline_;
  std::string out_;
  std::size_t out_off_ = 0;
  std::string in_;
  redis::ReplyParser parser_;
  bool parser_started_ = false;
  std::deque<Pending> queue_;
};

class Client : public net::Pollable {
 public:
  Client(Worker& worker, std::size_t pool_index, int fd);
  ~Client() override;

  void on_event(std::uint32_t events) override;
  // A Msg of ours completed: write what is now in order.
  void on_done();

 private:
  void read();
  void process();
  void dispatch();
  void reply_local(std::string reply, bool count_error = false, bool close_after = false);
  void forward_one(const redis::Command& cmd, NodeId node, const std::shared_ptr<Msg>& m);
  bool check_node(NodeId node, std::string_view what, std::string& error) const;
  void split(const redis::Command& cmd);
  void write();
  void close();
  void update_events();

  Worker& worker_;
  std::size_t pool_index_;
  std::shared_ptr<const Pool> pool_;  // refreshed per batch from the worker
  int fd_;
  bool closed_ = false;
  bool read_closed_ = false;  // EOF or protocol error: no more requests
  bool authed_ = false;
  bool want_read_ = true;
  bool processing_ = false;  // inside process(): do not re-enter it from a completion
  bool want_write_ = false;
  std::string in_;
  redis::RequestParser parser_;
  std::string out_;
  std::size_t out_off_ = 0;
  std::deque<std::shared_ptr<Msg>> pending_;
};

}  // namespace chash::proxy::redis_session
