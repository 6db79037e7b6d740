// SPDX-License-Identifier: Apache-2.0
// The zero-copy reply path's buffers (proxy/net/buffer.h): the client output queue under short
// writes cut at every byte, more fragments than one writev() takes, chunk lifetimes (a slice
// keeps its chunk, and the chunk goes with the last holder), back-pressure charges, and the
// read buffer never moving bytes a slice still shows.
#include "net/buffer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace chash::proxy::net {
namespace {

// A chunk holding `bytes` (as a backend's read buffer would).
ChunkRef chunk_of(std::string_view bytes) {
  ChunkRef c(Chunk::make(std::max<std::size_t>(bytes.size(), 1)));
  std::memcpy(c->data(), bytes.data(), bytes.size());
  return c;
}

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) & 0xff);
  return s;
}

// What a queue holds, built from the same pieces each time: small copies, large slices of two
// chunks (not adjacent, so separate iovecs), and a slice adjacent to the previous one.
struct Pieces {
  std::string a = pattern(3000, 1), b = pattern(2500, 2);
  ChunkRef ca = chunk_of(a), cb = chunk_of(b);
  std::string expected;
  void fill(OutQueue& q) {
    expected.clear();
    auto add_copy = [&](std::string_view s) {
      q.append(s);
      expected += s;
    };
    auto add_ref = [&](const ChunkRef& c, std::string_view s) {
      q.append(c, s);
      expected += s;
    };
    add_copy("*3\r\n");
    add_ref(ca, std::string_view(a).substr(0, 1500));
    add_copy("$-1\r\n");
    add_ref(cb, std::string_view(b).substr(100, 2000));
    add_ref(ca, std::string_view(a).substr(1500, 1200));  // adjacent to the first slice of a
    add_ref(ca, std::string_view(a).substr(2700, 10));    // small: copied
    add_copy(std::string(300, 'z'));
  }
};

// A writer into a string that takes at most `budget` bytes before the socket is "full".
struct FakeSocket {
  std::string got;
  std::size_t budget = 0;
  int max_iov_seen = 0;
  int calls = 0;
  ssize_t operator()(const iovec* iov, int n) {
    ++calls;
    max_iov_seen = std::max(max_iov_seen, n);
    if (budget == 0) {
      errno = EAGAIN;
      return -1;
    }
    std::size_t w = 0;
    for (int i = 0; i < n && budget > 0; ++i) {
      const std::size_t take = std::min(budget, iov[i].iov_len);
      got.append(static_cast<const char*>(iov[i].iov_base), take);
      budget -= take;
      w += take;
    }
    return static_cast<ssize_t>(w);
  }
};

TEST(OutQueue, ShortWritesCutAtEveryByteKeepTheBytesInOrder) {
  Pieces p;
  {
    OutQueue probe;
    p.fill(probe);
  }
  const std::size_t total = p.expected.size();
  ASSERT_GT(total, 5000u);
  for (std::size_t cut = 0; cut <= total; ++cut) {
    OutQueue q;
    p.fill(q);
    ASSERT_EQ(q.size(), total);
    FakeSocket s;
    s.budget = cut;
    std::size_t sent = 0;
    ASSERT_TRUE(q.send_with(s, sent));
    ASSERT_EQ(sent, cut);
    ASSERT_EQ(q.size(), total - cut);
    // The rest in two more short writes (a cut inside and across fragments again), then all.
    s.budget = (total - cut) / 3;
    ASSERT_TRUE(q.send_with(s, sent));
    s.budget = total;
    ASSERT_TRUE(q.send_with(s, sent));
    ASSERT_EQ(sent, total);
    ASSERT_TRUE(q.empty());
    ASSERT_EQ(q.charge(), 0u);
    ASSERT_EQ(s.got, p.expected) << "cut at " << cut;
  }
  // Every fragment released: the test's own references are the last ones.
  EXPECT_EQ(p.ca->refs(), 1u);
  EXPECT_EQ(p.cb->refs(), 1u);
}

TEST(OutQueue, MoreFragmentsThanIovMaxGoOutInSeveralWritevs) {
  // 3000 slices of 1 KiB alternating between two chunks: none adjacent, so 3000 iovecs.
  const std::string a = pattern(3000 * 1024, 3), b = pattern(3000 * 1024, 4);
  const ChunkRef ca = chunk_of(a), cb = chunk_of(b);
  OutQueue q;
  std::string expected;
  for (std::size_t i = 0; i < 3000; ++i) {
    const std::string_view s = std::string_view(i % 2 ? b : a).substr(i * 1024, 1024);
    q.append(i % 2 ? cb : ca, s);
    expected += s;
  }
  EXPECT_EQ(q.fragments(), 3000u);
  EXPECT_EQ(ca->refs(), 1u + 1500u);
  FakeSocket s;
  s.budget = expected.size();
  std::size_t sent = 0;
  ASSERT_TRUE(q.send_with(s, sent));
  EXPECT_EQ(sent, expected.size());
  EXPECT_EQ(s.got, expected);
  EXPECT_LE(s.max_iov_seen, iov_max());
  EXPECT_GE(s.calls, (3000 + iov_max() - 1) / iov_max());
  EXPECT_EQ(ca->refs(), 1u);
  EXPECT_EQ(cb->refs(), 1u);
}

TEST(OutQueue, RealSocketWithASmallBufferGetsEveryByte) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int small = 4096;
  ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  ::fcntl(sv[0], F_SETFL, ::fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  const std::string a = pattern(2049 * 1024, 5), b = pattern(2049 * 1024, 6);
  const ChunkRef ca = chunk_of(a), cb = chunk_of(b);
  OutQueue q;
  std::string expected;
  for (std::size_t i = 0; i < 2048; ++i) {
    const std::string_view s = std::string_view(i % 2 ? b : a).substr(i * 1024, 1024 + i % 24);
    q.append(i % 2 ? cb : ca, s);
    expected += s;
    const std::string small_piece = ":" + std::to_string(i) + "\r\n";
    q.append(small_piece);
    expected += small_piece;
  }
  std::string got;
  char buf[65536];
  while (got.size() < expected.size()) {
    std::size_t sent = 0;
    ASSERT_TRUE(q.send(sv[0], sent));
    const ssize_t n = ::recv(sv[1], buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(got, expected);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(OutQueue, ASliceKeepsItsChunkAliveUntilWritten) {
  OutQueue q;
  std::string expected = pattern(5000, 7);
  {
    RecvBuffer in;  // a backend connection that goes away before its reply is written
    in.append(expected);
    const Slice s = in.slice(0, expected.size());
    q.append(s);
    EXPECT_EQ(s.chunk->refs(), 3u);  // the buffer, the slice, the queue
  }
  FakeSocket w;
  w.budget = expected.size();
  std::size_t sent = 0;
  ASSERT_TRUE(q.send_with(w, sent));
  EXPECT_EQ(w.got, expected);  // read from the chunk after its buffer was destroyed (ASan)
}

TEST(OutQueue, QueuedSlicesChargeHalfTheirChunk) {
  OutQueue q;
  const ChunkRef big(Chunk::make(64 * 1024));
  std::memset(big->data(), 'x', 64 * 1024);
  q.append(big, std::string_view(big->data(), 2048));
  EXPECT_EQ(q.size(), 2048u);
  EXPECT_EQ(q.charge(), 32u * 1024);  // a small slice cannot pin a chunk for free
  q.append(big, std::string_view(big->data() + 2048, 2048));  // adjacent: same fragment
  EXPECT_EQ(q.fragments(), 1u);
  EXPECT_EQ(q.charge(), 32u * 1024);
  q.append(std::string_view(big->data(), 100));  // copied: charges its size
  EXPECT_EQ(q.charge(), 32u * 1024 + 100);
  FakeSocket w;
  w.budget = 1 << 20;
  std::size_t sent = 0;
  ASSERT_TRUE(q.send_with(w, sent));
  EXPECT_EQ(q.charge(), 0u);
  EXPECT_EQ(big->refs(), 1u);
}

// A merged MGET's values interleave two backends' chunks: every slice is its own fragment, but
// each chunk is charged once (bytes, or half its capacity while fewer are queued), not per slice.
TEST(OutQueue, InterleavedSlicesChargeTheirChunkOnce) {
  const ChunkRef a(Chunk::make(64 * 1024)), b(Chunk::make(64 * 1024));
  std::memset(a->data(), 'a', 64 * 1024);
  std::memset(b->data(), 'b', 64 * 1024);
  OutQueue q;
  for (int i = 0; i < 4; ++i) {
    q.append(a, std::string_view(a->data() + i * 4096, 2048));
    q.append(b, std::string_view(b->data() + i * 4096, 2048));
  }
  EXPECT_EQ(q.fragments(), 8u);
  EXPECT_EQ(q.size(), 8u * 2048);
  EXPECT_EQ(q.charge(), 2u * 32 * 1024);  // was 8 x (32 KiB - 2 KiB) before
  for (int i = 0; i < 200; ++i) {
    q.append(a, std::string_view(a->data(), 2048));
    q.append(b, std::string_view(b->data(), 2048));
  }
  EXPECT_EQ(q.charge(), q.size());  // past half of each chunk: the bytes themselves
  FakeSocket w;
  w.budget = q.size() - 3000;  // a cut inside a fragment
  std::size_t sent = 0;
  ASSERT_TRUE(q.send_with(w, sent));
  EXPECT_EQ(q.size(), 3000u);
  EXPECT_EQ(q.charge(), 3000u + (32 * 1024 - 952) + (32 * 1024 - 2048));  // both: half
  // Another client's queue takes slices of a chunk this one has queued: charged per slice there.
  OutQueue other;
  other.append(b, std::string_view(b->data(), 2048));
  other.append(b, std::string_view(b->data() + 8192, 2048));
  EXPECT_EQ(other.charge(), 2u * 32 * 1024);
  q.clear();  // b leaves q's count: other's next slice of it starts b's own count there
  other.append(b, std::string_view(b->data() + 16384, 2048));
  EXPECT_EQ(other.charge(), 2u * 32 * 1024 + 32 * 1024);
  other.clear();
  EXPECT_EQ(other.charge(), 0u);
  EXPECT_EQ(a->refs(), 1u);
  EXPECT_EQ(b->refs(), 1u);
}

// Appends and short writes interleaved at random (fixed seed): whatever the mix of copies,
// slices, adjacent slices and cuts, the bytes come out as appended and every chunk is released.
TEST(OutQueue, RandomAppendsAndShortWritesKeepTheStream) {
  std::mt19937 gen(15);
  auto rng = [&gen] { return static_cast<unsigned>(gen()); };
  const std::string a = pattern(1 << 20, 11), b = pattern(1 << 20, 12);
  const ChunkRef ca = chunk_of(a), cb = chunk_of(b);
  OutQueue q;
  std::string expected, got;
  std::size_t next_a = 0;  // where the next adjacent slice of `a` starts
  for (int step = 0; step < 20000; ++step) {
    const unsigned what = rng() % 6;
    if (what == 0) {
      const std::string s = pattern(rng() % 200, rng());
      q.append(s);
      expected += s;
    } else if (what <= 2) {
      const std::size_t len = rng() % 5000;
      if (next_a + len > a.size()) next_a = 0;
      const std::string_view s = std::string_view(a).substr(next_a, len);
      next_a += len;
      q.append(ca, s);
      expected += s;
    } else if (what == 3) {
      const std::size_t off = rng() % (b.size() - 5000), len = rng() % 5000;
      const std::string_view s = std::string_view(b).substr(off, len);
      q.append(cb, s);
      expected += s;
    } else {
      FakeSocket w;
      w.budget = rng() % 20000;
      std::size_t sent = 0;
      ASSERT_TRUE(q.send_with(w, sent));
      ASSERT_EQ(sent, w.got.size());
      got += w.got;
    }
    ASSERT_EQ(q.size(), expected.size() - got.size());
    ASSERT_GE(q.charge(), q.size());
    // Each chunk counts at most half its capacity beyond the bytes (the block: nothing).
    ASSERT_LE(q.charge(), q.size() + ca->capacity() / 2 + cb->capacity() / 2);
  }
  FakeSocket w;
  w.budget = expected.size();
  std::size_t sent = 0;
  ASSERT_TRUE(q.send_with(w, sent));
  got += w.got;
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(q.charge(), 0u);
  EXPECT_EQ(ca->refs(), 1u);
  EXPECT_EQ(cb->refs(), 1u);
}

TEST(OutQueue, ABlockGrownForOneLargeReplyIsNotKept) {
  OutQueue q;
  const std::string big(1 << 20, 'e');  // an ECHO of 1 MiB: copied into a block of its size
  q.append(big);
  FakeSocket w;
  w.budget = big.size();
  std::size_t sent = 0;
  ASSERT_TRUE(q.send_with(w, sent));
  EXPECT_EQ(w.got, big);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.block_capacity(), 0u);
  q.append("+OK\r\n");  // and the next reply goes into a normal block
  EXPECT_EQ(q.block_capacity(), OutQueue::kBlockSize);
  w.got.clear();
  w.budget = 100;
  ASSERT_TRUE(q.send_with(w, sent));
  EXPECT_EQ(w.got, "+OK\r\n");
  EXPECT_EQ(q.block_capacity(), OutQueue::kBlockSize);  // the usual block stays
}

TEST(RecvBuffer, BytesASliceShowsAreNeverMovedOrOverwritten) {
  RecvBuffer in;
  const std::string first = pattern(40000, 8);
  in.append(first);
  const Slice held = in.slice(100, 30000);
  const std::string copy(held.bytes);
  in.consume(in.size());
  // Enough new input to need room several times over: the chunk is shared, so it must not be
  // compacted in place.
  std::string more;
  for (int i = 0; i < 20; ++i) {
    const std::string piece = pattern(20000, 9 + static_cast<unsigned>(i));
    in.append(piece);
    more += piece;
    in.consume(10000);
    more.erase(0, 10000);
    ASSERT_EQ(in.view(), more);
  }
  EXPECT_EQ(held.bytes, copy);
}

TEST(RecvBuffer, AnUnsharedChunkIsReusedAndAnOversizedOneDropped) {
  RecvBuffer in;
  in.append(pattern(100, 1));
  Chunk* const first = in.chunk().get();
  in.consume(100);
  in.append(pattern(100, 2));
  EXPECT_EQ(in.chunk().get(), first);  // nothing held it: reused from the start
  in.consume(100);
  in.append(pattern(1 << 20, 3));  // one large reply grows the chunk
  EXPECT_GE(in.chunk()->capacity(), std::size_t{1} << 20);
  in.consume(in.size());
  in.append("+OK\r\n");
  EXPECT_LE(in.chunk()->capacity(), 4 * RecvBuffer::kChunkSize);  // and it is not kept
  EXPECT_EQ(in.view(), "+OK\r\n");
}

TEST(HeldBytes, SettleCopiesSmallRepliesOutOfTheChunk) {
  RecvBuffer in;
  in.append(pattern(kHoldMin * 2, 4));
  HeldBytes small, large;
  small.hold(in.slice(0, 10));
  large.hold(in.slice(0, kHoldMin));
  const std::string want_small(in.view().substr(0, 10));
  EXPECT_EQ(in.chunk()->refs(), 3u);
  small.settle();
  large.settle();
  EXPECT_FALSE(small.chunk());
  EXPECT_EQ(small.view(), want_small);
  EXPECT_TRUE(large.chunk());
  EXPECT_EQ(in.chunk()->refs(), 2u);
}

}  // namespace
}  // namespace chash::proxy::net
