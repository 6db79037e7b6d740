// SPDX-License-Identifier: Apache-2.0
// chash_route_java_strings' input comes from a binding (src/presets/java_strings.h): any offsets,
// coders and bytes must route or be refused with Error (kInvalidArgument) — never a crash, a read
// outside the data or another exception. What is routed must route as the keys' UTF-8 (encoded by
// the plain per-unit loop) does, on the guava preset (keys hashed in place) and on ketama (every
// other router's path).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/router.h"
#include "fuzz_reader.h"
#include "presets/java_strings.h"

namespace {

using chash::presets::JavaKey;
using chash::presets::JavaStrings;

const chash::Router& router(int which) {
  static const auto build = [](const char* preset) {
    std::vector<chash::Node> nodes;
    for (int i = 0; i < 13; ++i) nodes.push_back(chash::Node{"n" + std::to_string(i), 1});
    chash::RoutingSpec spec;
    spec.preset = preset;
    return chash::Router::build(spec, nodes);
  };
  static const chash::Router guava = build("guava");
  static const chash::Router ketama = build("ketama");
  return which == 0 ? guava : ketama;
}

std::string plain_utf8(const JavaKey& key) {
  std::string out(3 * key.len + chash::presets::kJavaUtf8Slack, '\0');
  if (key.coder == chash::presets::kJavaLatin1) {
    out.resize(chash::presets::java_latin1_to_utf8(reinterpret_cast<const std::uint8_t*>(key.text),
                                                   key.len, out.data()));
  } else {
    out.resize(chash::presets::java_utf16_to_utf8(
        reinterpret_cast<const std::uint16_t*>(static_cast<const void*>(key.text)), key.len / 2,
        out.data(), false));
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
  if (size > 16 * 1024) return 0;
  chash::fuzz::Reader in{input, size};
  const bool chars = (in.byte() & 1) != 0;  // every key UTF-16, offsets counting units
  const std::size_t count = in.byte() % 80;
  std::vector<std::uint8_t> coders(count);
  std::vector<std::int32_t> offsets(count + 1);
  // Offsets mostly as KeyPack writes them (steps forward, UTF-16 keys after a pad byte), now and
  // then any value; coders mostly 0 and 1.
  std::int32_t pos = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t how = in.byte();
    coders[i] = how % 16 == 15 ? in.byte() : how & 1;
    if (how % 32 == 31) {
      const int low = in.byte();
      offsets[i + 1] = static_cast<std::int32_t>(low | in.byte() << 8) - 64;
    } else {
      pos += in.byte() % 48;
      offsets[i + 1] = pos;
    }
  }
  // The rest is the text, in memory aligned for UTF-16 (a Java array's elements are).
  std::vector<std::uint16_t> store(in.n / 2 + 1);
  if (in.n != 0) std::memcpy(store.data(), in.p, in.n);
  const JavaStrings keys{reinterpret_cast<const char*>(store.data()), in.n,
                         chars ? nullptr : coders.data(), offsets.data(), count};
  for (int which = 0; which < 2; ++which) {
    std::vector<chash::NodeId> out(count, chash::kNoNode);
    try {
      chash::presets::route_java_strings(router(which), keys, out.data());
    } catch (const chash::Error& e) {
      if (e.code() != chash::ErrorCode::kInvalidArgument) __builtin_trap();
      continue;
    }
    for (std::size_t i = 0; i < count; ++i) {
      if (out[i] != router(which).route(plain_utf8(chash::presets::java_key(keys, i)))) {
        __builtin_trap();  // routed as something other than its UTF-8
      }
    }
  }
  return 0;
}
