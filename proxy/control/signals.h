// SPDX-License-Identifier: Apache-2.0
// chash-proxy — process signals through a signalfd on the control loop:
//   SIGHUP           reopen the log file (-o), then reload the config
//   SIGUSR1          reopen the log file only (nutcracker ignores SIGUSR1; its SIGHUP reopens)
//   SIGTTIN/SIGTTOU  log one level more / less verbose, as nutcracker's
//   SIGUSR2          nothing, as nutcracker
//   SIGINT/SIGTERM   stop
//
// The constructor blocks these signals in the calling thread; construct it before any worker
// thread starts so they inherit the mask and the signals reach only the signalfd. main() blocks
// them earlier still (block_handled_signals), before the listening sockets open: a SIGTERM or
// SIGHUP sent as soon as the port accepts then waits, pending, for the signalfd instead of
// killing a process that has not finished starting (and would leave no clean-up behind).
#pragma once

#include <functional>
#include <string_view>

#include "net/event_loop.h"

namespace chash::proxy {

// Blocks the signals SignalHandler reads in the calling thread (threads it starts inherit that).
void block_handled_signals() noexcept;

class SignalHandler : public net::Pollable {
 public:
  // on_stop gets the signal's name ("SIGINT" / "SIGTERM").
  SignalHandler(net::EventLoop& loop, std::function<void()> on_reload,
                std::function<void(std::string_view)> on_stop);
  ~SignalHandler() override;
  SignalHandler(const SignalHandler&) = delete;
  SignalHandler& operator=(const SignalHandler&) = delete;

  void on_event(std::uint32_t events) override;

 private:
  net::EventLoop& loop_;
  std::function<void()> on_reload_;
  std::function<void(std::string_view)> on_stop_;
  int fd_ = -1;
};

}  // namespace chash::proxy
