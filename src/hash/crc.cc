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
// Table-driven, MSB first: table[i] is the CRC of the single byte i; the table is computed at
// compile time from the polynomial rather than pasted, so it cannot carry a typo.
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

}  // namespace

// CRC-32/IEEE (poly 04C11DB7 reflected, init and xorout FFFFFFFF): "123456789" -> CBF43926.
// crc32_z takes a size_t length, so inputs above 4 GiB need no chunking.
std::uint32_t crc32(std::string_view data) noexcept {
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  return static_cast<std::uint32_t>(::crc32_z(0L, p, data.size()));
}

std::uint16_t crc16_xmodem(std::string_view data) noexcept {
  std::uint16_t crc = 0;
  for (const char ch : data) {
    const auto byte = static_cast<unsigned char>(ch);
    crc = static_cast<std::uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ byte) & 0xffu]);
  }
  return crc;
}

}  // namespace chash::hash
