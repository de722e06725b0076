// GPU tests of the composition mechanism's broadcast vectors and row maxima on sm90a
// (epilogue/compose.hpp; kernels/sm90/warp_specialized/composed_epilogue.hpp): the two
// compositions of test/common/compositions.hpp, which no shipped problem binds, run by the
// warp-specialised TMA kernels through their backend launcher, on ragged shapes (m = 1, n
// not a multiple of the tile, padded leading dimensions), fp16 / bf16, with and without bias:
//   element view:  out = GluGate(x r_i c_j, y)              (Y staged, r and c from global)
//   gate/up view:  out = SwiGlu(g r_i cg_j, u r_i cu_j)     (W stacked or interleaved; cg, cu
//                                                            the 2n-vector's gate and up entries)
// both with `row_absmax = 0`. The outputs against the fp64 reference with the per-element
// bound of test/common/output_check.hpp (the scaled accumulator's magnitude S |r c|); the
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
  template <Element T>
  ExtraOperandsT<T> extra() const {
    return {nullptr, 0, nullptr, 0, nullptr, d_row.ptr, d_column.ptr, d_max.ptr};
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

/// The output and row maxima of a finished launch.
template <Element T>
void check_launch(const Status& st, const DeviceBuffer<T>& dout, const Shape& o, const Reference& ref,
                  const Vectors& v) {
  INFO("status: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<T> out = dout.download();
  CHECK(count_unwritten(out, o) == 0);
  CHECK(count_padding_written(out, o) == 0);
  CHECK(count_guard_written(out, o) == 0);
  check_output_matches(out, o, ref);
  check_row_maxima(v, out, o);
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
  Reference ref = reference_of(pr.host_args(), Op{});  // X's terms, then scaled below
  const reference::AddmmTerms x = reference::addmm_terms(pr.host_args());
  for (std::int64_t i = 0; i < pr.s.m; ++i)
    for (std::int64_t j = 0; j < pr.s.n; ++j) {
      const auto at = static_cast<std::size_t>(i * pr.s.n + j);
      const double sc = double(v.row[i]) * v.column[j], y = to_float(pr.y[i * pr.s.ldy + j]);
      ref.value[at] = Op{}(x.x[at] * sc, y);
      ref.magnitude[at] = x.magnitude[at] * sc;
      ref.sensitivity[at] = epilogue_sensitivity<Op>(x.x[at] * sc, y);
    }
  REQUIRE(validate_arguments(pr.device_args()).ok());  // the launcher below does not validate
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  int device = 0;
  GLUKIT_CHECK_CUDA(cudaGetDevice(&device));
  using Launcher = detail::LauncherOf<Policy, ScaledProblem<T, Layout::row_major>>;
  using LauncherNk = detail::LauncherOf<Policy, ScaledProblem<T, Layout::col_major>>;
  const Status st = shape.b_nk() ? LauncherNk::run(pr.device_args(), {}, device, v.template extra<T>())
                                 : Launcher::run(pr.device_args(), {}, device, v.template extra<T>());
  check_launch(st, pr.dout, pr.s, ref, v);
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
  Reference ref;
  ref.m = s.m, ref.n = s.n, ref.k = s.k;
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  ref.value.assign(mn, 0.0), ref.magnitude.assign(mn, 0.0), ref.sensitivity.assign(mn, 0.0);
  for (std::int64_t j = 0; j < s.n; ++j) {
    const std::int64_t gr = gate_row(j, s.n, s.layout), ur = up_row(j, s.n, s.layout);
    for (std::int64_t i = 0; i < s.m; ++i) {
      double g = s.bias ? double(to_float(pr.bias[gr])) : 0.0, u = s.bias ? double(to_float(pr.bias[ur])) : 0.0;
      double sg = std::fabs(g), su = std::fabs(u);
      for (std::int64_t kk = 0; kk < s.k; ++kk) {
        const double a = to_float(pr.a[i * s.lda + kk]);
        const double wg = to_float(pr.w[gr * s.ldw + kk]), wu = to_float(pr.w[ur * s.ldw + kk]);
        g += a * wg, u += a * wu, sg += std::fabs(a * wg), su += std::fabs(a * wu);
      }
      const double cg = double(v.row[i]) * v.column[gr], cu = double(v.row[i]) * v.column[ur];
      g *= cg, u *= cu, sg *= cg, su *= cu;
      const auto at = static_cast<std::size_t>(i * s.n + j);
      const GatedSensitivity d = gated_sensitivity<Op>(g, u);
      const double mag = std::max({sg, su, 1e-300});
      ref.value[at] = Op{}(g, u);
      ref.magnitude[at] = mag;
      ref.sensitivity[at] = (d.dg * sg + d.du * su) / mag;
    }
  }
  REQUIRE(validate_gated_arguments(pr.device_args()).ok());  // the launcher below does not validate
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  int device = 0;
  GLUKIT_CHECK_CUDA(cudaGetDevice(&device));
  const AddmmGluArgsT<T> gemm = detail::gemm_view(pr.device_args());
  using Stacked = detail::LauncherOf<Policy, ScaledGatedProblem<T, GateLayout::stacked>>;
  using Interleaved = detail::LauncherOf<Policy, ScaledGatedProblem<T, GateLayout::interleaved>>;
  const Status st = s.layout == GateLayout::stacked ? Stacked::run(gemm, {}, device, v.template extra<T>())
                                                    : Interleaved::run(gemm, {}, device, v.template extra<T>());
  check_launch(st, pr.dout, s.output(), ref, v);
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
