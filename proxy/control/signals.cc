// SPDX-License-Identifier: Apache-2.0
#include "control/signals.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "base/log.h"

namespace chash::proxy {

namespace {

sigset_t handled_signals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);  // nothing, as nutcracker (its default action would kill us)
  sigaddset(&set, SIGTTIN);
  sigaddset(&set, SIGTTOU);
  return set;
}

}  // namespace

void block_handled_signals() noexcept {
  const sigset_t set = handled_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalHandler::SignalHandler(net::EventLoop& loop, std::function<void()> on_reload,
                             std::function<void(std::string_view)> on_stop)
    : loop_(loop), on_reload_(std::move(on_reload)), on_stop_(std::move(on_stop)) {
  const sigset_t set = handled_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the workers start: they inherit it
  // Signals that came before (blocked since main(): pending) are read from it at once.
  fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ >= 0) loop_.add(fd_, EPOLLIN, this);
}

SignalHandler::~SignalHandler() {
  if (fd_ >= 0) ::close(fd_);
}

void SignalHandler::on_event(std::uint32_t) {
  signalfd_siginfo si;
  while (::read(fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    switch (si.ssi_signo) {
      case SIGHUP:
        reopen_log_file();  // first, so the reload's lines land in the new file
        on_reload_();
        break;
      case SIGUSR1:
        reopen_log_file();
        break;
      case SIGTTIN:
        log_level_up();
        break;
      case SIGTTOU:
        log_level_down();
        break;
      case SIGINT:
        on_stop_("SIGINT");
        break;
      case SIGTERM:
        on_stop_("SIGTERM");
        break;
      default:  // SIGUSR2
        break;
    }
  }
}

}  // namespace chash::proxy
