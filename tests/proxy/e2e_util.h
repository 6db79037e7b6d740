// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the chash-proxy end-to-end tests: sockets with timeouts, child server
// processes, a temporary directory per test, and an in-process Proxy started from YAML.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../free_port.h"
#include "config/config.h"
#include "control/proxy.h"

namespace chash::proxy::testing {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Waits up to 5 s for `pred`: for what the proxy does on its own threads after the event a
// test saw (never a fixed sleep, which a loaded or sanitized run can outlast).
inline bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

// Waits up to `limit` for `pred`, polling every 20 ms: for what takes seconds by design (a
// fleet's phases, a membership change through etcd), where eventually()'s 5 s is too short.
inline bool within(std::chrono::milliseconds limit, const std::function<bool()>& pred) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

// True once every worker routes with the proxy's current topology (after a reload).
// A key (prefix0..prefix999) that `pool`'s router sends to backend `node`; "" when none does.
inline std::string key_on_node(const Pool& pool, NodeId node, const std::string& prefix = "k") {
  for (int i = 0; i < 1000; ++i) {
    const std::string k = prefix + std::to_string(i);
    if (pool.router.route(k) == node) return k;
  }
  return "";
}

inline bool reload_applied(const Proxy& proxy) {
  return eventually([&] { return proxy.applied_version() == proxy.topology()->version; });
}

inline void set_timeouts(int fd, int seconds = 5) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// A blocking TCP connection to 127.0.0.1:port, from `source` (any 127.x.y.z: the whole /8 is
// loopback on Linux) when given. -1 on failure.
inline int dial_tcp(std::uint16_t port, const char* source = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (source != nullptr) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &s.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&s), sizeof s) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  set_timeouts(fd);
  return fd;
}

inline int dial_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  set_timeouts(fd);
  return fd;
}

inline bool send_all(int fd, std::string_view bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until `done(buffer)` is true, EOF, or the socket timeout; returns what was read.
inline std::string recv_until(int fd, const std::function<bool(const std::string&)>& done) {
  std::string in;
  char buf[65536];
  while (!done(in)) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
  }
  return in;
}

// True when the peer closes the connection (EOF or reset) within the socket timeout.
inline bool closed_by_peer(int fd) {
  char buf[4096];
  for (int i = 0; i < 1000; ++i) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
  return false;
}

// A value for key i of the 10,000-key tests (Redis and memcached): every byte value, CR/LF inside,
// lengths from 0 to 40 KiB (the large ones go to the client straight from the backend's read chunk,
// the small ones are copied; net/buffer.h).
inline std::string binary_value(int i) {
  const std::size_t len = i % 1000 == 7 ? 40000 : static_cast<std::size_t>(i % 97) * 13;
  std::string v(len, '\0');
  for (std::size_t j = 0; j < len; ++j)
    v[j] = static_cast<char>((j * 31 + static_cast<std::size_t>(i)) & 0xff);
  if (len > 4) v.replace(len / 2, 2, "\r\n");
  return v;
}

using chash::testing::free_port;  // ../free_port.h

// A whole HTTP/1.0 exchange with the admin port; returns the raw response.
inline std::string http(std::uint16_t port, const std::string& request) {
  const int fd = dial_tcp(port);
  if (fd < 0) return "";
  send_all(fd, request);
  std::string out = recv_until(fd, [](const std::string&) { return false; });
  ::close(fd);
  return out;
}

// ThreadSanitizer's RSS includes shadow memory (several bytes per byte touched): memory
// bounds measured with rss_kb() say little about the program there.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// This process's resident memory in KiB (/proc/self/status VmRSS), for "memory stays flat".
inline long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// SIGSTOP `pid` and wait until every one of its threads is stopped. kill() only starts a group
// stop: one thread takes the signal and the others stop as each next enters the kernel, so on a
// loaded machine a worker thread can still serve a ready event for tens of ms after kill()
// returned (what made LifecycleTest.AValuePoppedForABlockedClientThatLeftIsPutBack flake).
inline bool stop_process(pid_t pid) {
  if (::kill(pid, SIGSTOP) != 0) return false;
  const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
  return within(std::chrono::milliseconds(10000), [&] {
    std::error_code ec;
    for (const auto& t : fs::directory_iterator(tasks, ec)) {
      std::ifstream stat(t.path() / "stat");
      std::string line;
      if (!std::getline(stat, line)) continue;  // a thread that just ended
      const std::size_t rp = line.rfind(')');  // the state follows "(comm) "
      if (rp == std::string::npos || rp + 2 >= line.size()) return false;
      const char state = line[rp + 2];
      if (state != 'T' && state != 't') return false;
    }
    return !ec;
  });
}

inline bool have_program(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

// A server process started by the test and SIGKILLed by the destructor.
// Runs `cmd` through the shell: what it printed (stdout and stderr) and its exit code.
inline std::pair<std::string, int> run(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {"popen failed", -1};
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts argv (argv[0] searched in PATH), then polls `ready` every 10 ms for up to 5 s.
  bool start(std::vector<std::string> argv, const std::function<bool()>& ready) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> av;
      for (auto& a : argv) av.push_back(a.data());
      av.push_back(nullptr);
      ::execvp(av[0], av.data());
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      if (ready()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Sends `sig` and waits up to 10 s for the exit; returns the exit status (-1: killed by us).
  int terminate(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    for (int i = 0; i < 1000; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);
    }
    stop();
    return -1;
  }

 private:
  pid_t pid_ = -1;
};

// A server process listening on a unix socket: ready once the socket accepts; stopping it
// removes the socket file.
class UnixSocketServer {
 public:
  explicit UnixSocketServer(std::string socket) : socket_(std::move(socket)) {}
  ~UnixSocketServer() { stop(); }
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return process_.pid(); }
  bool start(std::vector<std::string> argv) {
    return process_.start(std::move(argv), [this] {
      const int fd = dial_unix(socket_);
      if (fd < 0) return false;
      ::close(fd);
      return true;
    });
  }
  void stop() {
    if (!process_.running()) return;
    process_.stop();
    ::unlink(socket_.c_str());
  }

 private:
  std::string socket_;
  ChildProcess process_;
};

// A per-test temporary directory, removed at the end.
inline fs::path make_test_dir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) + "-" +
                                              info->test_suite_name() + "-" + info->name());
  fs::create_directories(dir);
  return dir;
}

// make_test_dir() for a test body, removed with everything in it when the test ends: declared
// before the servers that write there, it outlives them.
class ScopedTestDir {
 public:
  explicit ScopedTestDir(const std::string& prefix) : path_(make_test_dir(prefix)) {}
  ~ScopedTestDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScopedTestDir(const ScopedTestDir&) = delete;
  ScopedTestDir& operator=(const ScopedTestDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The proxy, in-process on its own thread, from a YAML file written to `dir`/proxy.yml (so
// reload_from_file and SIGHUP-style reloads read it).
class ProxyRunner {
 public:
  ~ProxyRunner() { stop(); }
  void start(const fs::path& dir, const std::string& yaml, unsigned workers = 2,
             ProxyOptions options = {}) {
    path_ = (dir / "proxy.yml").string();
    std::ofstream(path_) << yaml;
    options.config_path = path_;
    options.workers = workers;
    proxy_ = std::make_unique<Proxy>(load_config(path_), std::move(options));
    thread_ = std::thread([this] { proxy_->run(); });
    proxy_->wait_running();
  }
  void rewrite(const std::string& yaml) { std::ofstream(path_, std::ios::trunc) << yaml; }
  void stop() {
    if (!proxy_) return;
    proxy_->stop();
    thread_.join();
    proxy_.reset();
  }
  Proxy& operator*() { return *proxy_; }
  Proxy* operator->() { return proxy_.get(); }
  explicit operator bool() const { return proxy_ != nullptr; }
  const std::string& config_path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<Proxy> proxy_;
  std::thread thread_;
};

}  // namespace chash::proxy::testing
