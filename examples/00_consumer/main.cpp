// A host-only program built against an installed glukit: it plans a launch of
// the fused kernel at the reference shape (tile schedule, shared-memory ring,
// policy checks), validates arguments, and checks the fp64 reference on a
// small problem. No GPU and no device compiler needed.
#include <glukit/glukit.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

int failures = 0;

void expect(bool cond, const char* what) {
  if (!cond) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

// A variant of V4 with a different gate, as a user would write one.
struct SwiGluPolicy : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
  using epilogue_op = glukit::epilogue::SwiGlu;
  static constexpr const char* name() { return "V4SwiGlu"; }
};

}  // namespace

int main() {
  using V4 = glukit::policy::V4FusedEpilogue<glukit::arch::sm90a>;
  using Kernel = glukit::AddmmGlu<V4>;
  static_assert(glukit::check_policy<SwiGluPolicy>());

  // The reference problem: M = 1024, N = 21568, K = 512.
  constexpr std::int64_t m = 1024, n = 21568, k = 512;
  const auto sm_count = glukit::arch_traits<glukit::arch::sm90a>::compute_units_hint;
  const glukit::TileSchedulePlan plan = glukit::make_tile_schedule(
      m, n, V4::tile_m, V4::tile_n, V4::group_size_m, V4::chiplets, glukit::chiplet_chunk_of<V4>(),
      std::int64_t{sm_count} * V4::min_blocks_per_cu);
  std::printf("%s (%s): %lld x %lld tiles of %d x %d, %lld persistent workgroups, "
              "%d-stage ring of %d bytes\n",
              Kernel::name(), glukit::arch_traits<Kernel::arch>::name(),
              static_cast<long long>(plan.grid.tiles_m), static_cast<long long>(plan.grid.tiles_n),
              V4::tile_m, V4::tile_n, static_cast<long long>(plan.workers), V4::num_buffers,
              glukit::sm90::MainloopPlan<V4>::Buffers::bytes);
  expect(plan.tiles() == 8 * 169, "tile count at the reference shape");
  std::int64_t covered = 0;
  for (std::int64_t w = 0; w < plan.workers; ++w) covered += plan.tiles_of(w);
  expect(covered == plan.tiles(), "persistent workers cover every tile");

  // Argument validation happens on the host, before any device access.
  glukit::AddmmGluArgs bad{};
  bad.m = m;
  bad.n = n;
  bad.k = k;
  const glukit::Status s = Kernel::validate(bad);
  std::printf("validate(null pointers): %s\n", s.message());
  expect(!s.ok(), "null operands are rejected");

  // fp64 reference of out = X + X * Y on a tiny problem, checked by hand.
  // A = [1 2; 3 4] (2x8 padded), B = identity-ish, bias = 1, Y = 0.5.
  constexpr int mm = 2, nn = 8, kk = 8;
  std::vector<glukit::half_t> a(mm * kk), b(kk * nn), bias(nn), y(mm * nn), out(mm * nn);
  for (int i = 0; i < mm; ++i)
    for (int j = 0; j < kk; ++j) a[i * kk + j] = glukit::to_half(float(i + 1));
  for (int i = 0; i < kk; ++i)
    for (int j = 0; j < nn; ++j) b[i * nn + j] = glukit::to_half(i == j ? 1.0f : 0.0f);
  for (auto& v : bias) v = glukit::to_half(1.0f);
  for (auto& v : y) v = glukit::to_half(0.5f);
  glukit::AddmmGluArgs args{a.data(), b.data(), bias.data(), y.data(), out.data(),
                            mm, nn, kk, kk, nn, nn, nn};
  const std::vector<double> ref = glukit::reference::addmm_glu(args);
  // X[i][j] = (i + 1) + 1; out = X * 1.5
  for (int i = 0; i < mm; ++i)
    for (int j = 0; j < nn; ++j) expect(ref[i * nn + j] == (i + 2) * 1.5, "reference value");
  for (int i = 0; i < mm * nn; ++i) out[i] = glukit::to_half(float(ref[i]));
  expect(glukit::reference::relative_l2_error(out.data(), nn, ref, mm, nn) == 0.0,
         "relative error of an exact result");

  if (failures != 0) {
    std::printf("glukit consumer: %d checks failed\n", failures);
    return 1;
  }
  std::printf("glukit consumer: all checks passed\n");
  return 0;
}
