// SPDX-License-Identifier: Apache-2.0
// CRCs: CRC-32/IEEE from zlib, CRC-16/XMODEM written here (as Redis Cluster's crc16.c has it).
#include <zlib.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "chash/hash.h"

namespace chash::hash {
namespace {

// ---- CRC-16/XMODEM ----------------------------------------------------------------------------
// Name       : CRC-16/XMODEM (the "CCITT" variant Redis uses for cluster key slots)
// Width      : 16
// Poly       : 1021
// Init       : 0000
// RefIn/Out  : false / false
// XorOut     : 0000
// Check      : "123456789" -> 31C3 (the CRC catalogue; Redis crc16.c says the same)
//
// Table-driven, MSB first: table[i] is the CRC of the single byte i; the tables are computed at
// compile time from the polynomial rather than pasted, so they cannot carry a typo.
constexpr std::uint16_t kCrc16Poly = 0x1021;

constexpr std::array<std::uint16_t, 256> make_crc16_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000u) != 0 ? (crc << 1) ^ kCrc16Poly : crc << 1;
    }
    table[i] = static_cast<std::uint16_t>(crc);
  }
  return table;
}

constexpr std::array<std::uint16_t, 256> kCrc16Table = make_crc16_table();
static_assert(kCrc16Table[1] == 0x1021 && kCrc16Table[255] == 0x1ef0);

// Slicing-by-8 (the technique of Intel's "slicing-by-8" CRC paper, Kounavis & Berry 2005, here
// for a 16-bit MSB-first CRC): table k holds the CRC of byte i followed by k zero bytes, so eight
// bytes fold into the CRC with eight independent lookups instead of a chain of eight dependent
// ones — a table load's latency per byte was the whole cost. By linearity of the CRC:
//   crc' = T7[(crc >> 8) ^ b0] ^ T6[(crc & 0xff) ^ b1] ^ T5[b2] ^ T4[b3] ^ T3[b4] ^ T2[b5]
//          ^ T1[b6] ^ T0[b7]
// — the same value as eight steps of the bytewise loop (tests/hash/crc_test.cc compares them on
// random inputs of every length up to 300 bytes).
using Crc16Slices = std::array<std::array<std::uint16_t, 256>, 8>;

constexpr Crc16Slices make_crc16_slices() {
  Crc16Slices t{};
  t[0] = kCrc16Table;
  for (std::size_t k = 1; k < 8; ++k) {
    for (unsigned i = 0; i < 256; ++i) {
      const unsigned prev = t[k - 1][i];  // then one zero byte more
      t[k][i] = static_cast<std::uint16_t>((prev << 8) ^ kCrc16Table[(prev >> 8) & 0xffu]);
    }
  }
  return t;
}

constexpr Crc16Slices kCrc16Slices = make_crc16_slices();

}  // namespace

// CRC-32/IEEE (poly 04C11DB7 reflected, init and xorout FFFFFFFF): "123456789" -> CBF43926.
// crc32_z takes a size_t length, so inputs above 4 GiB need no chunking.
std::uint32_t crc32(std::string_view data) noexcept {
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  return static_cast<std::uint32_t>(::crc32_z(0L, p, data.size()));
}

std::uint16_t crc16_xmodem(std::string_view data) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t n = data.size();
  unsigned crc = 0;
  const Crc16Slices& t = kCrc16Slices;
  for (; n >= 8; n -= 8, p += 8) {
    crc = t[7][(crc >> 8) ^ p[0]] ^ t[6][(crc & 0xffu) ^ p[1]] ^ t[5][p[2]] ^ t[4][p[3]] ^
          t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; n > 0; --n, ++p) crc = ((crc << 8) ^ kCrc16Table[((crc >> 8) ^ *p) & 0xffu]) & 0xffffu;
  return static_cast<std::uint16_t>(crc);
}

std::uint16_t redis_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16_xmodem(hash_tag(key, '{', '}')) & 0x3FFFu);
}

}  // namespace chash::hash
