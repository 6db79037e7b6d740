// SPDX-License-Identifier: Apache-2.0
// Test certificates made with the openssl command at test time (a CA, leaves it signs), for the
// TLS tests of the proxy's ports and of its etcd client.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "e2e_util.h"

namespace chash::proxy::testing {

namespace fs = std::filesystem;

class Certs {
 public:
  explicit Certs(const fs::path& dir) : dir_(dir) {}
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A CA `name`.crt/.key.
  bool ca(const std::string& name) {
    return ok("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " +
              path(name + ".key") + " -out " + path(name + ".crt") + " -days 30 -subj /CN=" + name);
  }
  // A certificate `name`.crt/.key signed by CA `ca`, with subjectAltName `san` (may be empty).
  bool leaf(const std::string& name, const std::string& ca, const std::string& san, int days = 30) {
    std::ofstream(path(name + ".ext")) << (san.empty() ? "" : "subjectAltName=" + san + "\n");
    return ok("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " +
              path(name + ".key") + " -out " + path(name + ".csr") + " -subj /CN=" + name) &&
           ok("openssl x509 -req -in " + path(name + ".csr") + " -CA " + path(ca + ".crt") +
              " -CAkey " + path(ca + ".key") + " -CAcreateserial -days " + std::to_string(days) +
              " -extfile " + path(name + ".ext") + " -out " + path(name + ".crt"));
  }

 private:
  bool ok(const std::string& cmd) {
    const auto [out, rc] = run(cmd);
    if (rc != 0) ADD_FAILURE() << cmd << ": " << out;
    return rc == 0;
  }
  fs::path dir_;
};

}  // namespace chash::proxy::testing
