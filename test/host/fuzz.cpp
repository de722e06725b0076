// Host fuzz of the plans (CI): random tile grids, group sizes, chiplet counts,
// chunks and persistent worker counts (the schedule must visit every tile
// exactly once); random layout coordinates (inside the buffer, and the map is
// one-to-one on a random sample); random argument sets checked against an
// independent statement of the rules. The seed is printed with every failure.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "glukit/blocks/smem_layout.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/ops/addmm_glu.hpp"

namespace {

std::uint64_t seed_of_run() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

}  // namespace

TEST_CASE("fuzz: persistent grouped + chiplet schedules cover every tile once", "[fuzz]") {
  const std::uint64_t seed = seed_of_run();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const auto draw = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 2000; ++round) {
    const std::int64_t m = draw(1, 5000), n = draw(1, 30000);
    const int tile_m = static_cast<int>(64 * draw(1, 4)), tile_n = static_cast<int>(16 * draw(1, 16));
    const std::int64_t group = draw(1, 16);
    const int chiplets = static_cast<int>(std::int64_t{1} << draw(0, 3)), chunk = static_cast<int>(draw(1, 8));
    const std::int64_t workers = draw(0, 400);
    const auto plan = glukit::make_tile_schedule(m, n, tile_m, tile_n, group, chiplets, chunk, workers);
    INFO("round " << round << " m=" << m << " n=" << n << " tile " << tile_m << "x" << tile_n << " group " << group
                  << " chiplets " << chiplets << " chunk " << chunk << " workers " << workers);
    REQUIRE(plan.tiles() == glukit::ceil_div(m, tile_m) * glukit::ceil_div(n, tile_n));
    std::vector<char> seen(static_cast<std::size_t>(plan.tiles()), 0);
    std::int64_t visits = 0;
    for (std::int64_t w = 0; w < plan.workers; ++w) {
      std::int64_t mine = 0;
      for (std::int64_t slot = plan.first_slot(w); slot < plan.tiles(); slot += plan.stride(), ++mine) {
        const glukit::TileCoord t = plan.tile(slot);
        REQUIRE(t.m >= 0);
        REQUIRE(t.m < plan.grid.tiles_m);
        REQUIRE(t.n >= 0);
        REQUIRE(t.n < plan.grid.tiles_n);
        char& s = seen[static_cast<std::size_t>(t.m * plan.grid.tiles_n + t.n)];
        REQUIRE(s == 0);
        s = 1;
        ++visits;
      }
      REQUIRE(mine == plan.tiles_of(w));
    }
    REQUIRE(visits == plan.tiles());
  }
}

TEST_CASE("fuzz: layout addresses stay inside the buffer and do not collide", "[fuzz]") {
  const std::uint64_t seed = seed_of_run();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const auto check = [&](auto layout) {
    using L = decltype(layout);
    std::set<std::uint32_t> used;
    std::set<std::pair<int, int>> coords;
    for (int i = 0; i < 4000; ++i) {
      const int r = std::uniform_int_distribution<int>(0, L::rows - 1)(rng);
      const int c = std::uniform_int_distribution<int>(0, L::cols - 1)(rng);
      const std::uint32_t off = L::offset(r, c);
      INFO(L::name() << " " << L::rows << "x" << L::cols << " (" << r << ", " << c << ") -> " << off);
      REQUIRE(off + L::elem_bytes <= static_cast<std::uint32_t>(L::bytes));
      REQUIRE(off % L::elem_bytes == 0);
      if (coords.insert({r, c}).second) REQUIRE(used.insert(off).second);  // new element, new address
    }
  };
  check(glukit::Swizzle128B<128, 64>{});
  check(glukit::Swizzle128B<64, 192>{});
  check(glukit::Swizzle128B<128, 256>{});
  check(glukit::Swizzle128B<8, 512>{});
  check(glukit::PaddedRows<32, 256, 8>{});
  check(glukit::PaddedRows<128, 32, 4>{});
}

TEST_CASE("fuzz: validate_arguments agrees with an independent statement of the rules", "[fuzz]") {
  const std::uint64_t seed = seed_of_run();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  alignas(16) static glukit::half_t storage[64];
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const auto ptr = [&]() -> const glukit::half_t* {
    switch (pick(0, 3)) {
      case 0: return nullptr;
      case 1: return storage + 1;  // 2-byte aligned only
      default: return storage;
    }
  };
  const auto dim = [&]() -> std::int64_t {
    switch (pick(0, 5)) {
      case 0: return -pick(1, 10);
      case 1: return 0;
      case 2: return std::int64_t{1} << 31;
      default: return pick(1, 300);
    }
  };
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    glukit::AddmmGluArgs p;
    p.a = ptr(), p.b = ptr(), p.bias = ptr(), p.y = ptr();
    p.out = const_cast<glukit::half_t*>(ptr());
    p.m = dim(), p.n = dim(), p.k = dim();
    if (pick(0, 1)) p.k = 8 * pick(0, 40);
    const auto ld = [&](std::int64_t row) { return pick(0, 2) ? (row + 7) / 8 * 8 + 8 * pick(0, 3) : dim(); };
    p.lda = ld(p.k), p.ldb = ld(p.n), p.ldy = ld(p.n), p.ldo = ld(p.n);

    const auto aligned = [](const void* q) { return (reinterpret_cast<std::uintptr_t>(q) & 15u) == 0; };
    const std::int64_t lim = std::int64_t{1} << 31;
    bool valid = p.m >= 0 && p.n >= 0 && p.k >= 0 && p.m < lim && p.n < lim && p.k < lim;
    if (valid && p.m > 0 && p.n > 0) {
      const bool uses_ab = p.k > 0;
      valid = p.k % 8 == 0 && p.y && p.out && aligned(p.y) && aligned(p.out) && (!p.bias || aligned(p.bias)) &&
              p.ldy >= p.n && p.ldo >= p.n && p.ldy % 8 == 0 && p.ldo % 8 == 0 && p.ldy < lim && p.ldo < lim &&
              (!uses_ab || (p.a && p.b && aligned(p.a) && aligned(p.b) && p.lda >= p.k && p.ldb >= p.n &&
                            p.lda % 8 == 0 && p.ldb % 8 == 0 && p.lda < lim && p.ldb < lim));
    }
    const glukit::Status st = glukit::validate_arguments(p);
    INFO("m=" << p.m << " n=" << p.n << " k=" << p.k << " lda=" << p.lda << " ldb=" << p.ldb << " ldy=" << p.ldy
              << " ldo=" << p.ldo << " message: " << st.message());
    REQUIRE(st.ok() == valid);
    if (!st.ok()) REQUIRE(std::string(st.message()).find(':') != std::string::npos);  // names the argument
    accepted += st.ok();
  }
  CHECK(accepted > 1000);  // the draw reaches valid problems, not only rejections
}
