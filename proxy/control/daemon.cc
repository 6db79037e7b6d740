// SPDX-License-Identifier: Apache-2.0
#include "control/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace chash::proxy {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The foreground process: waits for the daemon's word ("" + EOF: it died before saying).
[[noreturn]] void wait_for_daemon(int fd) {
  std::string report;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buf, static_cast<std::size_t>(n));
  }
  if (report == "ok") ::_exit(0);
  if (report.empty()) report = "the daemon exited before it was ready (see its log)";
  std::fprintf(stderr, "chash-proxy: %s\n", report.c_str());
  ::_exit(1);
}

}  // namespace

Daemon::~Daemon() {
  if (report_fd_ >= 0) ::close(report_fd_);
}

bool Daemon::detach(const std::string& stderr_path, std::string& error) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) {
    error = errno_text("pipe");
    return false;
  }
  const pid_t first = ::fork();
  if (first < 0) {
    error = errno_text("fork");
    ::close(p[0]);
    ::close(p[1]);
    return false;
  }
  if (first > 0) {
    ::close(p[1]);
    ::waitpid(first, nullptr, 0);  // the intermediate exits at once; no zombie left behind
    wait_for_daemon(p[0]);
  }
  ::close(p[0]);
  report_fd_ = p[1];
  // The intermediate: a new session without a terminal; its exit must not SIGHUP the daemon.
  auto fail = [&](const char* what) {
    failed(errno_text(what));
    ::_exit(1);
  };
  if (::setsid() < 0) fail("setsid");
  ::signal(SIGHUP, SIG_IGN);
  const pid_t second = ::fork();
  if (second < 0) fail("fork");
  if (second > 0) ::_exit(0);
  // The daemon: not a session leader, so it never gets a controlling terminal again. SIGHUP
  // back to default: blocked for the signalfd, it must not be discarded as ignored.
  ::signal(SIGHUP, SIG_DFL);
  if (::chdir("/") < 0) fail("chdir /");
  const int null = ::open("/dev/null", O_RDWR);
  if (null < 0) fail("open /dev/null");
  int err = null;
  if (!stderr_path.empty()) {
    err = ::open(stderr_path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (err < 0) fail(stderr_path.c_str());
  }
  if (::dup2(null, STDIN_FILENO) < 0 || ::dup2(null, STDOUT_FILENO) < 0 ||
      ::dup2(err, STDERR_FILENO) < 0) {
    fail("dup2");
  }
  if (err > STDERR_FILENO && err != null) ::close(err);
  if (null > STDERR_FILENO) ::close(null);
  return true;
}

void Daemon::ready() {
  if (report_fd_ < 0) return;
  write_all(report_fd_, "ok");
  ::close(report_fd_);
  report_fd_ = -1;
}

void Daemon::failed(std::string_view message) {
  if (report_fd_ < 0) return;
  write_all(report_fd_, message.empty() ? "failed" : message);
  ::close(report_fd_);
  report_fd_ = -1;
}

PidFile::~PidFile() {
  if (path_.empty()) return;
  std::ifstream in(path_);
  pid_t held = -1;
  if (!(in >> held) || held != pid_) return;  // replaced by a successor (or gone): not ours
  ::unlink(path_.c_str());
}

bool PidFile::write(const std::string& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot write pid file '" + path + "': " + std::strerror(errno);
    return false;
  }
  pid_ = ::getpid();
  write_all(fd, std::to_string(pid_) + "\n");
  ::close(fd);
  path_ = path;
  return true;
}

}  // namespace chash::proxy
