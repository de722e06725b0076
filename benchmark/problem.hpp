// The benchmarked problem: the reference shape, FLOP and byte counts, and sets
// of device operands that the timed loop rotates through so that each launch
// finds its inputs outside the L2 cache, as a layer in a real model would.
// Operands are T = glukit::half_t or glukit::bfloat16_t, B stored K x N
// (Layout::row_major) or N x K (Layout::col_major, an nn.Linear weight).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/cuda_check.hpp"
#include "common/device_data.cuh"
#include "glukit/ops/addmm_glu.hpp"

namespace glukit_bench {

/// The reference problem of the project: out (M x N) from A (M x K), B (K x N).
inline constexpr std::int64_t kRefM = 1024;
inline constexpr std::int64_t kRefN = 21568;
inline constexpr std::int64_t kRefKs[] = {256, 512, 1024};

/// Input sets: at least this many, and together more than kL2Multiple x the L2.
inline constexpr int kMinSets = 4;
inline constexpr std::size_t kL2Multiple = 4;
/// ... but only this many when one set alone exceeds kL2Multiple x the L2 (a 1.5 GB
/// set of the largest LLM shape): two alternate, so no launch finds the last one's tail.
inline constexpr int kMinLargeSets = 2;

/// Bytes of one element: both element types are 2-byte storage types.
inline constexpr double kElementBytes = 2.0;

/// Relative L2 error a glukit output may have against the cuBLASLt path.
inline constexpr double kTolerance = 1e-2;

/// Operand magnitudes: X = A @ B has a standard deviation of about 0.35 sqrt(K)
/// (about 11 at K = 1024), far inside fp16's range after the gate.
inline constexpr float kInputScale = 1.0f;

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// Short name of a layout of B in benchmark names: "kn" (K x N, row-major) or "nk" (N x K).
inline const char* layout_name(glukit::Layout l) { return l == glukit::Layout::col_major ? "nk" : "kn"; }

/// glukit arguments for `rows` rows of a contiguous problem of shape s (lda = k,
/// ldy = ldo = n; ldb = n for B row-major, k for B col_major).
template <class T>
glukit::AddmmGluArgsT<T> contiguous_args(const GemmShape& s, std::int64_t rows, const T* a, const T* b,
                                         const T* bias, const T* y, T* out,
                                         glukit::Layout b_layout = glukit::Layout::row_major) {
  glukit::AddmmGluArgsT<T> p;
  p.a = a;
  p.b = b;
  p.bias = bias;
  p.y = y;
  p.out = out;
  p.m = rows;
  p.n = s.n;
  p.k = s.k;
  p.lda = s.k;
  p.ldb = b_layout == glukit::Layout::col_major ? s.k : s.n;
  p.ldy = s.n;
  p.ldo = s.n;
  p.b_layout = b_layout;
  return p;
}

/// Which operands a benchmark reads and writes.
enum class Operands {
  gemm,     ///< A, B -> out                         (cuBLAS GEMM alone)
  fused,    ///< A, B, bias, Y -> out                (glukit)
  unfused,  ///< A, B, bias -> X; X, Y -> out        (cuBLASLt + gate; X is the intermediate)
};

/// Bytes of one launch's minimal traffic: every operand read or written once.
/// The intermediate X of the unfused path is not counted: the counter is the
/// problem's bandwidth, so paths that move more show it as a lower number.
inline double minimal_bytes(const GemmShape& s, Operands which) {
  const double h = kElementBytes;
  const double ab_out = h * double(s.m * s.k + s.k * s.n + s.m * s.n);
  if (which == Operands::gemm) return ab_out;
  return ab_out + h * double(s.n + s.m * s.n);  // + bias + Y
}

template <class T>
struct OperandSetT {
  DeviceBuffer<T> a, b, bias, y, out, x;
};
using OperandSet = OperandSetT<__half>;

/// Sets to rotate through for sets of `set_bytes`: past kL2Multiple x the L2 together,
/// at least kMinSets (kMinLargeSets when one set alone is past it).
inline int rotation_count(double set_bytes, std::size_t l2_bytes) {
  const double past = double(kL2Multiple) * double(l2_bytes);
  const auto needed = static_cast<int>(past / set_bytes) + 1;
  return std::max(set_bytes > past ? kMinLargeSets : kMinSets, needed);
}

/// `count()` sets of contiguous operands (lda = k, ldy = ldo = n; ldb = n for B
/// row-major, k for B col_major), filled with fresh non-zero random values; every
/// output poisoned.
template <class T>
class RotatedOperandsT {
 public:
  RotatedOperandsT(const GemmShape& shape, Operands which, std::size_t l2_bytes, std::uint64_t seed,
                   cudaStream_t stream, glukit::Layout b_layout = glukit::Layout::row_major)
      : shape_(shape), which_(which), b_layout_(b_layout) {
    const int count = rotation_count(minimal_bytes(shape, which), l2_bytes);
    const auto mn = static_cast<std::size_t>(shape.m * shape.n);
    sets_.resize(count);
    for (int i = 0; i < count; ++i) {
      OperandSetT<T>& s = sets_[i];
      s.a = DeviceBuffer<T>(static_cast<std::size_t>(shape.m * shape.k));
      s.b = DeviceBuffer<T>(static_cast<std::size_t>(shape.k * shape.n));
      s.out = DeviceBuffer<T>(mn);
      if (which != Operands::gemm) {
        s.bias = DeviceBuffer<T>(static_cast<std::size_t>(shape.n));
        s.y = DeviceBuffer<T>(mn);
      }
      if (which == Operands::unfused) s.x = DeviceBuffer<T>(mn);
      // Distinct streams per operand and set: seed + a small operand tag.
      const std::uint64_t base = seed * 0x100 + std::uint64_t(i) * 0x8;
      fill_nonzero(s.a.get(), s.a.size(), base + 0, kInputScale, stream);
      fill_nonzero(s.b.get(), s.b.size(), base + 1, kInputScale, stream);
      fill_nonzero(s.bias.get(), s.bias.size(), base + 2, kInputScale, stream);
      fill_nonzero(s.y.get(), s.y.size(), base + 3, kInputScale, stream);
      poison(s.out.get(), s.out.size(), stream);
      poison(s.x.get(), s.x.size(), stream);
    }
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  }

  int count() const { return static_cast<int>(sets_.size()); }
  const GemmShape& shape() const { return shape_; }
  glukit::Layout b_layout() const { return b_layout_; }
  /// Leading dimension of B as stored: n (row-major K x N) or k (N x K).
  std::int64_t ldb() const { return b_layout_ == glukit::Layout::col_major ? shape_.k : shape_.n; }
  const OperandSetT<T>& set(int i) const { return sets_[static_cast<std::size_t>(i % count())]; }
  double bytes_per_launch() const { return minimal_bytes(shape_, which_); }
  double total_bytes() const { return bytes_per_launch() * count(); }

  /// glukit arguments for set i (mod count).
  glukit::AddmmGluArgsT<T> args(int i) const {
    const OperandSetT<T>& s = set(i);
    return contiguous_args(shape_, shape_.m, s.a.get(), s.b.get(), s.bias.get(), s.y.get(), s.out.get(),
                           b_layout_);
  }

 private:
  GemmShape shape_;
  Operands which_;
  glukit::Layout b_layout_;
  std::vector<OperandSetT<T>> sets_;
};
using RotatedOperands = RotatedOperandsT<__half>;

}  // namespace glukit_bench
