// GPU tests of the composition mechanism's broadcast vectors and row maxima on sm90a
// (epilogue/compose.hpp; kernels/sm90/warp_specialized/composed_epilogue.hpp): the two
// compositions of test/common/compositions.hpp, which no shipped problem binds, run by the
// warp-specialised TMA kernels through their backend launcher, on ragged shapes (m = 1, n
// not a multiple of the tile, padded leading dimensions), fp16 / bf16, with and without bias:
//   element view:  out = GluGate(x r_i c_j, y)              (Y staged, r and c from global)
//   gate/up view:  out = SwiGlu(g r_i cg_j, u r_i cu_j)     (W stacked or interleaved; cg, cu
//                                                            the 2n-vector's gate and up entries)
// both with `row_absmax = 0`. The outputs against the fp64 reference with the per-element
// bound of test/common/output_check.hpp (the scaled accumulator, its magnitude S |r c|); the
// row maxima equal to the largest |stored output| of each row, bit for bit (the kernels
// take them from the values they store), and the guard after them untouched; the output
// poisoned first, its padding and the rows after it checked untouched.
#include "common/compositions.hpp"
#include "gpu_test_util.hpp"

namespace glukit::test {
namespace {

static_assert(epilogue::Arity<ScaledElementwise<epilogue::GluGate>>::tiles == 1 &&
              epilogue::Arity<ScaledElementwise<epilogue::GluGate>>::vectors == 2 &&
              epilogue::Arity<ScaledGated<epilogue::SwiGlu>>::tiles == 0 &&
              epilogue::Arity<ScaledGated<epilogue::SwiGlu>>::row_absmax == 0);

constexpr int guard_floats = 8;

/// Scales in [0.5, 2] (never zero), the row maxima zeroed with a zeroed guard after them.
struct Vectors {
  std::vector<float> row, column;
  DeviceBuffer<float> d_row, d_column, d_max;
  Vectors(std::int64_t m, std::int64_t columns, std::mt19937_64& rng)
      : row(static_cast<std::size_t>(m)),
        column(static_cast<std::size_t>(columns)),
        d_row(row.size()),
        d_column(column.size()),
        d_max(static_cast<std::size_t>(m + guard_floats)) {
    std::uniform_real_distribution<float> d(0.5f, 2.f);
    for (auto& x : row) x = d(rng);
    for (auto& x : column) x = d(rng);
    d_row.upload(row);
    d_column.upload(column);
    GLUKIT_CHECK_CUDA(cudaMemset(d_max.ptr, 0, d_max.count * sizeof(float)));
  }
  /// The accumulator's scale at (output row i, column j of B or row j of W): row[i] column[j].
  auto scale() const {
    return [this](std::int64_t i, std::int64_t j) { return double(row[i]) * column[j]; };
  }
  template <Element T>
  OperandSlotsT<T> extra() const {
    return {.vectors = {.row_scale = d_row.ptr, .column_scale = d_column.ptr, .row_absmax = d_max.ptr}};
  }
};

/// The row maxima the kernel merged equal the largest |value| of each stored row, bit for
/// bit; the guard after them stays zero.
template <Element T>
void check_row_maxima(const Vectors& v, const std::vector<T>& out, const Shape& s) {
  const std::vector<float> got = v.d_max.download();
  std::int64_t wrong = 0, first = -1;
  for (std::int64_t i = 0; i < s.m; ++i) {
    float want = 0.f;
    for (std::int64_t j = 0; j < s.n; ++j) want = std::max(want, std::fabs(to_float(out[i * s.ldo + j])));
    if (std::memcmp(&want, &got[i], sizeof(float)) != 0 && ++wrong == 1) first = i;
  }
  INFO("rows whose maximum differs: " << wrong << " (first: " << first << ")");
  CHECK(wrong == 0);
  for (int g = 0; g < guard_floats; ++g) CHECK(got[static_cast<std::size_t>(s.m + g)] == 0.f);
}

template <class Policy, Element T>
void check_element(const Shape& shape) {
  using Op = epilogue::GluGate;
  const std::uint64_t seed = fresh_seed();
  INFO(Policy::name() << " " << element_name<T>() << (shape.b_nk() ? " B n x k" : " B k x n") << " m=" << shape.m
                      << " n=" << shape.n << " k=" << shape.k << " bias=" << shape.bias << " seed=" << seed);
  TestProblemT<T> pr(shape, seed);
  std::mt19937_64 rng(seed + 1);
  const Vectors v(pr.s.m, pr.s.n, rng);
  REQUIRE(validate_arguments(pr.device_args()).ok());  // the launcher below does not validate
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  int device = 0;
  GLUKIT_CHECK_CUDA(cudaGetDevice(&device));
  using Launcher = detail::LauncherOf<Policy, ScaledProblem<T, Layout::row_major>>;
  using LauncherNk = detail::LauncherOf<Policy, ScaledProblem<T, Layout::col_major>>;
  const Status st = shape.b_nk() ? LauncherNk::run(pr.device_args(), {}, device, v.template extra<T>())
                                 : Launcher::run(pr.device_args(), {}, device, v.template extra<T>());
  const auto out = check_launched_output(st, pr.dout, pr.s, reference_of(pr.host_args(), Op{}, v.scale()));
  check_row_maxima(v, out, pr.s);
}

template <class Policy, Element T>
void check_gated(const GatedShape& shape) {
  using Op = epilogue::SwiGlu;
  const std::uint64_t seed = fresh_seed();
  INFO(Policy::name() << " " << element_name<T>() << (shape.layout == GateLayout::stacked ? " stacked" : " interleaved")
                      << " m=" << shape.m << " n=" << shape.n << " k=" << shape.k << " bias=" << shape.bias
                      << " seed=" << seed);
  GatedProblemT<T> pr(shape, seed);
  const GatedShape& s = pr.s;
  std::mt19937_64 rng(seed + 1);
  const Vectors v(s.m, 2 * s.n, rng);
  REQUIRE(validate_gated_arguments(pr.device_args()).ok());  // the launcher below does not validate
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  int device = 0;
  GLUKIT_CHECK_CUDA(cudaGetDevice(&device));
  const AddmmGluArgsT<T> gemm = detail::gemm_view(pr.device_args());
  using Stacked = detail::LauncherOf<Policy, ScaledGatedProblem<T, GateLayout::stacked>>;
  using Interleaved = detail::LauncherOf<Policy, ScaledGatedProblem<T, GateLayout::interleaved>>;
  const Status st = s.layout == GateLayout::stacked ? Stacked::run(gemm, {}, device, v.template extra<T>())
                                                    : Interleaved::run(gemm, {}, device, v.template extra<T>());
  const auto out =
      check_launched_output(st, pr.dout, s.output(), gated_reference_of(pr.host_args(), Op{}, v.scale()));
  check_row_maxima(v, out, s.output());
}

}  // namespace

// n a multiple of 8 throughout: a composition with a reduction stores whole 16-byte chunks.
TEST_CASE("a composition's broadcast vectors and row maxima: element view (staged Y, row and column scales)",
          "[compose][sm90][sanitize]") {
  using Policy = policy::WarpSpecializedTma128x128<arch::sm90a>;
  for (const Shape& s : {Shape{1, 8, 64}, Shape{200, 264, 72, 80, 0, 272, 280}, Shape{300, 520, 256},
                         Shape{129, 136, 128, 0, 0, 0, 0, false}})
    check_element<Policy, half_t>(s);
  for (Shape s : {Shape{1, 8, 64}, Shape{200, 264, 72, 80, 88, 272, 280}, Shape{300, 520, 256}}) {
    s.b_layout = Layout::col_major;
    check_element<Policy, bfloat16_t>(s);
  }
}

TEST_CASE("a composition's broadcast vectors and row maxima: gate/up view (row scale, the gate's and up's "
          "column scales)",
          "[compose][sm90][sanitize]") {
  using Policy = policy::GatedTma128x128<arch::sm90a>;
  for (const GateLayout l : {GateLayout::stacked, GateLayout::interleaved}) {
    const bool st = l == GateLayout::stacked;  // interleaved: n a multiple of 64
    check_gated<Policy, bfloat16_t>(GatedShape{1, 64, 64, 0, 0, 0, true, l});
    check_gated<Policy, bfloat16_t>(GatedShape{200, st ? 136 : 192, 72, 80, 88, 200, true, l});
    check_gated<Policy, half_t>(GatedShape{300, st ? 264 : 320, 256, 0, 0, 0, false, l});
  }
}

}  // namespace glukit::test
