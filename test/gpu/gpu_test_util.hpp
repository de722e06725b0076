// Helpers of the GPU tests: checked CUDA calls, device buffers, random
// inputs (fp16 or bf16; B k x n or n x k; the padding past each row poisoned), the
// poisoned output, and the accuracy check of test/common/output_check.hpp (a
// per-element bound from T and K beside a relative L2 bound, against a
// multi-threaded fp64 reference; the bound and its derivation are in that header).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "common/output_check.hpp"
#include "glukit/glukit.hpp"

#define GLUKIT_CHECK_CUDA(expr)                                                        \
  do {                                                                                 \
    const cudaError_t err_ = (expr);                                                   \
    INFO(#expr << " -> " << cudaGetErrorString(err_));                                 \
    REQUIRE(err_ == cudaSuccess);                                                      \
  } while (0)

namespace glukit::test {

inline constexpr std::uint16_t poison_bits = 0xFFFF;  // NaN in fp16 and in bf16

/// Seed printed by every failing check (Catch INFO) so a failure can be replayed.
inline std::uint64_t fresh_seed() {
  std::random_device rd;
  return (std::uint64_t{rd()} << 32) ^ rd();
}

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit DeviceBuffer(std::size_t n) : count(n) {
    if (n) GLUKIT_CHECK_CUDA(cudaMalloc(&ptr, n * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const std::vector<T>& h) {
    REQUIRE(h.size() == count);
    if (count) GLUKIT_CHECK_CUDA(cudaMemcpy(ptr, h.data(), count * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(count);
    if (count) GLUKIT_CHECK_CUDA(cudaMemcpy(h.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
  void poison() {
    if (count) GLUKIT_CHECK_CUDA(cudaMemset(ptr, 0xFF, count * sizeof(T)));
  }
};

/// A tight leading dimension: v rounded up to a multiple of 8 elements (16 bytes).
inline std::int64_t up8(std::int64_t v) { return (v + 7) / 8 * 8; }

/// Shape of one problem (leading dimensions 0 mean "tight").
struct Shape {
  std::int64_t m, n, k, lda = 0, ldb = 0, ldy = 0, ldo = 0;
  bool bias = true;
  Layout b_layout = Layout::row_major;  ///< col_major: B stored n x k (ldb >= k)
  bool b_nk() const { return b_layout == Layout::col_major; }
  std::int64_t b_rows() const { return b_nk() ? n : k; }
  std::int64_t b_cols() const { return b_nk() ? k : n; }
  Shape tight() const {
    Shape s = *this;
    if (!s.lda) s.lda = up8(std::max<std::int64_t>(k, 8));
    if (!s.ldb) s.ldb = up8(std::max<std::int64_t>(b_cols(), 8));
    if (!s.ldy) s.ldy = up8(std::max<std::int64_t>(n, 8));
    if (!s.ldo) s.ldo = up8(std::max<std::int64_t>(n, 8));
    return s;
  }
};

template <Element T>
void fill_random(std::vector<T>& v, std::mt19937_64& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  for (auto& x : v) {
    float f = d(rng);
    if (f == 0.f) f = 0.5f;  // never zeros
    x = from_float<T>(f);
  }
}

/// Random rows x cols values in a rows x ld array; the padding (columns cols..ld) is
/// NaN, so a kernel that reads past a row's end shows it in its output.
template <Element T>
void fill_random_rows(std::vector<T>& v, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                      std::mt19937_64& rng, float lo = -1.f, float hi = 1.f) {
  fill_random(v, rng, lo, hi);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = cols; j < ld; ++j) v[i * ld + j] = from_bits<T>(poison_bits);
}

/// Poisoned elements after the m x ldo output (a whole tile's rows past the last one):
/// a store that clips rows wrongly lands here.
inline std::int64_t guard_elements(const Shape& s) { return 256 * std::max<std::int64_t>(s.ldo, 8); }

/// A problem on host and device: fresh random A, B, bias, Y (padding poisoned);
/// poisoned out.
template <Element T>
struct TestProblemT {
  Shape s;
  std::uint64_t seed;
  std::vector<T> a, b, bias, y;
  DeviceBuffer<T> da, db, dbias, dy, dout;

  TestProblemT(Shape shape, std::uint64_t seed_)
      : s(shape.tight()),
        seed(seed_),
        a(static_cast<std::size_t>(s.m * s.lda)),
        b(static_cast<std::size_t>(s.b_rows() * s.ldb)),
        bias(s.bias ? static_cast<std::size_t>(s.n) : 0),
        y(static_cast<std::size_t>(s.m * s.ldy)),
        da(a.size()),
        db(b.size()),
        dbias(bias.size()),
        dy(y.size()),
        dout(static_cast<std::size_t>(s.m * s.ldo + guard_elements(s))) {
    std::mt19937_64 rng(seed);
    fill_random_rows(a, s.m, s.k, s.lda, rng);
    fill_random_rows(b, s.b_rows(), s.b_cols(), s.ldb, rng);
    fill_random(bias, rng);
    fill_random_rows(y, s.m, s.n, s.ldy, rng);
    da.upload(a);
    db.upload(b);
    dbias.upload(bias);
    dy.upload(y);
    dout.poison();
  }
  AddmmGluArgsT<T> device_args() const {
    return {da.ptr, db.ptr, s.bias ? dbias.ptr : nullptr, dy.ptr, dout.ptr, s.m, s.n, s.k,
            s.lda, s.ldb, s.ldy, s.ldo, s.b_layout};
  }
  AddmmGluArgsT<T> host_args() const {
    return {a.data(), b.data(), s.bias ? bias.data() : nullptr, y.data(), nullptr, s.m, s.n, s.k,
            s.lda, s.ldb, s.ldy, s.ldo, s.b_layout};
  }
};
using TestProblem = TestProblemT<half_t>;

/// The gated projection's shape: out m x n, W 2n x k (leading dimensions 0: tight).
struct GatedShape {
  std::int64_t m, n, k, lda = 0, ldw = 0, ldo = 0;
  bool bias = true;
  GateLayout layout = GateLayout::stacked;
  GatedShape tight() const {
    GatedShape s = *this;
    if (!s.lda) s.lda = up8(std::max<std::int64_t>(k, 8));
    if (!s.ldw) s.ldw = up8(std::max<std::int64_t>(k, 8));
    if (!s.ldo) s.ldo = up8(std::max<std::int64_t>(n, 8));
    return s;
  }
  Shape output() const { return Shape{m, n, k, lda, 0, 0, ldo}; }  // for the poison counters
};

/// A gated problem on host and device: fresh random A, W, bias (padding poisoned),
/// poisoned out with a guard after it.
template <Element T>
struct GatedProblemT {
  GatedShape s;
  std::uint64_t seed;
  std::vector<T> a, w, bias;
  DeviceBuffer<T> da, dw, dbias, dout;
  GatedProblemT(GatedShape shape, std::uint64_t seed_)
      : s(shape.tight()),
        seed(seed_),
        a(static_cast<std::size_t>(s.m * s.lda)),
        w(static_cast<std::size_t>(2 * s.n * s.ldw)),
        bias(s.bias ? static_cast<std::size_t>(2 * s.n) : 0),
        da(a.size()),
        dw(w.size()),
        dbias(bias.size()),
        dout(static_cast<std::size_t>(s.m * s.ldo + guard_elements(s.output()))) {
    std::mt19937_64 rng(seed);
    fill_random_rows(a, s.m, s.k, s.lda, rng);
    fill_random_rows(w, 2 * s.n, s.k, s.ldw, rng);
    fill_random(bias, rng);
    da.upload(a);
    dw.upload(w);
    dbias.upload(bias);
    dout.poison();
  }
  GatedProjectionArgsT<T> device_args() const {
    return {da.ptr, dw.ptr, s.bias ? dbias.ptr : nullptr, dout.ptr, s.m, s.n, s.k, s.lda, s.ldw, s.ldo, s.layout};
  }
  GatedProjectionArgsT<T> host_args() const {
    return {a.data(), w.data(), s.bias ? bias.data() : nullptr, nullptr, s.m, s.n, s.k, s.lda, s.ldw, s.ldo, s.layout};
  }
};

/// The output matches the reference: every element within its bound (element_bound)
/// and the relative L2 error below l2_bound (0: l2_tolerance<T>). On failure the
/// report names the worst element (row, col, got, ref, bound).
template <Element T>
void check_output_matches(const std::vector<T>& out, const Shape& s, const Reference& ref, double l2_bound = 0) {
  const CheckReport rep = check_output(out.data(), s.ldo, ref, l2_bound);
  INFO(rep.describe());
  CHECK(rep.passed);
}

/// Every element of the m x n output was written (no poison left) and is finite.
template <Element T>
std::int64_t count_unwritten(const std::vector<T>& out, const Shape& s) {
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j)
      if (!std::isfinite(to_float(out[i * s.ldo + j]))) ++bad;
  return bad;
}

/// The guard after the output must stay poisoned.
template <Element T>
std::int64_t count_guard_written(const std::vector<T>& out, const Shape& s) {
  std::int64_t bad = 0;
  for (std::size_t i = static_cast<std::size_t>(s.m * s.ldo); i < out.size(); ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, &out[i], 2);
    if (bits != poison_bits) ++bad;
  }
  return bad;
}

/// Padding between rows (columns n..ldo) must stay poisoned: nothing written out of bounds.
template <Element T>
std::int64_t count_padding_written(const std::vector<T>& out, const Shape& s) {
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = s.n; j < s.ldo; ++j) {
      std::uint16_t bits;
      std::memcpy(&bits, &out[i * s.ldo + j], 2);
      if (bits != poison_bits) ++bad;
    }
  return bad;
}

/// A launch that returned st and wrote dout (poisoned before it): st is ok, the launch left
/// no CUDA error, every element of the output was written, its padding and the rows after
/// it were not, and it matches ref (check_output_matches). Returns the output.
template <Element T>
std::vector<T> check_launched_output(const Status& st, const DeviceBuffer<T>& dout, const Shape& s,
                                     const Reference& ref, double l2_bound = 0) {
  INFO("status: " << st.message());
  REQUIRE(st.ok());
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<T> out = dout.download();
  CHECK(count_unwritten(out, s) == 0);
  CHECK(count_padding_written(out, s) == 0);
  CHECK(count_guard_written(out, s) == 0);
  check_output_matches(out, s, ref, l2_bound);
  return out;
}

using Sm90Variants = std::tuple<policy::V1RegisterStaged<arch::sm90a>, policy::V2DirectToLds<arch::sm90a>,
                                policy::V3DeepPipelinePersistent<arch::sm90a>,
                                policy::V4FusedEpilogue<arch::sm90a>, policy::WarpSpecializedTma<arch::sm90a>,
                                policy::WarpSpecializedTma128x128<arch::sm90a>,
                                policy::WarpSpecializedTma128x256<arch::sm90a>,
                                policy::WarpSpecializedTma128x256Ring<arch::sm90a>,
                                policy::WarpSpecializedTmaPingpong128x128<arch::sm90a>,
                                policy::WarpSpecializedTmaPingpong64x128<arch::sm90a>,
                                policy::WarpSpecializedTmaDecode16x128<arch::sm90a>>;

/// Runs Policy on a fresh problem of element type T and checks it against the fp64
/// reference: every element within its bound, relative L2 below tol (0: l2_tolerance<T>),
/// nothing written in the padding or past the output.
template <class Policy, class Op = epilogue::GluGate, Element T = half_t>
void check_problem(const Shape& shape, double tol = 0) {
  const std::uint64_t seed = fresh_seed();
  INFO("policy " << Policy::name() << " " << element_name<T>() << (shape.b_nk() ? " B n x k" : " B k x n")
                 << " m=" << shape.m << " n=" << shape.n << " k=" << shape.k << " bias=" << shape.bias
                 << " seed=" << seed);
  TestProblemT<T> pr(shape, seed);
  GLUKIT_CHECK_CUDA(cudaGetLastError());  // nothing earlier left an error behind
  const Status st = addmm_glu<Policy>(pr.device_args());
  check_launched_output(st, pr.dout, pr.s, reference_of(pr.host_args(), Op{}), tol);
}

}  // namespace glukit::test
