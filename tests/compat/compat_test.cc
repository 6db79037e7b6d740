// SPDX-License-Identifier: Apache-2.0
// Every compatibility preset against the vectors its real peer produced (tests/compat/vectors,
// made by `make compat-vectors`). 100% agreement is required: one key elsewhere is a cache miss.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chash/error.h"
#include "chash/preset.h"
#include "chash/ring_spec.h"
#include "chash/router.h"

namespace chash {
namespace {

namespace fs = std::filesystem;

struct VectorFile {
  std::string path;
  std::string preset;
  PresetOptions options;
  std::uint32_t replicas = 1;
  std::vector<Node> nodes;
  std::vector<std::pair<std::string, std::vector<std::string>>> expected;  // key -> names
};

std::string unhex(std::string_view hex) {
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::runtime_error("bad hex digit");
  };
  if (hex.size() % 2 != 0) throw std::runtime_error("odd hex length");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(nib(hex[i]) << 4 | nib(hex[i + 1])));
  }
  return out;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(line);
  std::string part;
  while (std::getline(ss, part, sep)) parts.push_back(part);
  return parts;
}

VectorFile load(const std::string& path) {
  VectorFile v;
  v.path = path;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '@') {
      const auto parts = split(line, ' ');
      if (parts[0] == "@preset") {
        v.preset = parts.at(1);
      } else if (parts[0] == "@node") {
        v.nodes.push_back(Node{parts.at(1), static_cast<std::uint32_t>(std::stoul(parts.at(2)))});
      } else if (parts[0] == "@setting") {
        // The peer's own setting (PresetOptions::settings), in the order the file lists them.
        v.options.settings.emplace_back(parts.at(1), parts.at(2));
      } else if (parts[0] == "@option") {
        const std::string& name = parts.at(1);
        const std::string& value = parts.at(2);
        if (name == "hash") {
          v.options.hash = value;
        } else if (name == "hash_tag") {
          v.options.hash_tag = value;
        } else if (name == "vnodes") {
          v.options.vnodes = static_cast<std::uint32_t>(std::stoul(value));
        } else if (name == "replicas") {
          v.replicas = static_cast<std::uint32_t>(std::stoul(value));
        } else {
          throw std::runtime_error(path + ": unknown option " + name);
        }
      } else {
        throw std::runtime_error(path + ": unknown directive " + parts[0]);
      }
      continue;
    }
    auto cols = split(line, '\t');
    if (cols.size() < 2) throw std::runtime_error(path + ": bad line " + line);
    std::string key = unhex(cols[0]);
    cols.erase(cols.begin());
    v.expected.emplace_back(std::move(key), std::move(cols));
  }
  return v;
}

std::vector<std::string> vector_files() {
  std::vector<std::string> files;
  // vectors/: peers this machine can install; vectors-libmemcached-1.0.18/: libmemcached 1.0.18
  // built from its source by tests/compat/libmemcached/generate_1018.sh (not a Debian package).
  for (const char* name : {"vectors", "vectors-libmemcached-1.0.18"}) {
    const fs::path dir = fs::path(CHASH_COMPAT_DIR) / name;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".tsv") files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string printable(const std::string& key) {
  std::string out;
  for (unsigned char c : key.substr(0, 40)) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

class CompatVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(CompatVectors, PresetAgreesWithThePeerOnEveryKey) {
  const VectorFile v = load(GetParam());
  ASSERT_FALSE(v.preset.empty()) << v.path << ": no @preset";
  ASSERT_FALSE(v.nodes.empty()) << v.path << ": no @node";
  ASSERT_GE(v.expected.size(), 100u) << v.path << ": too few keys to mean anything";
  std::unique_ptr<Preset> preset;
  try {
    preset = make_preset(v.preset, v.nodes, v.options);
  } catch (const Error& e) {
    FAIL() << v.path << ": " << e.what();
  }
  std::size_t mismatches = 0;
  std::vector<NodeId> out(v.replicas);
  for (const auto& [key, names] : v.expected) {
    std::vector<std::string> got;
    if (v.replicas == 1) {
      const NodeId id = preset->route(key);
      got.push_back(id == kNoNode ? "<none>" : v.nodes[id].name);
    } else {
      const std::size_t n = preset->route_n(key, out);
      for (std::size_t i = 0; i < n; ++i) got.push_back(v.nodes[out[i]].name);
    }
    if (got != names) {
      if (++mismatches <= 5) {
        ADD_FAILURE() << v.path << ": key \"" << printable(key) << "\" -> peer " << names[0]
                      << ", chash " << got[0];
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << mismatches << " of " << v.expected.size() << " keys disagree";
}

// The batch path (Preset::route_batch: multi-buffer MD5, Guava's lanes, the rings' pipelined
// lookups) agrees with the peer on every key too, in one call over the whole file and in
// batches of 7 keys.
TEST_P(CompatVectors, BatchRoutingAgreesWithThePeer) {
  const VectorFile v = load(GetParam());
  if (v.replicas != 1) return;  // replica lists come from route_n, which has no batch form
  const auto preset = make_preset(v.preset, v.nodes, v.options);
  std::vector<std::string_view> keys;
  for (const auto& e : v.expected) keys.push_back(e.first);
  for (const std::size_t batch : {keys.size(), std::size_t{7}}) {
    std::vector<NodeId> ids(keys.size(), kNoNode);
    for (std::size_t i = 0; i < keys.size(); i += batch) {
      const std::size_t n = std::min(batch, keys.size() - i);
      preset->route_batch(std::span<const std::string_view>(keys).subspan(i, n),
                          std::span<NodeId>(ids).subspan(i, n));
    }
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::string got = ids[i] == kNoNode ? "<none>" : v.nodes[ids[i]].name;
      if (got != v.expected[i].second[0] && ++mismatches <= 5) {
        ADD_FAILURE() << v.path << ": key \"" << printable(v.expected[i].first) << "\" -> peer "
                      << v.expected[i].second[0] << ", chash batch " << got;
      }
    }
    EXPECT_EQ(mismatches, 0u) << mismatches << " of " << keys.size()
                              << " keys disagree, batches of " << batch;
  }
}

// The presets that are ring specs (the articles' rings), routed from their printed spec through
// the Router (`chash route --ring '...'`), agree with the peer on every key too.
TEST_P(CompatVectors, RingSpecFormAgreesWithThePeer) {
  const VectorFile v = load(GetParam());
  std::optional<RingSpec> spec;
  try {
    spec = preset_ring_spec(v.preset, v.options.vnodes);
  } catch (const Error& e) {
    FAIL() << v.path << ": " << e.what();
  }
  if (!spec) return;  // not a ring-spec preset: nothing more to check
  RoutingSpec rs;
  rs.ring = to_string(*spec);
  const Router router = Router::build(rs, v.nodes);
  std::size_t mismatches = 0;
  for (const auto& [key, names] : v.expected) {
    const NodeId id = router.route(key);
    if ((id == kNoNode ? "<none>" : v.nodes[id].name) != names[0]) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u) << v.path << " via --ring '" << *rs.ring << "'";
}

std::string test_name(const ::testing::TestParamInfo<std::string>& p) {
  const fs::path path(p.param);
  std::string name = path.stem().string();
  if (path.parent_path().filename() != "vectors") {
    name = path.parent_path().filename().string() + "__" + name;
  }
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Peers, CompatVectors, ::testing::ValuesIn(vector_files()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CompatVectors);

TEST(PresetRegistryTest, EveryPresetIsListedWithItsPeer) {
  const auto list = preset_list();
  EXPECT_EQ(list.size(), 26u);
  for (const auto& p : list) EXPECT_FALSE(p.peer.empty()) << p.name;
}

TEST(PresetRegistryTest, UnknownPresetNamesTheValidOnes) {
  try {
    make_preset("ketamaa", std::vector<Node>{{"a", 1}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ketama-spy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace chash
