// SPDX-License-Identifier: Apache-2.0
// jedis and guava presets: behaviour the peer vectors (tests/compat/vectors/jedis__*, guava__*)
// do not pin by themselves — naming rules, key tags, options the peers refuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"
#include "guava.h"
#include "java_text.h"

namespace chash {
namespace {

std::vector<Node> numbered(const std::string& prefix, int n) {
  std::vector<Node> v;
  for (int i = 0; i < n; ++i) v.push_back(Node{prefix + std::to_string(i), 1});
  return v;
}

// Unnamed shards are placed by position ("SHARD-i-NODE-n"), so their written names do not matter.
TEST(JedisPresetTest, UnnamedShardsArePlacedByPosition) {
  const auto a = make_preset("jedis", numbered("10.0.0.", 8));
  const auto b = make_preset("jedis", numbered("cache-", 8));
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    EXPECT_EQ(a->route(key), b->route(key)) << key;
  }
}

// "name=host:port" is a named shard: its points come from the name, not the address.
TEST(JedisPresetTest, NamedShardsArePlacedByName) {
  const auto a =
      make_preset("jedis", std::vector<Node>{{"x=10.0.0.1:6379", 1}, {"y=10.0.0.2:6379", 1}});
  const auto b = make_preset("jedis", std::vector<Node>{{"x=10.9.9.9:1", 1}, {"y=10.8.8.8:2", 1}});
  const auto swapped =
      make_preset("jedis", std::vector<Node>{{"y=10.0.0.2:6379", 1}, {"x=10.0.0.1:6379", 1}});
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    EXPECT_EQ(a->route(key), b->route(key));
    EXPECT_EQ(a->route(key), 1 - swapped->route(key));  // same shard, other position
  }
}

// Sharded.DEFAULT_KEY_TAG_PATTERN \{(.+?)\}: the tagged key routes as its tag alone.
TEST(JedisPresetTest, KeyTagIsTheFirstNonEmptyBracedSpanWithoutLineBreaks) {
  PresetOptions tag;
  tag.hash_tag = "{}";
  const auto nodes = numbered("10.0.0.", 64);
  const auto tagged = make_preset("jedis", nodes, tag);
  const auto plain = make_preset("jedis", nodes);
  const std::pair<const char*, const char*> cases[] = {
      {"{user1}.followers", "user1"},
      {"a{b}c{d}", "b"},
      {"{}}", "}"},  // the lazy group takes one character, even a '}'
      {"{}x}", "}x"},
      {"{a\nb}{cd}", "cd"},           // '.' stops at a line terminator: the next '{' is tried
      {"x{\xe2\x80\xa8}{ef}", "ef"},  // U+2028 is a line terminator too
      {"{\xc3\xa9t\xc3\xa9}", "\xc3\xa9t\xc3\xa9"},
  };
  for (const auto& [key, as] : cases) EXPECT_EQ(tagged->route(key), plain->route(as)) << key;
  // No match: the whole key.
  for (const char* key : {"{}", "{", "}{", "nothing", "{a\n}"}) {
    EXPECT_EQ(tagged->route(key), plain->route(key)) << key;
  }
}

TEST(JedisPresetTest, OptionsThePeerDoesNotHaveAreRefused) {
  const auto nodes = numbered("n", 3);
  PresetOptions o;
  o.vnodes = 100;
  EXPECT_THROW(make_preset("jedis", nodes, o), Error);
  o = {};
  o.hash_tag = "[]";
  EXPECT_THROW(make_preset("jedis", nodes, o), Error);
  o = {};
  o.hash = "crc32";
  EXPECT_THROW(make_preset("jedis", nodes, o), Error);
  o.hash = "MD5";
  EXPECT_NO_THROW(make_preset("jedis", nodes, o));
}

TEST(JedisPresetTest, WeightZeroShardGetsNoKeys) {
  auto nodes = numbered("n", 4);
  nodes[2].weight = 0;
  const auto p = make_preset("jedis", nodes);
  for (int i = 0; i < 2000; ++i) EXPECT_NE(p->route("k" + std::to_string(i)), 2u);
}

TEST(GuavaPresetTest, WeightsAreRefused) {
  auto nodes = numbered("n", 3);
  nodes[1].weight = 2;
  EXPECT_THROW(make_preset("guava", nodes), Error);
  nodes[1].weight = 0;
  EXPECT_THROW(make_preset("guava", nodes), Error);
}

TEST(GuavaPresetTest, RouteNIsADistinctOrderStartingWithTheOwner) {
  const auto p = make_preset("guava", numbered("n", 40));
  std::vector<NodeId> out(40);
  for (int i = 0; i < 200; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(p->route_n(key, out), 40u);
    EXPECT_EQ(out[0], p->route(key));
    std::vector<NodeId> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  }
}

// Growing n -> n+1 moves only keys to the new last bucket (Guava's consistentHash contract).
TEST(GuavaPresetTest, AddingABucketMovesKeysOnlyToIt) {
  const auto small = make_preset("guava", numbered("n", 10));
  const auto big = make_preset("guava", numbered("n", 11));
  for (int i = 0; i < 5000; ++i) {
    const std::string key = "k" + std::to_string(i);
    const NodeId b = big->route(key);
    if (b != 10) {
      EXPECT_EQ(b, small->route(key)) << key;
    }
  }
}

// The lanes (AVX2 with packing between rounds of 256-key chunks, or SSE2 8, then one at a time)
// equal the loop, on random inputs and on inputs that make nextDouble() -1.0 (the int wrap at
// 2^31) at step 1..6, at bucket counts up to Integer.MAX_VALUE, for batch lengths that use every
// path.
// The one-pass UTF-8 check guava_key_hash uses equals the JDK decoder's view (java_utf8_clean) on
// every string of one and two bytes, every three-byte string that starts with a lead byte
// (C0..FF: the others begin with a one-byte unit, which the two-byte strings cover after it),
// and on random longer ones.
TEST(GuavaPresetTest, WellFormedUtf8IsWhatTheJdkDecoderAccepts) {
  std::string s;
  for (std::uint32_t v = 0; v < (1u << 24); ++v) {
    for (std::size_t len = 1; len <= 3; ++len) {
      if (len < 3 && (v >> (8 * len)) != 0) continue;
      if (len == 3 && (v & 0xFF) < 0xC0) continue;
      s.resize(len);
      for (std::size_t i = 0; i < len; ++i) s[i] = static_cast<char>(v >> (8 * i));
      ASSERT_EQ(presets::utf8_well_formed(s), presets::java_utf8_clean(s)) << v << "/" << len;
    }
  }
  std::mt19937_64 rng(5);
  for (int k = 0; k < 200000; ++k) {
    s.resize(4 + rng() % 12);
    for (char& c : s) {
      // Mostly the bytes that start or continue sequences, so that long valid runs occur.
      const std::uint64_t r = rng();
      c = static_cast<char>(r % 4 == 0 ? r >> 8 : 0x80 + (r >> 8) % 0x78);
    }
    ASSERT_EQ(presets::utf8_well_formed(s), presets::java_utf8_clean(s)) << k;
  }
}

// Batches of Guava keys hash the short ASCII ones four at a time: every length around the 8- and
// 16-byte edges, with the top ASCII values and NUL, and non-ASCII keys between them.
TEST(GuavaPresetTest, BatchEqualsRouteOnKeysOfEveryShortLength) {
  std::vector<Node> nodes;
  for (int i = 0; i < 1000; ++i) nodes.push_back({"n" + std::to_string(i), 1});
  const auto p = make_preset("guava", nodes);
  std::mt19937_64 rng(9);
  std::vector<std::string> keys;
  for (int round = 0; round < 40; ++round) {
    for (std::size_t len = 0; len <= 33; ++len) {
      std::string k(len, '\0');
      for (char& c : k) c = static_cast<char>(rng() % 3 == 0 ? 0x7F - rng() % 2 : rng() % 0x80);
      keys.push_back(k);
      if (rng() % 5 == 0) keys.push_back(k + "\xC3\xA9");  // é
      if (rng() % 9 == 0) keys.push_back(k + "\xFF");      // malformed: U+FFFD for Java
    }
  }
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<NodeId> out(views.size());
  p->route_batch(views, out);
  for (std::size_t i = 0; i < views.size(); ++i) {
    ASSERT_EQ(out[i], p->route(views[i])) << "key " << i << " of " << views[i].size() << " bytes";
  }
}

// Each kernel (the ones this CPU lacks fall back to the scalar code, so they pass trivially
// there; CI's machine has AVX-512).
// The check of keys under 32 bytes by each kernel (AVX-512 lookup tables where the CPU has them,
// as this one and CI's do; the loop elsewhere) equals utf8_well_formed: every string of one and two
// bytes and every three-byte string that starts with a lead byte, each after 0, 1, 14 ASCII
// bytes and ending at the last of the 32 lanes (a sequence cut short there); random strings of
// 1..31 bytes, mostly lead and continuation bytes; and well-formed text with one byte changed.
TEST(GuavaPresetTest, ShortUtf8CheckOfEachKernelEqualsTheLoop) {
  std::string s;
  const auto check = [](const std::string& key) {
    for (const presets::GuavaKernel kernel :
         {presets::GuavaKernel::kAvx512, presets::GuavaKernel::kScalar}) {
      if (presets::utf8_well_formed_short(key, kernel) != presets::utf8_well_formed(key)) {
        return false;
      }
    }
    return true;
  };
  for (std::uint32_t v = 0; v < (1u << 24); ++v) {
    for (std::size_t len = 1; len <= 3; ++len) {
      if (len < 3 && (v >> (8 * len)) != 0) continue;
      if (len == 3 && (v & 0xFF) < 0xC0) continue;
      for (const std::size_t before : {std::size_t{0}, std::size_t{1}, std::size_t{14}, 31 - len}) {
        s.assign(before, 'a');
        for (std::size_t i = 0; i < len; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
        ASSERT_TRUE(check(s)) << v << "/" << len << " after " << before;
      }
    }
  }
  std::mt19937_64 rng(11);
  for (int k = 0; k < 300000; ++k) {
    s.resize(1 + rng() % 31);
    for (char& c : s) {
      const std::uint64_t r = rng();
      c = static_cast<char>(r % 4 == 0 ? r >> 8 : 0x80 + (r >> 8) % 0x78);
    }
    ASSERT_TRUE(check(s)) << k;
  }
  const std::string pieces[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xD0\xBA",
                                "\xEF\xBF\xBD", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"};
  for (int k = 0; k < 300000; ++k) {
    s.clear();
    while (s.size() < 31) {
      const std::string& p = pieces[rng() % std::size(pieces)];
      if (s.size() + p.size() > 31) break;
      s += p;
    }
    s.resize(1 + rng() % s.size());  // perhaps through a character
    if (rng() % 2 == 0) s[rng() % s.size()] = static_cast<char>(rng());
    ASSERT_TRUE(check(s)) << k;
  }
}

constexpr presets::GuavaKernel kGuavaKernels[] = {
    presets::GuavaKernel::kScalar, presets::GuavaKernel::kAvx2, presets::GuavaKernel::kAvx512,
    presets::GuavaKernel::kBest};

// The key hashes of a chunk, by each kernel, equal guava_key_hash key by key: every length up to
// 40 (the lanes take keys under 32 bytes, with a block from 16), ASCII, well-formed UTF-8 of two
// to four bytes a character, and malformed bytes (which Java replaces before hashing), mixed in
// chunks of every size up to a whole one.
TEST(GuavaPresetTest, KeyHashKernelsEqualTheScalarHash) {
  std::mt19937_64 rng(13);
  const std::string pieces[] = {"a", "Z", "\x7F", "\xC3\xA9", "\xD0\xBA", "\xE2\x82\xAC",
                                "\xF0\x9F\x98\x80", "\xFF", "\xC3", "\xED\xA0\x80", "\x80"};
  std::vector<std::string> keys;
  for (std::size_t len = 0; len <= 40; ++len) {
    for (int variant = 0; variant < 12; ++variant) {
      std::string k;
      while (k.size() < len) {
        // Mostly ASCII; variant 0 all ASCII, variants 1..11 with a piece of each kind.
        k += variant == 0 || rng() % 4 != 0 ? std::string(1, static_cast<char>(rng() % 0x80))
                                            : pieces[rng() % std::size(pieces)];
      }
      keys.push_back(k);
    }
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  const std::vector<std::string_view> views(keys.begin(), keys.end());
  for (const presets::GuavaKernel kernel : kGuavaKernels) {
    for (std::size_t at = 0, n = 1; at < views.size(); at += n, n = n % presets::kBatchChunk + 1) {
      const std::size_t count = std::min(n, views.size() - at);
      std::vector<std::uint64_t> out(count);
      presets::guava_key_hashes(std::span(views).subspan(at, count), out.data(), kernel);
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(out[i], presets::guava_key_hash(views[at + i]))
            << "kernel " << static_cast<int>(kernel) << ", key of " << views[at + i].size()
            << " bytes";
      }
    }
  }
}

TEST(GuavaPresetTest, ConsistentHashLanesEqualTheLoop) {
  constexpr std::uint64_t kMul = 2862933555777941757ULL;
  std::uint64_t inverse = kMul;  // kMul^-1 mod 2^64 by Newton's iteration (kMul is odd)
  for (int i = 0; i < 6; ++i) inverse *= 2 - kMul * inverse;
  ASSERT_EQ(kMul * inverse, 1u);
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> inputs;
  for (int step = 1; step <= 6; ++step) {
    for (int k = 0; k < 8; ++k) {
      // A state whose top 31 bits are all ones after `step` steps, walked back to the input.
      std::uint64_t state = 0xFFFFFFFE00000000ULL | (rng() & 0x1FFFFFFFFULL);
      for (int b = 0; b < step; ++b) state = (state - 1) * inverse;
      inputs.push_back(state);
    }
  }
  while (inputs.size() < 700) inputs.push_back(rng());
  std::shuffle(inputs.begin(), inputs.end(), rng);
  for (const std::uint32_t buckets :
       {1u, 2u, 3u, 10u, 100u, 1000u, 65536u, 1000003u, 2147483647u}) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{15},
                                std::size_t{16}, std::size_t{17}, std::size_t{31}, std::size_t{32},
                                std::size_t{33}, std::size_t{64}, std::size_t{200},
                                std::size_t{300}, std::size_t{700}}) {
      for (const presets::GuavaKernel kernel : kGuavaKernels) {
        std::vector<NodeId> out(n);
        presets::guava_consistent_hash_batch(inputs.data(), n, buckets, out.data(), kernel);
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(out[i], presets::guava_consistent_hash(inputs[i], buckets))
              << buckets << " buckets, input " << inputs[i] << ", batch of " << n << ", kernel "
              << static_cast<int>(kernel);
        }
      }
    }
  }
}

}  // namespace
}  // namespace chash
