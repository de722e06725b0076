// GPU tests of addmm_glu's backward on sm90a (ops/addmm_glu_backward.hpp): X = A B +
// bias recomputed, dX = G (1 + Y) and dY = G X from its epilogue, fp16 / bf16 x B k x n /
// n x k x with / without bias on ragged shapes (m = 1, n not a multiple of the tile, padded
// leading dimensions, k not a multiple of 64, k = 0), dX written over G and dY over Y,
// against the fp64 reference with the per-element bound of test/common/output_check.hpp;
// dX and dY poisoned first, their padding and the rows after them checked untouched; the
// bias gradient (dbias: dX's column sums) against the sums of the dX stored; argument
// errors name the argument and write nothing.
#include <cstring>

#include "gpu_test_util.hpp"

namespace glukit::test {
namespace {

/// TestProblemT's A, B, bias, Y and (poisoned) out = dX, plus the gradient G (ld = ldy,
/// padding NaN) and a poisoned dY (ld = ldo, with guard rows).
template <Element T>
struct XBwdProblem : TestProblemT<T> {
  std::vector<T> grad;
  DeviceBuffer<T> d_grad, d_dy;
  XBwdProblem(Shape shape, std::uint64_t seed)
      : TestProblemT<T>(shape, seed),
        grad(this->y.size()),
        d_grad(grad.size()),
        d_dy(static_cast<std::size_t>(this->s.m * this->s.ldo + guard_elements(this->s))) {
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    fill_random_rows(grad, this->s.m, this->s.n, this->s.ldy, rng);
    d_grad.upload(grad);
    d_dy.poison();
  }
  AddmmGluBackwardArgsT<T> device_args() const {
    const auto& s = this->s;
    return {this->da.ptr, this->db.ptr, s.bias ? this->dbias.ptr : nullptr, this->dy.ptr, d_grad.ptr,
            this->dout.ptr, d_dy.ptr, s.m, s.n, s.k, s.lda, s.ldb, s.ldy, s.ldy, s.ldo, s.ldo, s.b_layout};
  }
  AddmmGluBackwardArgsT<T> host_args() const {
    const auto& s = this->s;
    return {this->a.data(), this->b.data(), s.bias ? this->bias.data() : nullptr, this->y.data(), grad.data(),
            nullptr, nullptr, s.m, s.n, s.k, s.lda, s.ldb, s.ldy, s.ldy, s.ldo, s.ldo, s.b_layout};
  }
};

/// The references of dX and dY with their per-element terms: dX = fma(G, Y, G) is one
/// fp32 operation on exact inputs (no accumulation: S = 0); dY = G X carries X's fp32
/// accumulation error (S = |A| |B| + |bias|) times |G|.
template <Element T>
void references(const AddmmGluBackwardArgsT<T>& g, Reference& dx, Reference& dy) {
  reference::AddmmGluBackwardResult r = reference::addmm_glu_backward(g);
  dx.m = dy.m = g.m, dx.n = dy.n = g.n, dx.k = dy.k = g.k;
  dx.value = std::move(r.dx), dy.value = std::move(r.dy);
  dx.magnitude.assign(dx.value.size(), 0.0), dx.sensitivity.assign(dx.value.size(), 0.0);
  dy.magnitude = std::move(r.x_magnitude), dy.sensitivity.assign(dy.value.size(), 0.0);
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j)
      dy.sensitivity[static_cast<std::size_t>(i * g.n + j)] = std::fabs(to_float(g.dout[i * g.lddout + j])) * 1.01;
}

/// The bias gradient written into sums (n values, then 8 guards, all NaN before the launch)
/// against the fp64 column sums of the dX it stored (ld): fp32 additions in any order of m
/// terms each are within m 2^-24 sum |dX| of the exact sum; the guards untouched.
template <Element T>
void check_column_sums(const std::vector<float>& sums, const std::vector<T>& dx, std::int64_t m, std::int64_t n,
                       std::int64_t ld) {
  int bad = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    double exact = 0, size = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      const double v = to_float(dx[static_cast<std::size_t>(i * ld + j)]);
      exact += v, size += std::fabs(v);
    }
    const double bound = static_cast<double>(m + 1) * 0x1p-24 * size + 1e-30;
    if (!(std::fabs(sums[static_cast<std::size_t>(j)] - exact) <= bound) && bad++ < 5)
      UNSCOPED_INFO("dbias[" << j << "] = " << sums[static_cast<std::size_t>(j)] << ", expected " << exact
                             << " within " << bound);
  }
  CHECK(bad == 0);
  for (std::size_t g = static_cast<std::size_t>(n); g < sums.size(); ++g) CHECK(std::isnan(sums[g]));
}

template <Element T, class Launch>
void check_xbackward(const char* what, const Shape& shape, Launch launch, bool in_place = false, bool sums = false) {
  const std::uint64_t seed = fresh_seed();
  INFO(what << " " << element_name<T>() << (shape.b_layout == Layout::col_major ? " B n x k" : " B k x n")
            << " bias=" << shape.bias << " m=" << shape.m << " n=" << shape.n << " k=" << shape.k
            << " in_place=" << in_place << " dbias=" << sums << " seed=" << seed);
  XBwdProblem<T> pr(shape, seed);
  AddmmGluBackwardArgsT<T> args = pr.device_args();
  if (in_place) {  // dX over G, dY over Y (their padding poisoned, NaN)
    args.dx = const_cast<T*>(args.dout), args.lddx = args.lddout;
    args.dy = const_cast<T*>(args.y), args.lddy = args.ldy;
  }
  // dbias and its workspace poisoned (NaN): every value must be written, the partials
  // before they are summed.
  DeviceBuffer<float> d_sums(static_cast<std::size_t>(shape.n + 8));
  DeviceBuffer<float> d_work(static_cast<std::size_t>(addmm_glu_backward_workspace_floats(shape.m, shape.n)) + 8);
  if (sums) {
    d_sums.upload(std::vector<float>(d_sums.count, std::nanf("")));
    d_work.upload(std::vector<float>(d_work.count, std::nanf("")));
    args.dbias = d_sums.ptr;
    args.workspace = d_work.ptr;
  }
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  const Status st = launch(args);
  INFO("status: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  Reference rdx, rdy;
  references(pr.host_args(), rdx, rdy);
  if (in_place) {
    Shape s = pr.s;
    s.ldo = s.ldy;
    const std::vector<T> dx = pr.d_grad.download();
    check_output_matches(dx, s, rdx);
    check_output_matches(pr.dy.download(), s, rdy);
    if (sums) check_column_sums(d_sums.download(), dx, s.m, s.n, s.ldy);
    return;
  }
  if (sums) check_column_sums(d_sums.download(), pr.dout.download(), pr.s.m, pr.s.n, pr.s.ldo);
  for (const auto* out : {&pr.dout, &pr.d_dy}) {
    const std::vector<T> v = out->download();
    CHECK(count_unwritten(v, pr.s) == 0);
    CHECK(count_padding_written(v, pr.s) == 0);
    CHECK(count_guard_written(v, pr.s) == 0);
    check_output_matches(v, pr.s, out == &pr.dout ? rdx : rdy);
  }
}

/// Ragged shapes: m = 1 with padded strides, n a multiple of 8 but not of the 128-column
/// tile, k not a multiple of 64, several tiles, k = 0 (X = bias).
std::vector<Shape> xbwd_shapes(Layout layout) {
  std::vector<Shape> out;
  for (bool bias : {true, false}) {
    out.push_back(Shape{1, 24, 72, 80, layout == Layout::col_major ? 80 : 40, 32, 48, bias, layout});
    out.push_back(Shape{131, 336, 200, 0, 0, 0, 0, bias, layout});
    out.push_back(Shape{300, 104, 520, 0, 0, 0, 0, bias, layout});
  }
  out.push_back(Shape{130, 72, 0, 0, 0, 0, 0, true, layout});
  return out;
}

TEST_CASE("addmm_glu backward: fp16 and bf16, both layouts of B, with and without bias, ragged shapes",
          "[addmm_glu_backward][sanitize]") {
  const auto run = [](const auto& args) { return addmm_glu_backward(args); };
  for (Layout layout : {Layout::row_major, Layout::col_major})
    for (const Shape& s : xbwd_shapes(layout)) {
      check_xbackward<half_t>("default", s, run);
      check_xbackward<bfloat16_t>("default", s, run);
    }
}

TEST_CASE("addmm_glu backward: the bias gradient (dX's column sums, dbias given), ragged shapes and in place",
          "[addmm_glu_backward][sanitize]") {
  const auto run = [](const auto& args) { return addmm_glu_backward(args); };
  for (Layout layout : {Layout::row_major, Layout::col_major})
    for (const Shape& s : xbwd_shapes(layout)) {
      check_xbackward<half_t>("dbias", s, run, false, true);
      check_xbackward<bfloat16_t>("dbias", s, run, false, true);
    }
  check_xbackward<bfloat16_t>("dbias in place", Shape{1000, 1096, 264}, run, true, true);
  check_xbackward<half_t>("dbias, 2100 rows", Shape{2100, 328, 72, 0, 0, 0, 0, true, Layout::col_major}, run, false,
                          true);
}

TEST_CASE("addmm_glu backward: the bias gradient is deterministic (the same inputs, bitwise equal dbias twice)",
          "[addmm_glu_backward]") {
  for (const Shape& s : {Shape{4096, 1024, 512}, Shape{2100, 328, 72, 0, 0, 0, 0, true, Layout::col_major}}) {
    const std::uint64_t seed = fresh_seed();
    INFO("m=" << s.m << " n=" << s.n << " k=" << s.k << " seed=" << seed);
    XBwdProblem<bfloat16_t> pr(s, seed);
    AddmmGluBackwardArgsT<bfloat16_t> args = pr.device_args();
    DeviceBuffer<float> d_work(static_cast<std::size_t>(addmm_glu_backward_workspace_floats(s.m, s.n)));
    args.workspace = d_work.ptr;
    std::vector<std::vector<float>> runs;
    for (int r = 0; r < 2; ++r) {
      DeviceBuffer<float> d_sums(static_cast<std::size_t>(s.n));
      d_sums.upload(std::vector<float>(d_sums.count, std::nanf("")));
      d_work.upload(std::vector<float>(d_work.count, std::nanf("")));
      args.dbias = d_sums.ptr;
      const Status st = addmm_glu_backward(args);
      INFO("status: " << st.message());
      REQUIRE(st.ok());
      GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
      runs.push_back(d_sums.download());
    }
    check_column_sums(runs[0], pr.dout.download(), s.m, s.n, pr.s.ldo);
    CHECK(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(float)) == 0);
  }
}

TEST_CASE("addmm_glu backward: dX over the gradient and dY over Y, several tiles; m = 0 and n = 0 launch nothing",
          "[addmm_glu_backward]") {
  const auto run = [](const auto& args) { return addmm_glu_backward(args); };
  check_xbackward<bfloat16_t>("in place", Shape{1000, 1096, 264}, run, true);
  check_xbackward<half_t>("in place", Shape{257, 200, 4096 / 8, 0, 0, 0, 0, true, Layout::col_major}, run, true);
  AddmmGluBackwardArgsT<bfloat16_t> empty{};
  CHECK(addmm_glu_backward(empty).ok());
}

TEST_CASE("addmm_glu backward: argument errors name the argument, nothing launches", "[addmm_glu_backward]") {
  XBwdProblem<bfloat16_t> pr(Shape{64, 96, 64}, fresh_seed());
  const auto first_word = [](const Status& st) {
    const std::string m = st.message();
    return m.substr(0, m.find(':'));
  };
  auto args = pr.device_args();
  args.n = 92;  // not a multiple of 8
  CHECK(addmm_glu_backward(args).code() == StatusCode::invalid_argument);
  CHECK(first_word(addmm_glu_backward(args)) == "n");
  args = pr.device_args();
  args.dout = nullptr;
  CHECK(first_word(addmm_glu_backward(args)) == "dout");
  args = pr.device_args();
  DeviceBuffer<float> sums(96 + 8);
  DeviceBuffer<float> work(static_cast<std::size_t>(addmm_glu_backward_workspace_floats(64, 96)) + 4);
  args.dbias = sums.ptr + 1;  // not 16-byte aligned
  args.workspace = work.ptr;
  CHECK(first_word(addmm_glu_backward(args)) == "dbias");
  args.dbias = sums.ptr;
  args.workspace = nullptr;  // dbias needs one
  CHECK(first_word(addmm_glu_backward(args)) == "workspace");
  args.workspace = work.ptr + 1;  // not 16-byte aligned
  CHECK(first_word(addmm_glu_backward(args)) == "workspace");
  args = pr.device_args();
  args.lddout = 88;  // < n
  CHECK(first_word(addmm_glu_backward(args)) == "lddout");
  args = pr.device_args();
  args.dx = nullptr;
  CHECK(first_word(addmm_glu_backward(args)) == "dx");
  args = pr.device_args();
  args.lddy = 100;  // not a multiple of 8
  CHECK(first_word(addmm_glu_backward(args)) == "lddy");
  args = pr.device_args();
  args.dy = args.dx;
  CHECK(first_word(addmm_glu_backward(args)) == "dy");
  args = pr.device_args();
  args.lda = 8;  // < k
  CHECK(first_word(addmm_glu_backward(args)) == "lda");
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  CHECK(count_unwritten(pr.dout.download(), pr.s) == 64 * 96);  // still poisoned
  CHECK(count_unwritten(pr.d_dy.download(), pr.s) == 64 * 96);
}

}  // namespace
}  // namespace glukit::test
