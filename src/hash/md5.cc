// SPDX-License-Identifier: Apache-2.0
// MD5 through OpenSSL's one-shot MD5() (libcrypto's assembly-optimised block function).
//
// Why not EVP: EVP_Digest allocates and frees a context on every call, and MD5 sits on the hot
// path of every ketama-family preset (one digest per key). MD5() works on a stack MD5_CTX — no
// allocation, no provider lookup — and is the same implementation underneath. OpenSSL 3 marks
// the low-level API deprecated (it still ships and is supported through 3.x), so this one file
// opts in to it.
//
// Pinned in tests/hash/ to RFC 1321's test suite, Python's hashlib, and libhashkit's "md5"
// (== ketama_point(md5(key), 0)).
#define OPENSSL_API_COMPAT 0x10100000L
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/md5.h>

#include "chash/hash.h"

namespace chash::hash {

Md5Digest md5(std::string_view data) noexcept {
  Md5Digest out{};
  MD5(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data());
  return out;
}

}  // namespace chash::hash
