// Tests of arch/tags.hpp: each arch tag has arch_traits with the chip's
// numbers the plans rely on.
#include <catch2/catch.hpp>

#include <string>

#include "glukit/arch/tags.hpp"

using glukit::arch_traits;
namespace ga = glukit::arch;

TEST_CASE("arch tags are ArchTags with names and backends") {
  STATIC_REQUIRE(glukit::ArchTag<ga::sm90a>);
  STATIC_REQUIRE(glukit::ArchTag<ga::gfx942>);
  STATIC_REQUIRE(glukit::ArchTag<ga::gfx950>);
  CHECK(std::string(arch_traits<ga::sm90a>::name()) == "sm90a");
  CHECK(std::string(arch_traits<ga::gfx942>::name()) == "gfx942");
  CHECK(std::string(arch_traits<ga::gfx950>::name()) == "gfx950");
  STATIC_REQUIRE(arch_traits<ga::sm90a>::backend == glukit::Backend::cuda);
  STATIC_REQUIRE(arch_traits<ga::gfx942>::backend == glukit::Backend::hip);
  STATIC_REQUIRE(arch_traits<ga::gfx950>::backend == glukit::Backend::hip);
}

TEST_CASE("sm90a traits") {
  using T = arch_traits<ga::sm90a>;
  STATIC_REQUIRE(T::wave_size == 32);
  STATIC_REQUIRE(T::warpgroup_size == 4 * T::wave_size);
  STATIC_REQUIRE(T::smem_bytes_per_block == 227 * 1024);
  STATIC_REQUIRE(T::smem_bytes_per_sm == 228 * 1024);
  STATIC_REQUIRE(T::chiplets == 1);
  STATIC_REQUIRE(T::mma_m == 64);
  STATIC_REQUIRE(T::mma_k == 16);
  STATIC_REQUIRE(T::mma_n_max == 256);
  STATIC_REQUIRE(T::cc_major == 9);
  STATIC_REQUIRE(T::compute_units_hint == 132);
}

TEST_CASE("CDNA traits") {
  using T3 = arch_traits<ga::gfx942>;
  using T4 = arch_traits<ga::gfx950>;
  STATIC_REQUIRE(T3::wave_size == 64);
  STATIC_REQUIRE(T4::wave_size == 64);
  STATIC_REQUIRE(T3::chiplets == 8);
  STATIC_REQUIRE(T4::chiplets == 8);
  STATIC_REQUIRE(T3::smem_bytes_per_block == 64 * 1024);
  STATIC_REQUIRE(T4::smem_bytes_per_block == 160 * 1024);
  STATIC_REQUIRE(T3::mma_k == 16);  // v_mfma_f32_16x16x16_f16
  STATIC_REQUIRE(T4::mma_k == 32);  // v_mfma_f32_16x16x32_f16
  STATIC_REQUIRE(T3::mma_m == 16);
  STATIC_REQUIRE(T3::mma_n == 16);
  STATIC_REQUIRE(T3::direct_to_lds_max_bytes == 4);
  STATIC_REQUIRE(T4::direct_to_lds_max_bytes == 16);
}
