// MD5 through OpenSSL's EVP interface (the low-level MD5() is deprecated in OpenSSL 3).
//
// The digest object is fetched once per process: EVP_md5() alone makes every EVP_Digest call
// re-fetch the implementation from the provider, which costs ~60% more per key. EVP_Digest still
// allocates a context internally per call (see the note on md5() in chash/hash.h).
//
// Pinned in tests/hash/ to RFC 1321's test suite, Python's hashlib, and libhashkit's "md5"
// (== ketama_point(md5(key), 0)).
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

#include "chash/hash.h"

namespace chash::hash {
namespace {

const EVP_MD* md5_algorithm() noexcept {
  // Fetched once, kept for the process lifetime (never freed, by design).
  static const EVP_MD* const md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "MD5", nullptr);
    return fetched != nullptr ? fetched : EVP_md5();
  }();
  return md;
}

[[noreturn]] void md5_unavailable() noexcept {
  // Only out-of-memory or a provider configuration without MD5 (FIPS-only) gets here. Returning a
  // made-up digest would silently send every key to one place, so stop loudly instead.
  std::fputs("chash: OpenSSL could not compute MD5 (out of memory, or no provider offers MD5)\n",
             stderr);
  std::abort();
}

}  // namespace

Md5Digest md5(std::string_view data) noexcept {
  Md5Digest out{};
  unsigned int out_len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &out_len, md5_algorithm(), nullptr) != 1 ||
      out_len != out.size()) {
    md5_unavailable();
  }
  return out;
}

}  // namespace chash::hash
