// SPDX-License-Identifier: Apache-2.0
// chash-proxy — the buffers of the zero-copy reply path (issue 15).
//
// A backend connection reads into a Chunk (RecvBuffer), and a reply it parses there is handed
// on as a Slice: a view of the chunk's bytes that keeps the chunk alive. The client connection's
// OutQueue then sends the slice from the chunk itself with writev(), beside the bytes the proxy
// makes (array headers, END, error lines), so a reply is not copied into a message and then
// again into the client's output string, and a merged multi-key reply is gathered from the
// backends' chunks instead of being concatenated (as nutcracker hands the response mbufs of a
// request to the client, nc_mbuf.c / nc_message.c, and Envoy's Buffer::OwnedImpl moves slices).
//
// Small pieces are copied once into the queue's own block instead (kCopyBreak): an iovec per
// 9-byte MGET element costs more than the copy, and a few bytes must not keep a 64 KiB chunk
// alive. Memory stays bounded: a chunk with slices queued counts at least half its capacity
// against the client's output limit (charge()), so a slow client cannot pin more than twice
// what it is allowed to have unsent. It counts once however many slices of it are queued: a
// merged MGET interleaves the backends' values, and charging each slice half its chunk once
// closed a client with 9 MB unsent as holding 108 MB (CI, ProxyE2E.TenThousandKey...).
//
// Chunks never leave the worker thread that made them: the reference count is not atomic.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chash::proxy::net {

// A reference-counted block of bytes (the header sits in front of its data).
class Chunk {
 public:
  static Chunk* make(std::size_t capacity);
  char* data() noexcept { return reinterpret_cast<char*>(this + 1); }
  const char* data() const noexcept { return reinterpret_cast<const char*>(this + 1); }
  std::size_t capacity() const noexcept { return capacity_; }
  std::uint32_t refs() const noexcept { return refs_; }
  void ref() noexcept { ++refs_; }
  void unref() noexcept;

 private:
  friend class OutQueue;  // its per-chunk charge (below)
  explicit Chunk(std::size_t capacity) noexcept : capacity_(capacity) {}
  // What one OutQueue has queued of it (slices of one chunk usually go to one client); a
  // chunk queued to several (a Pub/Sub message) is charged per slice in the others.
  std::size_t extra() const noexcept {
    const std::size_t half = capacity_ / 2;
    return charged_frags_ == 0 || charged_bytes_ >= half ? 0 : half - charged_bytes_;
  }
  std::size_t capacity_;
  std::uint32_t refs_ = 1;
  std::uint32_t charged_frags_ = 0;
  const void* charged_in_ = nullptr;
  std::size_t charged_bytes_ = 0;
};

// An owning pointer to a Chunk (copies share it).
class ChunkRef {
 public:
  ChunkRef() noexcept = default;
  explicit ChunkRef(Chunk* adopted) noexcept : c_(adopted) {}  // takes the creator's reference
  ChunkRef(const ChunkRef& o) noexcept : c_(o.c_) {
    if (c_ != nullptr) c_->ref();
  }
  ChunkRef(ChunkRef&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  ChunkRef& operator=(ChunkRef o) noexcept {
    std::swap(c_, o.c_);
    return *this;
  }
  ~ChunkRef() {
    if (c_ != nullptr) c_->unref();
  }
  Chunk* get() const noexcept { return c_; }
  Chunk* operator->() const noexcept { return c_; }
  explicit operator bool() const noexcept { return c_ != nullptr; }
  void reset() noexcept { ChunkRef().swap(*this); }
  void swap(ChunkRef& o) noexcept { std::swap(c_, o.c_); }
  bool shared() const noexcept { return c_ != nullptr && c_->refs() > 1; }

 private:
  Chunk* c_ = nullptr;
};

// Bytes of a chunk, kept alive as long as the slice lives.
struct Slice {
  ChunkRef chunk;
  std::string_view bytes;
};

// Below this a piece is copied into the OutQueue's block (cheaper than an iovec and a reference,
// and it pins nothing); from it on it is sent from its chunk.
inline constexpr std::size_t kCopyBreak = 1024;
// A message holding a reply while it waits (an earlier reply of its client, another part)
// keeps it in its chunk only from this size on; smaller ones are copied out so that they do not
// pin the backend's read chunk while they wait.
inline constexpr std::size_t kHoldMin = 16 * 1024;

// A backend connection's input: contiguous unparsed bytes (view()) in a chunk, read into
// directly (no scratch copy, no zero fill). Consumed bytes are dropped by moving the start;
// while slices of the chunk are alive its bytes are never moved or overwritten — new input goes
// after them, or into a new chunk that takes over the unparsed tail.
class RecvBuffer {
 public:
  static constexpr std::size_t kChunkSize = 64 * 1024;
  static constexpr std::size_t kMinRecv = 16 * 1024;  // free space made before each recv()

  std::string_view view() const noexcept {
    return chunk_ ? std::string_view(chunk_->data() + begin_, end_ - begin_) : std::string_view();
  }
  std::size_t size() const noexcept { return end_ - begin_; }
  bool empty() const noexcept { return end_ == begin_; }
  // One recv() into the free space; `asked` is how much it could take. Returns recv()'s result.
  ssize_t recv_from(int fd, std::size_t& asked);
  // The same with another reader (TLS: net/tls.h): `r(char* buf, size_t len)` returns what
  // recv() would.
  template <class Reader>
  ssize_t read_with(Reader&& r, std::size_t& asked) {
    make_room(kMinRecv);
    asked = chunk_->capacity() - end_;
    const ssize_t n = r(chunk_->data() + end_, asked);
    if (n > 0) end_ += static_cast<std::size_t>(n);
    return n;
  }
  // Appends bytes (tests and fuzzers; the sessions read with recv_from).
  void append(std::string_view bytes);
  // Drops the first n bytes of view().
  void consume(std::size_t n) noexcept {
    begin_ += n;
    if (begin_ == end_ && !chunk_.shared()) begin_ = end_ = 0;
  }
  // view().substr(off, len), keeping the chunk alive.
  Slice slice(std::size_t off, std::size_t len) const {
    return {chunk_, std::string_view(chunk_->data() + begin_ + off, len)};
  }
  const ChunkRef& chunk() const noexcept { return chunk_; }

 private:
  void make_room(std::size_t want);

  ChunkRef chunk_;
  std::size_t begin_ = 0, end_ = 0;
};

// Reply bytes a message keeps until its client writes them: a slice of a read chunk, or its own
// copy (errors the proxy makes, small replies that wait).
class HeldBytes {
 public:
  void hold(Slice s) noexcept {
    slice_ = std::move(s);
    own_.clear();
  }
  void copy(std::string_view b);
  // Keeps the bytes in the chunk only when they are at least kHoldMin (a waiting message).
  void settle();
  std::string_view view() const noexcept {
    return slice_.chunk ? slice_.bytes : std::string_view(own_);
  }
  const ChunkRef& chunk() const noexcept { return slice_.chunk; }

 private:
  Slice slice_;
  std::string own_;
};

// A client connection's unsent output: a queue of fragments, each in a chunk (a backend's read
// chunk, or one of the queue's own blocks that small pieces are copied into), sent with
// writev() up to IOV_MAX fragments at a time; a short write leaves the rest, cut at any byte.
class OutQueue {
 public:
  static constexpr std::size_t kBlockSize = 16 * 1024;

  OutQueue() = default;
  OutQueue(const OutQueue&) = delete;
  OutQueue& operator=(const OutQueue&) = delete;
  ~OutQueue() { clear(); }

  // Copied into the queue's block.
  void append(std::string_view bytes);
  // Sent from `chunk` (which `bytes` must lie in), or copied when smaller than kCopyBreak.
  void append(const ChunkRef& chunk, std::string_view bytes);
  void append(const Slice& s) { append(s.chunk, s.bytes); }
  void append(const HeldBytes& h) { append(h.chunk(), h.view()); }

  std::size_t size() const noexcept { return bytes_; }  // unsent bytes
  bool empty() const noexcept { return bytes_ == 0; }
  // Unsent bytes plus what their chunks pin beyond them: what back-pressure limits.
  std::size_t charge() const noexcept { return bytes_ + extra_; }
  std::size_t fragments() const noexcept { return frags_.size() - head_; }
  // The block small pieces are copied into (0: none); kept across replies while small.
  std::size_t block_capacity() const noexcept { return block_ ? block_->capacity() : 0; }

  // Sends until everything is sent or the socket is full. False on a socket error (errno kept).
  // `sent` grows by what was sent.
  bool send(int fd, std::size_t& sent);
  // The same with another writer (tests): `w(const iovec*, int count)` returns what writev()
  // would (bytes written, or -1 with errno).
  template <class Writer>
  bool send_with(Writer&& w, std::size_t& sent);
  void clear() noexcept;

 private:
  struct Frag {
    Chunk* chunk;  // one reference held
    const char* data;
    std::size_t len;
    std::size_t extra;    // charged beyond len while queued (a slice not in the chunk's count)
    bool chunk_charged;   // in the chunk's own count (Chunk::charged_in_ is this queue)
  };
  // `slice`: charge the chunk (at least half of it) while it is queued; the queue's own block
  // is not charged beyond the bytes.
  void push(Chunk* c, const char* data, std::size_t len, bool slice);
  // Adds `add` and takes `remove` queued bytes of chunk c from its count (frags: +1 / -1 / 0
  // slices), and the queue's extra_ (what its chunks pin beyond their queued bytes) in step.
  void recharge(Chunk* c, std::size_t add, std::size_t remove, int frags) noexcept;
  void advance(std::size_t n) noexcept;
  int fill(iovec* iov, int max) const noexcept;

  std::vector<Frag> frags_;
  std::size_t head_ = 0;  // frags_[head_] is the first unsent one
  std::size_t bytes_ = 0, extra_ = 0;
  ChunkRef block_;  // where copies go; [0, block_used_) is taken
  std::size_t block_used_ = 0;
};

// The most fragments one writev() takes (IOV_MAX: 1024 on Linux).
int iov_max() noexcept;

template <class Writer>
bool OutQueue::send_with(Writer&& w, std::size_t& sent) {
  constexpr int kStackIov = 1024;
  iovec iov[kStackIov];
  const int cap = iov_max() < kStackIov ? iov_max() : kStackIov;
  while (bytes_ > 0) {
    const int n = fill(iov, cap);
    std::size_t asked = 0;
    for (int i = 0; i < n; ++i) asked += iov[i].iov_len;
    const ssize_t r = w(static_cast<const iovec*>(iov), n);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      return false;
    }
    sent += static_cast<std::size_t>(r);
    advance(static_cast<std::size_t>(r));
    // A short write: the socket is full; EPOLLOUT says when it drains.
    if (static_cast<std::size_t>(r) < asked) return true;
  }
  return true;
}

}  // namespace chash::proxy::net
