// SPDX-License-Identifier: Apache-2.0
// Counts the heap allocations this thread makes between start() and stop(), to check the
// "lookups do not allocate" contract. The unit test binary replaces global operator new
// (allocation_counter.cc); counting is off unless a test turns it on.
#pragma once

#include <cstddef>

namespace chash::testing {

void start_counting_allocations() noexcept;
// Stops counting; returns how many allocations were made since start.
std::size_t stop_counting_allocations() noexcept;

}  // namespace chash::testing
