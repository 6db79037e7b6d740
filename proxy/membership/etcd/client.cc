// SPDX-License-Identifier: Apache-2.0
#include "membership/etcd/client.h"

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <mutex>

// CPPHTTPLIB_OPENSSL_SUPPORT comes from cpp-httplib's pkg-config flags (proxy/CMakeLists.txt):
// the library was built with it, and the header must agree.
#include <httplib.h>

namespace chash::proxy::etcd {

namespace {

// gRPC codes etcd answers with that another member may not (codes.Unavailable: no leader, a
// member being removed; DeadlineExceeded: a request that timed out waiting for raft).
constexpr int kUnavailable = 14, kDeadlineExceeded = 4, kUnauthenticated = 16;

// Why a TCP connection to `e` fails, in the system's words ("Connection refused"): httplib says
// only that it failed. Asked only after a failure, with the same timeout.
std::string connect_error(const Endpoint& e, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(e.host.c_str(), std::to_string(e.port).c_str(), &hints, &res) != 0 ||
      res == nullptr) {
    return "its name does not resolve";
  }
  std::string why = "cannot connect";
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    if (::connect(fd, res->ai_addr, res->ai_addrlen) != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        why = err != 0 ? std::strerror(err) : "the connection closed at once";
      } else {
        why = "connect timed out";
      }
    } else if (errno != 0) {
      why = std::strerror(errno);
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return why;
}

std::string describe(httplib::Error e) {
  switch (e) {
    case httplib::Error::Read:
      return "the connection broke while reading";
    case httplib::Error::Write:
      return "the connection broke while writing";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts:
      return "the TLS certificates cannot be loaded";
    case httplib::Error::SSLServerVerification:
      return "the server's TLS certificate does not verify";
    case httplib::Error::Canceled:
      return "stopped";
    default:
      return "request failed (" + httplib::to_string(e) + ")";
  }
}

// One request's answer. etcd's gateway ends an error reply's chunked body with an HTTP trailer
// (Grpc-Trailer-Content-Type), which cpp-httplib 0.11 reads as a broken connection: the status and
// the body have arrived by then, so they are taken from the handlers, and the connection (left
// mid-stream) is not used again.
struct Answer {
  int status = 0;
  std::string body;
  httplib::Error error = httplib::Error::Success;
  bool reusable = true;
};

Answer exchange(httplib::Client& http, const std::string& path, const httplib::Headers& headers,
                const std::string& body) {
  Answer a;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = headers;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&a](const httplib::Response& res) {
    a.status = res.status;
    return true;
  };
  req.content_receiver = [&a](const char* data, std::size_t len, std::uint64_t, std::uint64_t) {
    if (a.body.size() + len > (std::size_t{64} << 20)) return false;  // no etcd reply is this big
    a.body.append(data, len);
    return true;
  };
  httplib::Response res;
  if (!http.send(req, res, a.error)) {
    a.reusable = false;
    // The whole body came (a JSON object), only the trailer did not parse: an answer.
    if (a.status != 0 && !a.body.empty() && a.body.back() == '}') a.error = httplib::Error::Success;
  }
  return a;
}

}  // namespace

Endpoint parse_endpoint(std::string_view text) {
  std::string_view t = text;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (t.starts_with(scheme)) t.remove_prefix(scheme.size());
  }
  while (!t.empty() && t.back() == '/') t.remove_suffix(1);
  Endpoint e;
  const std::size_t colon = t.rfind(':');
  e.host = std::string(colon == std::string_view::npos ? t : t.substr(0, colon));
  if (colon != std::string_view::npos) {
    const std::string_view p = t.substr(colon + 1);
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (ec != std::errc() || end != p.data() + p.size() || v == 0 || v > 65535) {
      throw EtcdError("etcd endpoint '" + std::string(text.substr(0, 80)) +
                      "': the port must be a number from 1 to 65535");
    }
    e.port = static_cast<std::uint16_t>(v);
  }
  if (e.host.empty() || e.host.find_first_of(" /?#@") != std::string::npos) {
    throw EtcdError("etcd endpoint '" + std::string(text.substr(0, 80)) + "' is not host:port");
  }
  return e;
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw EtcdError("etcd: no endpoints");
  // OpenSSL writes a TLS record with write(2): to a connection etcd has closed (a refused
  // certificate) that raises SIGPIPE, which would end the process. Ignored once, process-wide,
  // unless the program handles it itself (as curl and redis-cli do).
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

Client::~Client() = default;

std::string Client::endpoint() const {
  std::lock_guard lock(mu_);
  return options_.endpoints[current_].text();
}

std::vector<Client::EndpointStatus> Client::endpoint_status() const {
  std::lock_guard lock(mu_);
  std::vector<EndpointStatus> out = heard_;
  out.resize(options_.endpoints.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i].endpoint = options_.endpoints[i].text();
  return out;
}

void Client::heard(std::size_t index, const std::string& error) {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::lock_guard lock(mu_);
  if (heard_.size() < options_.endpoints.size()) heard_.resize(options_.endpoints.size());
  EndpointStatus& s = heard_[index % heard_.size()];
  s.state = error.empty() ? 1 : -1;
  s.error = error;
  s.at_ms = now;
}

void Client::stop() {
  stopped_ = true;
  interrupt();
}

void Client::interrupt() {
  std::lock_guard lock(mu_);
  if (http_) http_->stop();
}

std::unique_ptr<httplib::Client> Client::connect(const Endpoint& e,
                                                 std::chrono::milliseconds read_timeout) const {
  const std::string url = (options_.tls ? "https://" : "http://") + e.text();
  auto c = std::make_unique<httplib::Client>(url, options_.cert, options_.key);
  c->set_connection_timeout(options_.timeout);
  c->set_read_timeout(read_timeout);
  c->set_write_timeout(options_.timeout);
  c->set_keep_alive(true);
  if (options_.tls) {
    if (!options_.ca.empty()) c->set_ca_cert_path(options_.ca);
    c->enable_server_certificate_verification(options_.verify);
  }
  return c;
}

bool Client::authenticate(httplib::Client& http, const Endpoint& e, std::string& transport_error) {
  const Answer r = exchange(http, "/v3/auth/authenticate", {},
                            authenticate_request(options_.user, options_.password));
  if (!r.reusable) broken_ = true;
  if (r.error != httplib::Error::Success) {
    transport_error = r.error == httplib::Error::Connection ? connect_error(e, options_.timeout)
                                                            : describe(r.error);
    return false;
  }
  if (r.status != 200) {
    // Refused credentials: every member would refuse them.
    const auto err = parse_error(r.body);
    throw EtcdError("etcd " + e.text() + ": authenticate as '" + options_.user +
                    "': " + (err ? err->message : "HTTP " + std::to_string(r.status)));
  }
  token_ = parse_authenticate(r.body);
  return true;
}

std::string Client::post(const std::string& path, const std::string& body) {
  std::string last_error;
  const std::size_t n = options_.endpoints.size();
  for (std::size_t attempt = 0; attempt < n; ++attempt) {
    if (stopped_) throw EtcdError("etcd: stopped");
    const std::size_t index = current_;
    const Endpoint e = options_.endpoints[index];
    httplib::Client* http = nullptr;
    {
      std::lock_guard lock(mu_);
      if (broken_) http_.reset();
      broken_ = false;
      if (!http_) http_ = connect(e, options_.timeout);
      http = http_.get();
    }
    auto next = [&](const std::string& why) {
      last_error = "etcd " + e.text() + ": " + why;
      heard(index, why);
      std::lock_guard lock(mu_);
      http_.reset();
      token_.clear();
      current_ = (current_ + 1) % n;
    };
    std::string why;
    if (!options_.user.empty() && token_.empty() && !authenticate(*http, e, why)) {
      next(why);
      continue;
    }
    for (int renewed = 0;; ++renewed) {
      httplib::Headers headers;
      if (!token_.empty()) headers.emplace("Authorization", token_);
      const Answer r = exchange(*http, path, headers, body);
      if (!r.reusable) broken_ = true;
      if (r.error != httplib::Error::Success) {
        next(r.error == httplib::Error::Connection ? connect_error(e, options_.timeout)
                                                   : describe(r.error));
        break;
      }
      if (r.status == 200) {
        heard(index, {});
        return r.body;
      }
      const auto er = parse_error(r.body);
      if (er && er->code == kUnauthenticated && !options_.user.empty() && renewed == 0) {
        // The token expired (etcd's simple tokens last 5 minutes idle): once more with a new one.
        if (authenticate(*http, e, why)) continue;
        next(why);
        break;
      }
      if (er && (er->code == kUnavailable || er->code == kDeadlineExceeded)) {
        next(er->message);
        break;
      }
      throw EtcdError(
          "etcd " + e.text() + ": " +
          (er ? er->message : "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 120)));
    }
  }
  throw EtcdError(last_error.empty() ? "etcd: unreachable" : last_error);
}

RangeReply Client::get(std::string_view key) {
  return parse_range(post("/v3/kv/range", range_request(key)));
}

RangeReply Client::range_prefix(std::string_view prefix) {
  return parse_range(post("/v3/kv/range", range_request(prefix, prefix_end(prefix))));
}

std::int64_t Client::put(std::string_view key, std::string_view value, std::int64_t lease) {
  return parse_put(post("/v3/kv/put", put_request(key, value, lease)));
}

std::int64_t Client::del(std::string_view key, std::string_view range_end) {
  return parse_put(post("/v3/kv/deleterange", delete_request(key, range_end)));
}

TxnReply Client::txn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                     const std::vector<Op>& failure) {
  return parse_txn(post("/v3/kv/txn", txn_request(compare, success, failure)));
}

std::int64_t Client::grant(std::int64_t ttl_seconds, std::int64_t* granted_ttl) {
  return parse_lease_grant(post("/v3/lease/grant", lease_grant_request(ttl_seconds)), granted_ttl);
}

std::int64_t Client::keepalive(std::int64_t id) {
  return parse_lease_keepalive(post("/v3/lease/keepalive", lease_id_request(id)));
}

void Client::revoke(std::int64_t id) { (void)post("/v3/lease/revoke", lease_id_request(id)); }

void Client::watch(std::string_view key, std::string_view range_end, std::int64_t start_revision,
                   const std::function<bool(const WatchReply&)>& on_reply,
                   std::chrono::milliseconds idle) {
  if (stopped_) throw EtcdError("etcd: stopped");
  const Endpoint e = options_.endpoints[current_];
  httplib::Client* http = nullptr;
  {
    std::lock_guard lock(mu_);
    http_ = connect(e, idle);
    http = http_.get();
  }
  auto fail = [&](const std::string& why) {
    {
      std::lock_guard lock(mu_);
      http_.reset();
      current_ = (current_ + 1) % options_.endpoints.size();  // the next try, the next member
    }
    throw EtcdError("etcd " + e.text() + ": watch: " + why);
  };
  std::string why;
  if (!options_.user.empty() && !authenticate(*http, e, why)) fail(why);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.body = watch_request(key, range_end, start_revision);
  req.set_header("Content-Type", "application/json");
  if (!token_.empty()) req.set_header("Authorization", token_);
  WatchStream stream;
  std::string error;
  bool done = false;  // on_reply said stop
  int status = 0;
  std::string error_body;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t len, std::uint64_t, std::uint64_t) {
    if (stopped_) return false;
    if (status != 200) {
      if (error_body.size() < 4096) error_body.append(data, std::min<std::size_t>(len, 4096));
      return true;
    }
    try {
      for (const std::string& line : stream.feed({data, len})) {
        if (!on_reply(parse_watch(line))) {
          done = true;
          return false;
        }
      }
    } catch (const EtcdError& err) {
      error = err.what();
      return false;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error herr = httplib::Error::Success;
  const bool ok = http->send(req, res, herr);
  if (done) return;
  if (!error.empty()) fail(error);
  if (stopped_) throw EtcdError("etcd: stopped");
  if (status != 0 && status != 200) {
    const auto er = parse_error(error_body);
    fail(er ? er->message : "HTTP " + std::to_string(status));
  }
  if (!ok) {
    fail(herr == httplib::Error::Connection ? connect_error(e, options_.timeout) : describe(herr));
  }
  fail("the stream ended");
}

}  // namespace chash::proxy::etcd
