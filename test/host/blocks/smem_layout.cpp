// Tests of blocks/smem_layout.hpp: every address of a layout stays inside its
// buffer, the 128-byte swizzle is a permutation of the element slots equal to
// the XOR-of-address-bits form wgmma/TMA use, 16-byte chunks stay contiguous,
// and the multi-buffer ring's offsets, alignment and budgets.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "glukit/blocks/smem_layout.hpp"

using glukit::MultiBufferPlan;
using glukit::PaddedRows;
using glukit::Swizzle128B;

namespace {

/// The 128-byte swizzle as an address-bit operation, written independently:
/// in the unswizzled panel address, bits [7, 10) (the row within the 8-row
/// atom) are XORed into bits [4, 7) (the 16-byte chunk within the row).
std::uint32_t swizzle128_by_bits(int rows, int row, int col) {
  const int panel = col / 64;
  const std::uint32_t linear = static_cast<std::uint32_t>(panel * rows * 128 + row * 128 + (col % 64) * 2);
  return linear ^ (((linear >> 7) & 7u) << 4);
}

/// Checks every (row, col) of a layout: in bounds, element-aligned, no two
/// elements on one slot, and each 16-byte chunk (8 fp16 starting at a column
/// multiple of 8) contiguous. Returns "" or the first defect.
template <class L, bool ChunksAligned>
std::string check_layout(std::size_t& elements_seen) {
  std::vector<std::uint8_t> used(static_cast<std::size_t>(L::bytes), 0);
  elements_seen = 0;
  for (int r = 0; r < L::rows; ++r)
    for (int c = 0; c < L::cols; ++c) {
      const std::uint32_t off = L::offset(r, c);
      const std::string at = "(" + std::to_string(r) + ", " + std::to_string(c) + ") -> " + std::to_string(off);
      if (off + L::elem_bytes > static_cast<std::uint32_t>(L::bytes)) return at + ": outside the buffer";
      if (off % L::elem_bytes != 0) return at + ": not element aligned";
      for (int b = 0; b < L::elem_bytes; ++b) {
        if (used[off + b] != 0) return at + ": slot already used";
        used[off + b] = 1;
      }
      ++elements_seen;
      if (c % 8 == 0) {
        if (ChunksAligned && off % 16 != 0) return at + ": chunk not 16-byte aligned";
        for (int i = 1; i < 8 && c + i < L::cols; ++i)
          if (L::offset(r, c + i) != off + static_cast<std::uint32_t>(i * L::elem_bytes))
            return at + ": chunk not contiguous at +" + std::to_string(i);
      }
    }
  return {};
}

}  // namespace

using SwizzleLayouts = std::tuple<Swizzle128B<8, 64>, Swizzle128B<64, 64>, Swizzle128B<128, 64>,
                                  Swizzle128B<64, 128>, Swizzle128B<32, 256>, Swizzle128B<16, 192>>;

TEMPLATE_LIST_TEST_CASE("Swizzle128B is a permutation of its element slots", "[layout]", SwizzleLayouts) {
  using L = TestType;
  INFO("Swizzle128B<" << L::rows << ", " << L::cols << ">");
  STATIC_REQUIRE(L::bytes == L::rows * L::cols * 2);  // no padding: a bijection onto the slots
  STATIC_REQUIRE(L::alignment == 1024);
  STATIC_REQUIRE(L::panel_bytes % 1024 == 0);
  std::size_t n = 0;
  const std::string err = check_layout<L, true>(n);
  INFO(err);
  CHECK(err.empty());
  CHECK(n * 2 == static_cast<std::size_t>(L::bytes));  // every slot holds exactly one element
}

TEMPLATE_LIST_TEST_CASE("Swizzle128B equals the address-bit XOR form", "[layout]", SwizzleLayouts) {
  using L = TestType;
  int mismatches = 0;
  for (int r = 0; r < L::rows; ++r)
    for (int c = 0; c < L::cols; ++c)
      if (L::offset(r, c) != swizzle128_by_bits(L::rows, r, c)) ++mismatches;
  INFO("Swizzle128B<" << L::rows << ", " << L::cols << ">");
  CHECK(mismatches == 0);
}

TEMPLATE_LIST_TEST_CASE("Swizzle128B spreads a column chunk of 8 rows over 8 chunk slots", "[layout]",
                        SwizzleLayouts) {
  // Eight threads reading the same 16-byte column chunk of rows r0..r0+7 hit
  // eight different 16-byte positions of the 128-byte row: no bank conflict.
  using L = TestType;
  int bad = 0;
  for (int r0 = 0; r0 < L::rows; r0 += 8)
    for (int c = 0; c < L::cols; c += 8) {
      unsigned mask = 0;
      for (int r = r0; r < r0 + 8; ++r) mask |= 1u << ((L::offset(r, c) / 16) % 8);
      if (mask != 0xffu) ++bad;
    }
  CHECK(bad == 0);
}

TEMPLATE_LIST_TEST_CASE("Swizzle128B offset in parts: (row_key ^ chunk_key) + panel_key, from any 1024-aligned base",
                        "[layout]", SwizzleLayouts) {
  // The sm90a epilogue keeps one row address per lane and reaches each chunk with an XOR
  // and an immediate: base + offset(r, c) == ((base + row_key(r)) ^ chunk_key(c)) +
  // panel_key(c) for every chunk start c, and the chunk's XOR splits over disjoint bits
  // (chunk_key(c1 + c2) == chunk_key(c1) ^ chunk_key(c2) for c1 a multiple of 16 inside a
  // panel and c2 in {0, 8}), as fragment_row / fragment_address use it.
  using L = TestType;
  int mismatches = 0;
  for (const std::uint32_t base : {0u, 1024u, 7u * 1024u, 0x3fc00u})
    for (int r = 0; r < L::rows; ++r)
      for (int c = 0; c < L::cols; c += 8) {
        if (base + L::offset(r, c) != ((base + L::row_key(r)) ^ L::chunk_key(c)) + L::panel_key(c)) ++mismatches;
        const int c1 = c / 16 * 16, c2 = c % 16;
        if (L::chunk_key(c) != (L::chunk_key(c1) ^ L::chunk_key(c2))) ++mismatches;
      }
  INFO("Swizzle128B<" << L::rows << ", " << L::cols << ">");
  CHECK(mismatches == 0);
}

TEST_CASE("Swizzle128B hand-computed offsets") {
  using L = Swizzle128B<16, 128>;
  CHECK(L::offset(0, 0) == 0);
  CHECK(L::offset(0, 8) == 16);       // row 0: no swizzle
  CHECK(L::offset(1, 0) == 128 + 16); // row 1: chunk 0 -> 1
  CHECK(L::offset(1, 8) == 128 + 0);  // chunk 1 -> 0
  CHECK(L::offset(7, 0) == 7 * 128 + 7 * 16);
  CHECK(L::offset(8, 0) == 8 * 128);  // the atom repeats every 8 rows
  CHECK(L::offset(3, 13) == 3 * 128 + ((1 ^ 3) * 16) + 5 * 2);
  CHECK(L::offset(0, 64) == 16 * 128);  // second panel starts after Rows * 128 bytes
  CHECK(L::offset(2, 64 + 17) == 16 * 128 + 2 * 128 + ((2 ^ 2) * 16) + 1 * 2);
  CHECK(L::bytes == 4096);
}

using PaddedLayouts = std::tuple<PaddedRows<128, 32, 8>, PaddedRows<32, 256, 8>, PaddedRows<128, 64, 0>,
                                 PaddedRows<32, 128, 16>, PaddedRows<16, 16, 1>, PaddedRows<5, 24, 3>>;

TEMPLATE_LIST_TEST_CASE("PaddedRows keeps every element inside its buffer, once", "[layout]", PaddedLayouts) {
  using L = TestType;
  INFO("PaddedRows<" << L::rows << ", " << L::cols << ", " << L::pad << ">");
  STATIC_REQUIRE(L::bytes == L::rows * (L::cols + L::pad) * 2);
  std::size_t n = 0;
  const std::string err = check_layout<L, L::pad % 8 == 0>(n);
  INFO(err);
  CHECK(err.empty());
  CHECK(n == static_cast<std::size_t>(L::rows * L::cols));
  // rows are (cols + pad) elements apart; the last element ends before the padding
  for (int r = 0; r + 1 < L::rows; ++r)
    CHECK(L::offset(r + 1, 0) - L::offset(r, 0) == static_cast<std::uint32_t>((L::cols + L::pad) * 2));
  CHECK(L::offset(L::rows - 1, L::cols - 1) + 2 + L::pad * 2 == static_cast<std::uint32_t>(L::bytes));
  // 16-byte chunks start 16-byte aligned when the padding is a whole chunk
  if constexpr (L::pad % 8 == 0) {
    int misaligned = 0;
    for (int r = 0; r < L::rows; ++r)
      for (int c = 0; c < L::cols; c += 8) misaligned += L::offset(r, c) % 16 != 0;
    CHECK(misaligned == 0);
  }
}

TEST_CASE("PaddedRows: padding shifts rows across LDS banks") {
  // 4-byte banks, 64 of them (CDNA LDS): with 8 fp16 of padding per 32-col row,
  // column 0 of consecutive rows lands in banks 20 apart instead of 16.
  using L = PaddedRows<128, 32, 8>;
  CHECK((L::offset(1, 0) / 4) % 64 == 20);
  CHECK((L::offset(2, 0) / 4) % 64 == 40);
  using Unpadded = PaddedRows<128, 32, 0>;
  CHECK((Unpadded::offset(4, 0) / 4) % 64 == 0);  // without padding, row 4 aliases row 0
}

TEST_CASE("align_up") {
  CHECK(glukit::align_up(0, 16) == 0);
  CHECK(glukit::align_up(1, 16) == 16);
  CHECK(glukit::align_up(16, 16) == 16);
  CHECK(glukit::align_up(1025, 1024) == 2048);
}

TEST_CASE("MultiBufferPlan: sm90a-style ring of swizzled A and B tiles") {
  using A = Swizzle128B<128, 64>;  // 16 KiB
  using B = Swizzle128B<64, 128>;  // 16 KiB
  using Ring = MultiBufferPlan<3, A, B>;
  STATIC_REQUIRE(Ring::num_buffers == 3);
  STATIC_REQUIRE(Ring::max_alignment == 1024);
  STATIC_REQUIRE(Ring::member_offset<0>() == 0);
  STATIC_REQUIRE(Ring::member_offset<1>() == 16384);
  STATIC_REQUIRE(Ring::stage_bytes == 32768);
  STATIC_REQUIRE(Ring::bytes == 98304);
  CHECK(Ring::stage_offset(0) == 0);
  CHECK(Ring::stage_offset(1) == 32768);
  CHECK(Ring::stage_offset(2) == 65536);
  CHECK(Ring::fits(232448));
  CHECK(Ring::fits(98304));
  CHECK_FALSE(Ring::fits(98303));
  CHECK(Ring::fits(98304 + 1024, 1024));
  CHECK_FALSE(Ring::fits(98304 + 1023, 1024));
}

TEST_CASE("MultiBufferPlan: mixed alignments, hand-computed") {
  SECTION("a 16-byte-aligned tile before a 1024-byte-aligned one") {
    using Small = PaddedRows<5, 8, 0>;   // 80 bytes, align 16
    using Big = Swizzle128B<8, 64>;      // 1024 bytes, align 1024
    using Ring = MultiBufferPlan<2, Small, Big>;
    STATIC_REQUIRE(Ring::member_offset<0>() == 0);
    STATIC_REQUIRE(Ring::member_offset<1>() == 1024);
    STATIC_REQUIRE(Ring::stage_bytes == 2048);  // rounded so every stage keeps the 1024 alignment
    STATIC_REQUIRE(Ring::bytes == 4096);
  }
  SECTION("two 16-byte-aligned tiles") {
    using T0 = PaddedRows<3, 8, 0>;  // 48 bytes
    using T1 = PaddedRows<1, 8, 1>;  // 18 bytes
    using Ring = MultiBufferPlan<4, T0, T1>;
    STATIC_REQUIRE(Ring::member_offset<1>() == 48);
    STATIC_REQUIRE(Ring::stage_bytes == 80);  // 66 rounded up to 16
    STATIC_REQUIRE(Ring::bytes == 320);
  }
}

using Rings = std::tuple<MultiBufferPlan<2, Swizzle128B<128, 64>, Swizzle128B<64, 128>>,
                         MultiBufferPlan<3, Swizzle128B<128, 64>, Swizzle128B<64, 256>>,
                         MultiBufferPlan<3, PaddedRows<128, 32, 8>, PaddedRows<32, 256, 8>>,
                         MultiBufferPlan<2, PaddedRows<5, 24, 3>, Swizzle128B<8, 64>, PaddedRows<7, 8, 1>>,
                         MultiBufferPlan<1, PaddedRows<64, 64, 0>>>;

namespace {
/// Offsets, sizes and alignments of a ring's members, for the generic checks.
template <int N, class... Ls>
std::string check_ring_of(MultiBufferPlan<N, Ls...>*) {
  using Ring = MultiBufferPlan<N, Ls...>;
  const int align[] = {Ls::alignment...};
  const int size[] = {Ls::bytes...};
  std::vector<int> offset;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (offset.push_back(Ring::template member_offset<static_cast<int>(I)>()), ...);
  }(std::index_sequence_for<Ls...>{});
  for (int s = 0; s < N; ++s)
    for (std::size_t i = 0; i < offset.size(); ++i) {
      const int begin = Ring::stage_offset(s) + offset[i];
      const int end = begin + size[i];
      const std::string at = "stage " + std::to_string(s) + " member " + std::to_string(i);
      if (begin % align[i] != 0) return at + ": misaligned";
      if (end > Ring::stage_offset(s) + Ring::stage_bytes) return at + ": runs into the next stage";
      if (end > Ring::bytes) return at + ": outside the ring";
      if (i + 1 < offset.size() && end > Ring::stage_offset(s) + offset[i + 1])
        return at + ": overlaps the next member";
    }
  if (Ring::stage_bytes % Ring::max_alignment != 0) return "stage size breaks the alignment";
  if (Ring::bytes != N * Ring::stage_bytes) return "bytes != stages * stage_bytes";
  return {};
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("MultiBufferPlan: members aligned, disjoint, inside their stage", "[layout]", Rings) {
  const std::string err = check_ring_of(static_cast<TestType*>(nullptr));
  INFO(err);
  CHECK(err.empty());
}
