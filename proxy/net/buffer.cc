// SPDX-License-Identifier: Apache-2.0
#include "net/buffer.h"

#include <limits.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace chash::proxy::net {

// ---- Chunk --------------------------------------------------------------------------------------

Chunk* Chunk::make(std::size_t capacity) {
  // Uninitialised bytes: a read buffer is never zero-filled (see recv_append's history).
  void* p = ::operator new(sizeof(Chunk) + capacity);
  return new (p) Chunk(capacity);
}

void Chunk::unref() noexcept {
  if (--refs_ != 0) return;
  this->~Chunk();
  ::operator delete(static_cast<void*>(this));
}

int iov_max() noexcept {
#ifdef IOV_MAX
  return IOV_MAX;
#else
  return 1024;
#endif
}

// ---- RecvBuffer ---------------------------------------------------------------------------------

void RecvBuffer::make_room(std::size_t want) {
  const std::size_t live = end_ - begin_;
  if (chunk_ && !chunk_.shared()) {
    if (live == 0) begin_ = end_ = 0;
    // A chunk grown for one large reply is not kept once that reply has gone.
    const bool oversized = chunk_->capacity() > 4 * kChunkSize && live < kChunkSize;
    if (!oversized && chunk_->capacity() - end_ >= want) return;
    if (!oversized && chunk_->capacity() - live >= want && begin_ > 0) {
      std::memmove(chunk_->data(), chunk_->data() + begin_, live);
      begin_ = 0;
      end_ = live;
      return;
    }
  } else if (chunk_ && chunk_->capacity() - end_ >= want) {
    return;  // shared: new bytes go after the ones slices see
  }
  // A new chunk takes over the unparsed tail (a reply being read). Doubling keeps a large
  // reply's copies linear in its size.
  const std::size_t cap = std::max(kChunkSize, std::max(2 * live, live + want));
  ChunkRef next(Chunk::make(cap));
  if (live > 0) std::memcpy(next->data(), chunk_->data() + begin_, live);
  chunk_ = std::move(next);
  begin_ = 0;
  end_ = live;
}

ssize_t RecvBuffer::recv_from(int fd, std::size_t& asked) {
  make_room(kMinRecv);
  asked = chunk_->capacity() - end_;
  const ssize_t n = ::recv(fd, chunk_->data() + end_, asked, 0);
  if (n > 0) end_ += static_cast<std::size_t>(n);
  return n;
}

void RecvBuffer::append(std::string_view bytes) {
  if (bytes.empty()) return;
  make_room(bytes.size());
  std::memcpy(chunk_->data() + end_, bytes.data(), bytes.size());
  end_ += bytes.size();
}

// ---- HeldBytes ----------------------------------------------------------------------------------

void HeldBytes::copy(std::string_view b) {
  slice_ = {};
  own_.assign(b);
}

void HeldBytes::settle() {
  if (!slice_.chunk || slice_.bytes.size() >= kHoldMin) return;
  own_.assign(slice_.bytes);
  slice_ = {};
}

// ---- OutQueue -----------------------------------------------------------------------------------

void OutQueue::recharge(Chunk* c, std::size_t add, std::size_t remove, int frags) noexcept {
  const std::size_t before = c->extra();
  c->charged_bytes_ = c->charged_bytes_ + add - remove;
  c->charged_frags_ = static_cast<std::uint32_t>(static_cast<int>(c->charged_frags_) + frags);
  extra_ = extra_ - before + c->extra();
  if (c->charged_frags_ == 0) {
    c->charged_in_ = nullptr;
    c->charged_bytes_ = 0;
  }
}

void OutQueue::push(Chunk* c, const char* data, std::size_t len, bool slice) {
  if (head_ < frags_.size()) {
    Frag& last = frags_.back();
    if (last.chunk == c && last.data + last.len == data) {  // contiguous: one iovec
      last.len += len;
      bytes_ += len;
      if (last.chunk_charged) {
        recharge(c, len, 0, 0);
      } else {
        const std::size_t covered = std::min(last.extra, len);  // still max(len, half chunk)
        last.extra -= covered;
        extra_ -= covered;
      }
      return;
    }
  } else if (head_ > 0) {
    frags_.clear();
    head_ = 0;
  }
  c->ref();
  Frag f{c, data, len, 0, false};
  if (slice && (c->charged_in_ == nullptr || c->charged_in_ == this)) {
    c->charged_in_ = this;
    f.chunk_charged = true;
    recharge(c, len, 0, 1);
  } else if (slice) {
    const std::size_t half = c->capacity() / 2;  // queued to another client too
    f.extra = half > len ? half - len : 0;
    extra_ += f.extra;
  }
  frags_.push_back(f);
  bytes_ += len;
}

void OutQueue::append(std::string_view bytes) {
  if (bytes.empty()) return;
  if (!block_ || block_->capacity() - block_used_ < bytes.size()) {
    if (block_ && !block_.shared()) {
      block_used_ = 0;  // nothing queued is in it any more
      if (block_->capacity() < bytes.size() || block_->capacity() > 4 * kBlockSize) block_.reset();
    } else {
      block_.reset();
    }
    if (!block_) {
      block_ = ChunkRef(Chunk::make(std::max(kBlockSize, bytes.size())));
      block_used_ = 0;
    }
  }
  char* dst = block_->data() + block_used_;
  std::memcpy(dst, bytes.data(), bytes.size());
  block_used_ += bytes.size();
  push(block_.get(), dst, bytes.size(), false);
}

void OutQueue::append(const ChunkRef& chunk, std::string_view bytes) {
  if (!chunk || bytes.size() < kCopyBreak) {
    append(bytes);
    return;
  }
  // Count at least half the chunk: what this queue pins is then at most twice its charge.
  push(chunk.get(), bytes.data(), bytes.size(), true);
}

int OutQueue::fill(iovec* iov, int max) const noexcept {
  int n = 0;
  for (std::size_t i = head_; i < frags_.size() && n < max; ++i, ++n) {
    iov[n].iov_base = const_cast<char*>(frags_[i].data);
    iov[n].iov_len = frags_[i].len;
  }
  return n;
}

void OutQueue::advance(std::size_t n) noexcept {
  bytes_ -= n;
  while (n > 0) {
    Frag& f = frags_[head_];
    if (n < f.len) {
      f.data += n;
      f.len -= n;
      if (f.chunk_charged) recharge(f.chunk, 0, n, 0);
      return;
    }
    n -= f.len;
    if (f.chunk_charged) recharge(f.chunk, 0, f.len, -1);
    else extra_ -= f.extra;
    f.chunk->unref();
    f.chunk = nullptr;
    ++head_;
  }
  if (head_ == frags_.size()) {
    frags_.clear();
    head_ = 0;
    if (block_ && !block_.shared()) {
      block_used_ = 0;
      // A block grown for one large local reply (ECHO, ...) is not kept for the connection's
      // life; the usual 16 KiB one is, so that replies do not allocate.
      if (block_->capacity() > 4 * kBlockSize) block_.reset();
    }
    if (frags_.capacity() > 4096) frags_.shrink_to_fit();
  } else if (head_ >= 1024 && head_ * 2 >= frags_.size()) {
    frags_.erase(frags_.begin(), frags_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

bool OutQueue::send(int fd, std::size_t& sent) {
  return send_with(
      [fd](const iovec* iov, int n) {
        msghdr msg{};
        msg.msg_iov = const_cast<iovec*>(iov);
        msg.msg_iovlen = static_cast<std::size_t>(n);
        return ::sendmsg(fd, &msg, MSG_NOSIGNAL);
      },
      sent);
}

void OutQueue::clear() noexcept {
  for (std::size_t i = head_; i < frags_.size(); ++i) {
    Frag& f = frags_[i];
    if (f.chunk_charged) recharge(f.chunk, 0, f.len, -1);
    f.chunk->unref();
  }
  frags_.clear();
  head_ = 0;
  bytes_ = extra_ = 0;
  block_used_ = 0;
  block_.reset();
}

}  // namespace chash::proxy::net
