// SPDX-License-Identifier: Apache-2.0
// Runtime choice of key hash: one switch per key, so callers that hash batches should resolve
// the choice once and call the function directly where that matters.
#include <cstdint>
#include <string>

#include "chash/error.h"
#include "chash/hash.h"
#include "chash/internal/xxh3.h"

namespace chash {
namespace {

// Jedis' ShardedJedis/Hashing.MURMUR_HASH seed.
constexpr std::uint64_t kJedisMurmurSeed = 0x1234ABCD;
// libmemcached/twemproxy "jenkins" initval.
constexpr std::uint32_t kMemcachedJenkinsInitval = 13;

}  // namespace

std::uint64_t hash_key(KeyHash h, std::string_view key) noexcept {
  switch (h) {
    case KeyHash::kXxh3:
      return internal::xxh3_64_inline(key);
    case KeyHash::kXxh64:
      return hash::xxh64(key);
    case KeyHash::kMurmur3_32:
      return hash::murmur3_x86_32(key);
    case KeyHash::kMurmur3_128:
      return static_cast<std::uint64_t>(hash::murmur3_x64_128(key).as_long());
    case KeyHash::kMurmur64A:
      return hash::murmur64a(key, kJedisMurmurSeed);
    case KeyHash::kMurmur2:
      // libmemcached/twemproxy "murmur": the seed depends on the length (mod 2^32).
      return hash::murmur2_32(key, 0xdeadbeefu * static_cast<std::uint32_t>(key.size()));
    case KeyHash::kMd5:
      return hash::ketama_point(hash::md5(key), 0);
    case KeyHash::kCrc32:
      return hash::crc32(key);
    case KeyHash::kCrc16:
      return hash::crc16_xmodem(key);
    case KeyHash::kFnv1_32:
      return hash::fnv1_32(key);
    case KeyHash::kFnv1a_32:
      return hash::fnv1a_32(key);
    case KeyHash::kFnv1_64:
      return hash::fnv1_64(key);
    case KeyHash::kFnv1a_64:
      return hash::fnv1a_64(key);
    case KeyHash::kOneAtATime:
      return hash::one_at_a_time(key);
    case KeyHash::kJenkins:
      return hash::jenkins_lookup3(key, kMemcachedJenkinsInitval);
    case KeyHash::kHsieh:
      return hash::hsieh(key);
    case KeyHash::kJava:
      return static_cast<std::uint32_t>(hash::java_string_hashcode(key));
    case KeyHash::kRedisSlot:
      return hash::redis_slot(key);
  }
  // Not a KeyHash enumerator (a cast from a bad integer): fall back to the default hash.
  return hash::xxh3_64(key);
}

std::string_view key_hash_name(KeyHash h) noexcept {
  switch (h) {
    case KeyHash::kXxh3:
      return "xxh3";
    case KeyHash::kXxh64:
      return "xxh64";
    case KeyHash::kMurmur3_32:
      return "murmur3_32";
    case KeyHash::kMurmur3_128:
      return "murmur3_128";
    case KeyHash::kMurmur64A:
      return "murmur64a";
    case KeyHash::kMurmur2:
      return "murmur2";
    case KeyHash::kMd5:
      return "md5";
    case KeyHash::kCrc32:
      return "crc32";
    case KeyHash::kCrc16:
      return "crc16";
    case KeyHash::kFnv1_32:
      return "fnv1_32";
    case KeyHash::kFnv1a_32:
      return "fnv1a_32";
    case KeyHash::kFnv1_64:
      return "fnv1_64";
    case KeyHash::kFnv1a_64:
      return "fnv1a_64";
    case KeyHash::kOneAtATime:
      return "one_at_a_time";
    case KeyHash::kJenkins:
      return "jenkins";
    case KeyHash::kHsieh:
      return "hsieh";
    case KeyHash::kJava:
      return "java";
    case KeyHash::kRedisSlot:
      return "redis_slot";
  }
  return "unknown";
}

KeyHash parse_key_hash(std::string_view name) {
  for (const KeyHash h : kAllKeyHashes) {
    if (key_hash_name(h) == name) return h;
  }
  std::string message = "unknown key hash \"";
  message.append(name);
  message += "\"; valid names are:";
  for (const KeyHash h : kAllKeyHashes) {
    message += ' ';
    message.append(key_hash_name(h));
  }
  throw Error(ErrorCode::kParse, message);
}

}  // namespace chash
