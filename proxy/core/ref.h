// SPDX-License-Identifier: Apache-2.0
// chash-proxy — Ref<T>: shared ownership of an object that one worker thread owns, with a plain
// (non-atomic) reference count in the object itself.
//
// Why not std::shared_ptr: a forwarded request (Reply) is held by its client's reply queue, by
// each backend connection it was sent on, and by the timers of a retry, and all of them live in
// one worker (core/worker.h: a worker's connections, timers and requests never leave its thread;
// the proxy tests run under ThreadSanitizer). std::shared_ptr paid a locked add and sub for each
// of those holds, two more for enable_shared_from_this's weak count, and an out-of-line release:
// ~6% of a cluster pool's CPU on a pipelined GET. This is the intrusive count Envoy and Redis use
// for the same reason, kept to what the sessions need.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace chash::proxy {

template <class T>
class Ref;

// A base for objects held by Ref; its destructor is virtual, so a Ref<Base> frees a Derived.
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;

 private:
  template <class>
  friend class Ref;
  std::uint32_t refs_ = 0;
};

namespace detail {
// Out of line: GCC 12 cannot prove that one hold's delete is not followed by another hold's
// decrement on the same object (-Wuse-after-free through the inlined destructors), and the call
// is paid once per object, not per hold.
[[gnu::noinline]] inline void free_ref(RefCounted* p) noexcept { delete p; }
}  // namespace detail

template <class T>
class Ref {
 public:
  Ref() noexcept = default;
  Ref(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): as shared_ptr's
  // Another hold on `p` (null: none); from `this` it is shared_from_this().
  explicit Ref(T* p) noexcept : p_(p) {
    if (p_ != nullptr) ++count(p_);
  }
  Ref(const Ref& o) noexcept : Ref(o.p_) {}
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  requires std::convertible_to<U*, T*> Ref(const Ref<U>& o)
  noexcept : Ref(static_cast<T*>(o.get())) {}  // NOLINT: upcast
  template <class U>
  requires std::convertible_to<U*, T*> Ref(Ref<U>&& o)
  noexcept : p_(o.release()) {}  // NOLINT: upcast
  ~Ref() { reset(); }

  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  void reset() noexcept {
    T* p = std::exchange(p_, nullptr);
    if (p != nullptr && --count(p) == 0) detail::free_ref(p);
  }
  // Gives up this hold without dropping the count (the converting move takes it over).
  T* release() noexcept { return std::exchange(p_, nullptr); }

  T* get() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  T* operator->() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  friend bool operator==(const Ref& r, std::nullptr_t) noexcept { return r.p_ == nullptr; }
  // The number of holds (tests).
  std::uint32_t use_count() const noexcept { return p_ == nullptr ? 0 : count(p_); }

 private:
  static std::uint32_t& count(T* p) noexcept { return static_cast<RefCounted*>(p)->refs_; }

  T* p_ = nullptr;
};

template <class T, class... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

template <class T, class U>
Ref<T> static_ref_cast(const Ref<U>& r) noexcept {
  return Ref<T>(static_cast<T*>(r.get()));
}

}  // namespace chash::proxy
