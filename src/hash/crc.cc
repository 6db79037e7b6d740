// SPDX-License-Identifier: Apache-2.0
// CRCs: CRC-32/IEEE from zlib for long inputs and written here for short ones (keys), CRC-16/XMODEM
// written here (as Redis Cluster's crc16.c has it).
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

// ---- CRC-32/IEEE, inputs below kCrc32ZlibFrom bytes ---------------------------------------------
// Name       : CRC-32/ISO-HDLC (zlib's crc32, Go's crc32.ChecksumIEEE)
// Poly       : 04C11DB7, reflected EDB88320
// Init       : FFFFFFFF
// RefIn/Out  : true / true
// XorOut     : FFFFFFFF
// Check      : "123456789" -> CBF43926
//
// Slicing-by-16 for the reflected (LSB-first) CRC. Table k (k < 16) maps byte i to the register
// that byte i followed by k zero bytes leaves, starting from register 0. The register is linear in
// its start value and in the bytes, so after n <= 16 bytes b0..b(n-1) from the start FFFFFFFF it is
//   I[n] ^ T(n-1)[b0] ^ T(n-2)[b1] ^ ... ^ T0[b(n-1)]
// where I[n] (kCrc32Init) is the register n zero bytes leave from FFFFFFFF. The n lookups are
// independent: no chain of dependent loads as in the bytewise loop, and with the tables laid end to
// end, byte j reads at a fixed distance (j tables) below table n-1 — so a key of up to 16 bytes is
// one jump into a fall-through switch and two instructions a byte (crc32_sum); the 16 tables take
// 16 KiB, half of a common 32 KiB L1 data cache. Longer inputs take a head of 1 to 16 bytes that
// way, then 16-byte steps folding the register into their first four bytes (the same identity with
// the register as four more bytes). tests/hash/crc_test.cc compares with zlib on random inputs of
// every length up to 300 bytes at every alignment, and around kCrc32ZlibFrom.
constexpr std::uint32_t kCrc32Poly = 0xEDB88320u;
constexpr std::size_t kCrc32Tables = 16;
constexpr std::size_t kCrc32ZlibFrom = 512;

using Crc32Slices = std::array<std::uint32_t, kCrc32Tables * 256>;  // table k at [256k, 256k + 256)

constexpr Crc32Slices make_crc32_slices() {
  Crc32Slices t{};
  for (unsigned i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) != 0 ? (crc >> 1) ^ kCrc32Poly : crc >> 1;
    t[i] = crc;
  }
  for (std::size_t k = 1; k < kCrc32Tables; ++k) {
    for (unsigned i = 0; i < 256; ++i) {
      const std::uint32_t prev = t[(k - 1) * 256 + i];  // then one zero byte more
      t[k * 256 + i] = (prev >> 8) ^ t[prev & 0xffu];
    }
  }
  return t;
}

alignas(64) constexpr Crc32Slices kCrc32Slices = make_crc32_slices();
// zlib's crc_table[0][1] and [0][255].
static_assert(kCrc32Slices[1] == 0x77073096u && kCrc32Slices[255] == 0x2D02EF8Du);

constexpr std::array<std::uint32_t, kCrc32Tables + 1> make_crc32_init() {
  std::array<std::uint32_t, kCrc32Tables + 1> init{};
  std::uint32_t reg = 0xFFFFFFFFu;
  for (std::size_t n = 0; n <= kCrc32Tables; ++n) {
    init[n] = reg;
    for (int bit = 0; bit < 8; ++bit) reg = (reg & 1u) != 0 ? (reg >> 1) ^ kCrc32Poly : reg >> 1;
  }
  return init;
}

constexpr std::array<std::uint32_t, kCrc32Tables + 1> kCrc32Init = make_crc32_init();
// One byte: "a" -> E8B7BE43 (I[1] ^ T0['a'], complemented).
static_assert(~(kCrc32Init[1] ^ kCrc32Slices['a']) == 0xE8B7BE43u);

// T(n-1)[p[0]] ^ T(n-2)[p[1]] ^ ... ^ T0[p[n-1]] for n <= 16: enter the switch at n and fall
// through to byte 0. Two accumulators halve the chain of xors.
[[gnu::always_inline]] inline std::uint32_t crc32_sum(const unsigned char* p,
                                                      std::size_t n) noexcept {
  const std::uint32_t* t = kCrc32Slices.data() + (n == 0 ? 0 : (n - 1) * 256);  // table n-1
  std::uint32_t a = 0, b = 0;
  // One line a byte shows the pattern.
  // clang-format off
  switch (n) {
    case 16: a ^= t[p[15] - 15 * 256]; [[fallthrough]];
    case 15: b ^= t[p[14] - 14 * 256]; [[fallthrough]];
    case 14: a ^= t[p[13] - 13 * 256]; [[fallthrough]];
    case 13: b ^= t[p[12] - 12 * 256]; [[fallthrough]];
    case 12: a ^= t[p[11] - 11 * 256]; [[fallthrough]];
    case 11: b ^= t[p[10] - 10 * 256]; [[fallthrough]];
    case 10: a ^= t[p[9] - 9 * 256]; [[fallthrough]];
    case 9: b ^= t[p[8] - 8 * 256]; [[fallthrough]];
    case 8: a ^= t[p[7] - 7 * 256]; [[fallthrough]];
    case 7: b ^= t[p[6] - 6 * 256]; [[fallthrough]];
    case 6: a ^= t[p[5] - 5 * 256]; [[fallthrough]];
    case 5: b ^= t[p[4] - 4 * 256]; [[fallthrough]];
    case 4: a ^= t[p[3] - 3 * 256]; [[fallthrough]];
    case 3: b ^= t[p[2] - 2 * 256]; [[fallthrough]];
    case 2: a ^= t[p[1] - 1 * 256]; [[fallthrough]];
    case 1: b ^= t[p[0]]; [[fallthrough]];
    default: break;
  }
  // clang-format on
  return a ^ b;
}

// CRC-32/IEEE of n bytes by the tables (any n; crc32() sends the short ones here).
[[gnu::always_inline]] inline std::uint32_t crc32_short(const unsigned char* p,
                                                        std::size_t n) noexcept {
  if (n <= kCrc32Tables) return ~(kCrc32Init[n] ^ crc32_sum(p, n));
  const std::size_t head = ((n - 1) & (kCrc32Tables - 1)) + 1;  // 1..16, the rest whole steps
  std::uint32_t reg = kCrc32Init[head] ^ crc32_sum(p, head);
  p += head;
  n -= head;
  const Crc32Slices& t = kCrc32Slices;
  for (; n > 0; n -= 16, p += 16) {
    // The register joins the step's first four bytes.
    const std::uint32_t x = reg ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                                   std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
    reg = t[15 * 256 + (x & 0xffu)] ^ t[14 * 256 + ((x >> 8) & 0xffu)] ^
          t[13 * 256 + ((x >> 16) & 0xffu)] ^ t[12 * 256 + (x >> 24)] ^ crc32_sum(p + 4, 12);
  }
  return ~reg;
}

}  // namespace

// CRC-32/IEEE (poly 04C11DB7 reflected, init and xorout FFFFFFFF): "123456789" -> CBF43926.
// Keys are short, and for them zlib's crc32_z is slow: below its braided loop's minimum it goes a
// byte at a time, a chain of dependent table loads (zlib 1.2.13, Debian's). Measured in a loop of
// calls on bench/bindings/go's keys ("user:N", every tenth "ключ-N-ü€": 6 to 20 bytes), ns a key:
// zlib 10.6, slicing-by-8 (8-byte steps, then the rest in one step) 6.4, the slicing-by-16 above
// 3.9; on random bytes of 10 / 16 / 64 / 256 / 512 bytes zlib 8.9 / 16.8 / 106 / 153 / 243, ours
// 3.6 / 5.2 / 17 / 89 / 185; from about 640 bytes zlib's braids win (1 KiB: 347 vs 380). So
// inputs below kCrc32ZlibFrom bytes are ours and longer ones zlib's. (A PCLMULQDQ fold of keys of
// 4 to 32 bytes, tried too, took 6.5 to 7.5 ns whatever the length: slower for short keys.)
// crc32_z takes a size_t length, so inputs above 4 GiB need no chunking.
std::uint32_t crc32(std::string_view data) noexcept {
  if (data.size() < kCrc32ZlibFrom) {
    return crc32_short(reinterpret_cast<const unsigned char*>(data.data()), data.size());
  }
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
