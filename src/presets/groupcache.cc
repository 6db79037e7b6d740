// Placeholder until this preset family lands: every factory refuses with a clear error.
#include "registry.h"

#include <string>

#include "chash/error.h"

namespace chash::presets {

std::unique_ptr<Preset> make_groupcache(std::string_view name, std::span<const Node>, const PresetOptions&) {
  throw Error(ErrorCode::kUnsupported, "preset " + std::string(name) + " is not available in this build");
}

}  // namespace chash::presets
