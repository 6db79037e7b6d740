// SPDX-License-Identifier: Apache-2.0
#include "membership/file_source.h"

#include <exception>

namespace chash::proxy {

bool FileSource::reload(std::string& message) {
  if (path_.empty()) {
    message = "reload refused: no config file";
    return false;
  }
  try {
    return apply_(load_config(path_), message);
  } catch (const std::exception& e) {
    message = std::string("reload refused: ") + e.what();
    if (refuse_) refuse_(e.what());
    return false;
  }
}

}  // namespace chash::proxy
