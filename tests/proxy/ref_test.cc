// SPDX-License-Identifier: Apache-2.0
// core/ref.h: the sessions' intrusive shared ownership (a request held by its client's queue, the
// backends it went to and its retry timers) frees its object exactly once, after the last hold.
#include "core/ref.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace chash::proxy {
namespace {

struct Base : RefCounted {
  explicit Base(int* freed) : freed_(freed) {}
  ~Base() override { ++*freed_; }
  int* freed_;
};

struct Derived final : Base {
  Derived(int* freed, int* derived_freed) : Base(freed), derived_freed_(derived_freed) {}
  ~Derived() override { ++*derived_freed_; }
  int* derived_freed_;
};

TEST(RefTest, FreesOnceAfterTheLastHold) {
  int freed = 0;
  {
    Ref<Base> a = make_ref<Base>(&freed);
    EXPECT_EQ(a.use_count(), 1u);
    Ref<Base> b = a;  // copy
    EXPECT_EQ(a.use_count(), 2u);
    Ref<Base> c = std::move(b);  // move: no new hold
    EXPECT_TRUE(b == nullptr);
    EXPECT_EQ(c.use_count(), 2u);
    a.reset();
    EXPECT_TRUE(a == nullptr);
    EXPECT_EQ(freed, 0);
    EXPECT_EQ(c.use_count(), 1u);
  }
  EXPECT_EQ(freed, 1);
}

TEST(RefTest, AssignmentReleasesTheOldObject) {
  int first = 0, second = 0;
  Ref<Base> a = make_ref<Base>(&first);
  Ref<Base> b = make_ref<Base>(&second);
  a = b;
  EXPECT_EQ(first, 1);
  EXPECT_EQ(b.use_count(), 2u);
  Ref<Base>& same = a;
  a = same;  // self-assignment keeps it
  EXPECT_EQ(a.use_count(), 2u);
  a = nullptr;
  Ref<Base>& also_b = b;
  b = std::move(also_b);  // self-move too
  EXPECT_EQ(b.use_count(), 1u);
  EXPECT_EQ(second, 0);
  b = {};
  EXPECT_EQ(second, 1);
}

TEST(RefTest, AHoldFromThisAndUpcastsShareOneCount) {
  // Msg::fail_part takes Ref<Msg>(this), as shared_from_this() did; a Ref<Reply> is an upcast.
  int freed = 0, derived_freed = 0;
  Ref<Base> base;
  {
    Ref<Derived> d = make_ref<Derived>(&freed, &derived_freed);
    Ref<Derived> self(d.get());
    EXPECT_EQ(d.use_count(), 2u);
    base = d;                          // converting copy
    Ref<Base> moved(std::move(self));  // converting move: takes self's hold
    EXPECT_TRUE(self == nullptr);
    EXPECT_EQ(d.use_count(), 3u);
    const Ref<Derived> back = static_ref_cast<Derived>(base);
    EXPECT_EQ(back.get(), d.get());
    EXPECT_EQ(d.use_count(), 4u);
  }
  EXPECT_EQ(derived_freed, 0);
  EXPECT_EQ(base.use_count(), 1u);
  base.reset();  // through the base: the derived destructor runs too
  EXPECT_EQ(freed, 1);
  EXPECT_EQ(derived_freed, 1);
}

TEST(RefTest, HeldByContainersAndTimersCallbacks) {
  int freed = 0;
  std::vector<std::function<void()>> timers;
  {
    auto m = make_ref<Base>(&freed);
    std::vector<Ref<Base>> queue(3, m);
    EXPECT_EQ(m.use_count(), 4u);
    timers.emplace_back([m] { EXPECT_GE(m.use_count(), 1u); });
    queue.clear();
    EXPECT_EQ(m.use_count(), 2u);
  }
  EXPECT_EQ(freed, 0);  // the timer still holds it
  timers.front()();
  timers.clear();
  EXPECT_EQ(freed, 1);
}

}  // namespace
}  // namespace chash::proxy
