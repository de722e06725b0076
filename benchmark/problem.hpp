// The benchmarked problem: the reference shape, FLOP and byte counts, and sets
// of device operands that the timed loop rotates through so that each launch
// finds its inputs outside the L2 cache, as a layer in a real model would.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_fp16.h>

#include "common/cuda_check.hpp"
#include "common/device_data.cuh"
#include "glukit/kernels/args.hpp"

namespace glukit_bench {

/// The reference problem of the project: out (M x N) from A (M x K), B (K x N).
inline constexpr std::int64_t kRefM = 1024;
inline constexpr std::int64_t kRefN = 21568;
inline constexpr std::int64_t kRefKs[] = {256, 512, 1024};

/// Input sets: at least this many, and together more than kL2Multiple x the L2.
inline constexpr int kMinSets = 4;
inline constexpr std::size_t kL2Multiple = 4;

/// Relative L2 error a glukit output may have against the cuBLASLt path.
inline constexpr double kTolerance = 1e-2;

/// Operand magnitudes: X = A @ B has a standard deviation of about 0.35 sqrt(K)
/// (about 11 at K = 1024), far inside fp16's range after the gate.
inline constexpr float kInputScale = 1.0f;

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// glukit arguments for `rows` rows of a contiguous problem of shape s (lda = k,
/// ldb = ldy = ldo = n).
inline glukit::AddmmGluArgs contiguous_args(const GemmShape& s, std::int64_t rows, const __half* a, const __half* b,
                                            const __half* bias, const __half* y, __half* out) {
  glukit::AddmmGluArgs p;
  p.a = a;
  p.b = b;
  p.bias = bias;
  p.y = y;
  p.out = out;
  p.m = rows;
  p.n = s.n;
  p.k = s.k;
  p.lda = s.k;
  p.ldb = s.n;
  p.ldy = s.n;
  p.ldo = s.n;
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
  const double h = sizeof(__half);
  const double ab_out = h * double(s.m * s.k + s.k * s.n + s.m * s.n);
  if (which == Operands::gemm) return ab_out;
  return ab_out + h * double(s.n + s.m * s.n);  // + bias + Y
}

struct OperandSet {
  DeviceBuffer<__half> a, b, bias, y, out, x;
};

/// `count()` sets of contiguous row-major operands (lda = k, ldb = ldy = ldo = n),
/// filled with fresh non-zero random values; every output poisoned.
class RotatedOperands {
 public:
  RotatedOperands(const GemmShape& shape, Operands which, std::size_t l2_bytes,
                  std::uint64_t seed, cudaStream_t stream)
      : shape_(shape), which_(which) {
    const double set_bytes = minimal_bytes(shape, which);
    const auto needed = static_cast<int>(double(kL2Multiple) * double(l2_bytes) / set_bytes) + 1;
    const int count = std::max(kMinSets, needed);
    const auto mn = static_cast<std::size_t>(shape.m * shape.n);
    sets_.resize(count);
    for (int i = 0; i < count; ++i) {
      OperandSet& s = sets_[i];
      s.a = DeviceBuffer<__half>(static_cast<std::size_t>(shape.m * shape.k));
      s.b = DeviceBuffer<__half>(static_cast<std::size_t>(shape.k * shape.n));
      s.out = DeviceBuffer<__half>(mn);
      if (which != Operands::gemm) {
        s.bias = DeviceBuffer<__half>(static_cast<std::size_t>(shape.n));
        s.y = DeviceBuffer<__half>(mn);
      }
      if (which == Operands::unfused) s.x = DeviceBuffer<__half>(mn);
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
  const OperandSet& set(int i) const { return sets_[static_cast<std::size_t>(i % count())]; }
  double bytes_per_launch() const { return minimal_bytes(shape_, which_); }
  double total_bytes() const { return bytes_per_launch() * count(); }

  /// glukit arguments for set i (mod count).
  glukit::AddmmGluArgs args(int i) const {
    const OperandSet& s = set(i);
    return contiguous_args(shape_, shape_.m, s.a.get(), s.b.get(), s.bias.get(), s.y.get(), s.out.get());
  }

 private:
  GemmShape shape_;
  Operands which_;
  std::vector<OperandSet> sets_;
};

}  // namespace glukit_bench
