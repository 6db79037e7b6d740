// SPDX-License-Identifier: Apache-2.0
#include "control/handover.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/log.h"

namespace chash::proxy {

namespace {

// SOCK_SEQPACKET: each message arrives whole, with its descriptors (a stream could split the
// key list from the SCM_RIGHTS it belongs to).
constexpr int kMaxSockets = 250;  // below the kernel's SCM_MAX_FD (253) per message
constexpr std::size_t kMaxMessage = 64 * 1024;
constexpr auto kTakeDeadline = std::chrono::seconds(5);  // connect to "TAKE"
// "TAKE" to "RELEASE": the new process builds its routers and starts its workers meanwhile.
constexpr auto kReleaseDeadline = std::chrono::seconds(120);
constexpr std::size_t kMaxConns = 4;
// STATE's answer: messages of whole lines up to this size (a SEQPACKET message is one kernel
// buffer), then "END\n"; the new process takes at most kMaxState bytes of it.
constexpr std::size_t kStateChunk = 32 * 1024;
constexpr std::size_t kMaxState = 256u << 20;

bool fill(const std::string& path, sockaddr_un& sun) {
  std::memset(&sun, 0, sizeof sun);
  sun.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof sun.sun_path) return false;
  std::memcpy(sun.sun_path, path.data(), path.size());
  return true;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

// ---- The old process: one peer's exchange ------------------------------------------------------

class HandoverServer::Conn : public net::Pollable {
 public:
  Conn(HandoverServer& server, int fd) : server_(server), loop_(server.loop_), fd_(fd) {
    deadline_ = loop_.add_timer(kTakeDeadline, [this] { server_.finish(this); });
  }
  // May run after the server is gone (the loop frees finished connections later): only the
  // loop, which outlives both, is touched.
  ~Conn() override {
    loop_.cancel_timer(deadline_);
    loop_.remove(fd_);
    ::close(fd_);
  }
  void cancel_deadline() noexcept { loop_.cancel_timer(deadline_); }

  void on_event(std::uint32_t events) override {
    if (done_) return;
    if (!state_out_.empty()) {
      if (events & (EPOLLERR | EPOLLHUP)) return done();
      return send_state();
    }
    char buf[256];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0 || (events & EPOLLERR)) return done();  // gone before RELEASE: nothing changes
    const std::string_view msg(buf, static_cast<std::size_t>(n));
    if (msg == "TAKE 1\n" && !sent_) return send_sockets();
    if (msg == "STATE 1\n" && !sent_) return start_state();
    if (msg == "RELEASE\n" && sent_) {
      const std::string ok = "OK " + std::to_string(::getpid()) + "\n";
      [[maybe_unused]] const auto w =
          ::send(fd_, ok.data(), ok.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      server_.release();
      return done();
    }
    log(LogLevel::kWarn, "hand-over: unexpected message; closing");
    done();
  }

 private:
  void send_sockets() {
    const HandoverSockets sockets = server_.sockets_();
    std::string keys;
    std::vector<int> fds;
    for (const auto& [key, fd] : sockets) {
      keys += key + "\n";
      fds.push_back(fd);
    }
    if (fds.size() > kMaxSockets || keys.size() > kMaxMessage || fds.empty()) {
      log(LogLevel::kWarn, "hand-over: too many or no sockets to pass");
      return done();
    }
    iovec iov{keys.data(), keys.size()};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    if (::sendmsg(fd_, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
      log(LogLevel::kWarn, "hand-over: cannot pass the sockets",
          {{"reason", std::strerror(errno)}});
      return done();
    }
    sent_ = true;
    const std::string n = std::to_string(fds.size());
    log(LogLevel::kInfo, "hand-over: listening sockets passed to a new process", {{"sockets", n}});
    loop_.cancel_timer(deadline_);
    deadline_ = loop_.add_timer(kReleaseDeadline, [this] { server_.finish(this); });
  }
  // The state's lines in messages of at most kStateChunk bytes, each ending a line, then END.
  void start_state() {
    const std::string all = server_.state_ ? server_.state_() : std::string();
    std::size_t at = 0;
    while (at < all.size()) {
      std::size_t end = std::min(all.size(), at + kStateChunk);
      if (end < all.size()) {
        const std::size_t nl = all.rfind('\n', end - 1);
        end = nl != std::string::npos && nl >= at ? nl + 1 : end;
      }
      state_out_.push_back(all.substr(at, end - at));
      at = end;
    }
    state_out_.push_back("END\n");
    send_state();
  }
  // As much as the socket takes now; the rest when it is writable again. Done after END.
  void send_state() {
    while (state_next_ < state_out_.size()) {
      const std::string& m = state_out_[state_next_];
      if (::send(fd_, m.data(), m.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        if (errno == EAGAIN || errno == EINTR) {
          loop_.modify(fd_, EPOLLIN | EPOLLOUT, this);
          return;
        }
        return done();
      }
      ++state_next_;
    }
    done();  // what was sent stays readable by the peer after the close
  }
  void done() {
    done_ = true;
    server_.finish(this);
  }

  HandoverServer& server_;
  net::EventLoop& loop_;
  int fd_;
  bool sent_ = false;
  bool done_ = false;
  std::vector<std::string> state_out_;  // STATE: the messages, sent up to state_next_
  std::size_t state_next_ = 0;
  net::EventLoop::TimerId deadline_ = 0;
};

HandoverServer::HandoverServer(net::EventLoop& loop, int listen_fd,
                               std::function<HandoverSockets()> sockets,
                               std::function<void()> on_release,
                               std::function<std::string()> state)
    : loop_(loop),
      fd_(listen_fd),
      sockets_(std::move(sockets)),
      on_release_(std::move(on_release)),
      state_(std::move(state)) {
  loop_.add(fd_, EPOLLIN, this);
}

HandoverServer::~HandoverServer() {
  conns_.clear();
  if (fd_ >= 0) {
    loop_.remove(fd_);
    ::close(fd_);
  }
}

int HandoverServer::listen(const std::string& path, std::string& error) {
  sockaddr_un sun;
  if (!fill(path, sun)) {
    error = "hand-over socket path empty or too long: " + path;
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno_text("socket");
    return -1;
  }
  ::unlink(path.c_str());
  // Only this user may take the sockets: the mode is set before anyone can connect.
  const mode_t old = ::umask(0077);
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sun), sizeof sun);
  ::umask(old);
  if (rc != 0 || ::listen(fd, 4) != 0) {
    error = errno_text("hand-over socket " + path);
    ::close(fd);
    return -1;
  }
  return fd;
}

void HandoverServer::on_event(std::uint32_t) {
  for (;;) {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return;
    if (released_ || conns_.size() >= kMaxConns) {
      ::close(c);
      continue;
    }
    auto conn = std::make_unique<Conn>(*this, c);
    Conn* p = conn.get();
    conns_.emplace(p, std::move(conn));
    loop_.add(c, EPOLLIN, p);
  }
}

void HandoverServer::finish(Conn* c) {
  const auto it = conns_.find(c);
  if (it == conns_.end()) return;
  it->second->cancel_deadline();
  loop_.defer_delete(std::move(it->second));
  conns_.erase(it);
}

void HandoverServer::release() {
  if (released_) return;
  released_ = true;
  // The successor serves PATH from now on: stop listening (its file is the successor's).
  loop_.remove(fd_);
  ::close(fd_);
  fd_ = -1;
  on_release_();
}

// ---- The new process -----------------------------------------------------------------------------

namespace {

// Waits until fd is readable; false at the deadline.
bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (rc < 0 && errno == EINTR) continue;
    return rc > 0;
  }
}

// A connection to the old process's hand-over socket (one per question: TAKE, STATE); -1 with
// errno set (EINVAL: a path that does not fit sockaddr_un).
int dial(const std::string& path) {
  sockaddr_un sun;
  if (!fill(path, sun)) {
    errno = EINVAL;
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

}  // namespace

HandoverClient::HandoverClient(const std::string& path, std::chrono::milliseconds timeout)
    : path_(path), timeout_(timeout) {
  sockaddr_un sun;
  if (!fill(path, sun))
    throw std::runtime_error("hand-over socket path empty or too long: " + path);
  fd_ = dial(path);
  if (fd_ < 0) {
    throw std::runtime_error(errno_text("cannot take over from " + path) +
                             " (is a chash-proxy with --handover-socket running?)");
  }
  const std::string take = "TAKE 1\n";
  if (::send(fd_, take.data(), take.size(), MSG_NOSIGNAL) < 0 || !wait_readable(fd_, timeout_)) {
    ::close(fd_);
    throw std::runtime_error("hand-over from " + path + ": no answer");
  }
  std::vector<char> text(kMaxMessage);
  std::vector<char> control(CMSG_SPACE(sizeof(int) * 253));
  iovec iov{text.data(), text.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control.data();
  m.msg_controllen = control.size();
  const ssize_t n = ::recvmsg(fd_, &m, MSG_CMSG_CLOEXEC);
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const std::size_t at = fds.size();
    fds.resize(at + count);
    std::memcpy(fds.data() + at, CMSG_DATA(c), count * sizeof(int));
  }
  std::vector<std::string> keys;
  if (n > 0) {
    std::string_view rest(text.data(), static_cast<std::size_t>(n));
    while (!rest.empty()) {
      const auto nl = rest.find('\n');
      if (nl == std::string_view::npos) break;
      keys.emplace_back(rest.substr(0, nl));
      rest.remove_prefix(nl + 1);
    }
  }
  if (n <= 0 || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0 || keys.size() != fds.size() ||
      fds.empty()) {
    for (const int f : fds) ::close(f);
    ::close(fd_);
    throw std::runtime_error("hand-over from " + path + ": malformed answer");
  }
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (!sockets_.emplace(keys[i], fds[i]).second) ::close(fds[i]);
  }
}

HandoverClient::~HandoverClient() {
  for (const auto& [key, fd] : sockets_) ::close(fd);
  if (fd_ >= 0) ::close(fd_);
}

int HandoverClient::take(const std::string& key) {
  const auto it = sockets_.find(key);
  if (it == sockets_.end()) return -1;
  const int fd = it->second;
  sockets_.erase(it);
  return fd;
}

long HandoverClient::release() {
  const std::string msg = "RELEASE\n";
  if (::send(fd_, msg.data(), msg.size(), MSG_NOSIGNAL) < 0 || !wait_readable(fd_, timeout_)) {
    throw std::runtime_error("hand-over: the old process did not confirm the release");
  }
  char buf[64];
  const ssize_t n = ::recv(fd_, buf, sizeof buf - 1, 0);
  if (n < 4 || std::strncmp(buf, "OK ", 3) != 0) {
    throw std::runtime_error("hand-over: the old process did not confirm the release");
  }
  buf[n] = '\0';
  ::close(fd_);
  fd_ = -1;
  return std::strtol(buf + 3, nullptr, 10);
}

std::optional<std::string> HandoverClient::state(std::string& error) const {
  const std::string ask = "STATE 1\n";
  const int fd = dial(path_);
  if (fd < 0 || ::send(fd, ask.data(), ask.size(), MSG_NOSIGNAL) < 0) {
    error = errno_text("asking " + path_ + " for its backends' state");
    if (fd >= 0) ::close(fd);
    return std::nullopt;
  }
  std::string out;
  std::vector<char> buf(kMaxMessage);
  for (;;) {
    if (!wait_readable(fd, timeout_)) {
      error = "no answer to STATE";
      break;
    }
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) {
      // An older chash-proxy closes a connection that asks what it does not know.
      error = n == 0 ? "the old process gave no state (a chash-proxy older than STATE?)"
                     : errno_text("reading the state");
      break;
    }
    const std::string_view m(buf.data(), static_cast<std::size_t>(n));
    if (m == "END\n") {
      ::close(fd);
      return out;
    }
    if (out.size() + m.size() > kMaxState) {
      error = "state over " + std::to_string(kMaxState >> 20) + " MiB";
      break;
    }
    out.append(m);
  }
  ::close(fd);
  return std::nullopt;
}

}  // namespace chash::proxy
