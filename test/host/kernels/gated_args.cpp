// Tests of ops/gated_projection.hpp: the gate/up row maps of both weight orders are
// bijections onto W's 2n rows, the one-time conversion of a stacked weight agrees
// with them, and every rule of validate_gated_arguments names its argument.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "glukit/ops/gated_projection.hpp"

using glukit::GateLayout;
using glukit::GatedProjectionArgsT;
using glukit::Status;
using i64 = std::int64_t;

namespace {
alignas(16) glukit::bfloat16_t storage[64];
GatedProjectionArgsT<glukit::bfloat16_t> valid() {
  GatedProjectionArgsT<glukit::bfloat16_t> p;
  p.a = storage;
  p.w = storage + 8;
  p.bias = storage + 16;
  p.out = storage + 24;
  p.m = 2048;
  p.n = 14336;
  p.k = 4096;
  p.lda = 4096;
  p.ldw = 4104;
  p.ldo = 14336;
  return p;
}
bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }
}  // namespace

TEST_CASE("gate and up rows cover W's 2n rows once, in both orders") {
  for (const GateLayout layout : {GateLayout::stacked, GateLayout::interleaved}) {
    for (const i64 n : {i64{64}, i64{192}, i64{14336}}) {
      std::vector<int> hits(static_cast<std::size_t>(2 * n), 0);
      for (i64 j = 0; j < n; ++j) {
        const i64 g = glukit::gate_row(j, n, layout), u = glukit::up_row(j, n, layout);
        REQUIRE((g >= 0 && g < 2 * n && u >= 0 && u < 2 * n));
        ++hits[static_cast<std::size_t>(g)];
        ++hits[static_cast<std::size_t>(u)];
      }
      for (const int h : hits) REQUIRE(h == 1);
    }
  }
  // Hand-computed: stacked j / n + j; interleaved blocks of 64: gate 0..63 -> rows 0..63,
  // up 0..63 -> rows 64..127, gate 64 -> row 128.
  CHECK(glukit::up_row(5, 100, GateLayout::stacked) == 105);
  CHECK(glukit::gate_row(63, 128, GateLayout::interleaved) == 63);
  CHECK(glukit::up_row(0, 128, GateLayout::interleaved) == 64);
  CHECK(glukit::gate_row(64, 128, GateLayout::interleaved) == 128);
  CHECK(glukit::up_row(127, 128, GateLayout::interleaved) == 255);
}

TEST_CASE("interleave_gate_up_rows moves each stacked row where the interleaved map reads it") {
  const i64 n = 128, k = 3, ld = 4;
  std::vector<int> stacked(static_cast<std::size_t>(2 * n * ld)), inter(stacked.size(), -1);
  for (i64 r = 0; r < 2 * n; ++r)
    for (i64 c = 0; c < ld; ++c) stacked[r * ld + c] = static_cast<int>(r * 10 + c);
  glukit::interleave_gate_up_rows(stacked.data(), inter.data(), n, k, ld);
  for (i64 j = 0; j < n; ++j)
    for (i64 c = 0; c < k; ++c) {
      REQUIRE(inter[glukit::gate_row(j, n, GateLayout::interleaved) * ld + c] == stacked[j * ld + c]);
      REQUIRE(inter[glukit::up_row(j, n, GateLayout::interleaved) * ld + c] == stacked[(n + j) * ld + c]);
    }
  std::vector<int> bias(2 * n), bias_i(2 * n);  // the bias: rows of one element
  for (i64 r = 0; r < 2 * n; ++r) bias[r] = static_cast<int>(r);
  glukit::interleave_gate_up_rows(bias.data(), bias_i.data(), n, 1, 1);
  CHECK(bias_i[64] == n);  // the first up bias
}

TEST_CASE("validate_gated_arguments: a valid problem, and each broken rule named") {
  CHECK(glukit::validate_gated_arguments(valid()).ok());
  struct Rule {
    const char* what;
    void (*breaks)(GatedProjectionArgsT<glukit::bfloat16_t>&);
    const char* names;
  };
  const Rule rules[] = {
      {"negative m", [](auto& p) { p.m = -1; }, "m:"},
      {"n past 2^30", [](auto& p) { p.n = i64{1} << 30; }, "n:"},
      {"interleaved n not a multiple of 64", [](auto& p) { p.w_layout = GateLayout::interleaved; p.n = 14344; p.ldo = 14344; }, "n:"},
      {"bad layout", [](auto& p) { p.w_layout = static_cast<GateLayout>(9); }, "w_layout:"},
      {"null w", [](auto& p) { p.w = nullptr; }, "w:"},
      {"null a", [](auto& p) { p.a = nullptr; }, "a:"},
      {"null out", [](auto& p) { p.out = nullptr; }, "out:"},
      {"k not a multiple of 8", [](auto& p) { p.k = 4095; }, "k:"},
      {"ldw < k", [](auto& p) { p.ldw = 4088; }, "ldw:"},
      {"lda < k", [](auto& p) { p.lda = 8; }, "lda:"},
      {"ldo < n", [](auto& p) { p.ldo = 14328; }, "ldo:"},
      {"w misaligned", [](auto& p) { p.w = storage + 9; }, "w:"},
      {"bias misaligned", [](auto& p) { p.bias = storage + 17; }, "bias:"},
      {"out misaligned", [](auto& p) { p.out = storage + 25; }, "out:"},
  };
  for (const Rule& r : rules) {
    auto p = valid();
    r.breaks(p);
    const Status s = glukit::validate_gated_arguments(p);
    INFO(r.what << ": " << s.message());
    CHECK(s.code() == glukit::StatusCode::invalid_argument);
    CHECK(starts_with(s.message(), r.names));
  }
  auto none = valid();
  none.m = 0;
  none.a = nullptr;
  none.out = nullptr;
  CHECK(glukit::validate_gated_arguments(none).ok());  // m = 0: a no-op
  auto k0 = valid();
  k0.k = 0;
  k0.a = nullptr;
  k0.w = nullptr;
  CHECK(glukit::validate_gated_arguments(k0).ok());  // k = 0: out = op(b_g, b_u)
  auto inter = valid();
  inter.w_layout = GateLayout::interleaved;
  CHECK(glukit::validate_gated_arguments(inter).ok());  // 14336 = 224 x 64
}

TEST_CASE("GatePairs: every output column's gate and up tile columns are Q apart, in W's rows of both orders") {
  using Pairs = glukit::GatePairs<64>;
  for (const auto layout : {glukit::GateLayout::stacked, glukit::GateLayout::interleaved}) {
    const std::int64_t n = 640;
    for (const std::int64_t j0 : {std::int64_t{0}, std::int64_t{128}, std::int64_t{384}}) {
      std::vector<int> seen(256, 0);
      for (int t = 0; t < 256; ++t) {
        const int c = Pairs::out_col(t);
        REQUIRE(c >= 0);
        REQUIRE(c < 128);
        if (!Pairs::is_up(t)) {
          ++seen[static_cast<std::size_t>(c)];
          CHECK(Pairs::is_up(t + 64));
          CHECK(Pairs::out_col(t + 64) == c);
          CHECK(Pairs::w_row(j0, t, n, layout) == glukit::gate_row(j0 + c, n, layout));
          CHECK(Pairs::w_row(j0, t + 64, n, layout) == glukit::up_row(j0 + c, n, layout));
        }
        // Runs are contiguous in W: row of t = row of the run's first column + t % 64.
        CHECK(Pairs::w_row(j0, t, n, layout) == Pairs::w_row(j0, t - t % 64, n, layout) + t % 64);
      }
      for (int c = 0; c < 128; ++c) CHECK(seen[static_cast<std::size_t>(c)] == 1);  // each output column once
    }
  }
  // rows_valid: the rows of a run whose output columns are < n.
  CHECK(Pairs::rows_valid(0, 0, 21) == 21);
  CHECK(Pairs::rows_valid(0, 64, 21) == 21);   // the up run of the same columns
  CHECK(Pairs::rows_valid(0, 128, 21) == 0);   // columns 64.. are past n
  CHECK(Pairs::rows_valid(64, 0, 200) == 64);
  CHECK(Pairs::rows_valid(128, 128, 200) == 8);
  using Q32 = glukit::GatePairs<32>;
  CHECK(Q32::out_col(96) == 32);
  CHECK(Q32::is_up(96));
  CHECK(Q32::w_row(0, 40, 128, glukit::GateLayout::interleaved) == 72);  // up of column 8: 64 + 8
}

TEST_CASE("gated arguments: the pre-activations' rules name their argument") {
  auto p = valid();
  p.p = storage + 40;
  p.ldp = 2 * p.n;
  CHECK(glukit::validate_gated_arguments(p).ok());
  auto q = p;
  q.ldp = p.n;
  CHECK(starts_with(glukit::validate_gated_arguments(q).message(), "ldp:"));
  q = p;
  q.p = storage + 41;
  CHECK(starts_with(glukit::validate_gated_arguments(q).message(), "p:"));
  q = p;
  q.n = 1001, q.ldo = 1008, q.ldp = 2008;
  CHECK(starts_with(glukit::validate_gated_arguments(q).message(), "n:"));
  q.p = nullptr;  // without P, any n
  CHECK(glukit::validate_gated_arguments(q).ok());
}
