// Checks a sample of output rows against glukit's fp64 host reference. The
// benchmark uses it to make sure the vendor baselines compute the same problem
// (a wrong operand order or bias broadcast would otherwise time a different
// computation); glukit's own variants are then compared with the full
// cuBLASLt output on the device.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/device_data.cuh"
#include "glukit/reference/addmm_glu.hpp"
#include "problem.hpp"

namespace glukit_bench {

/// Relative L2 error of `rows` sampled rows of `out` (contiguous, m x n) against
/// reference::addmm_glu(op) over the operands of ops.set(0) (bias and Y used if
/// present; B read in ops.b_layout()).
template <class T, class Op>
double sampled_rows_error(const RotatedOperandsT<T>& ops, const T* out, Op op, int rows,
                          std::uint64_t seed, cudaStream_t stream) {
  const OperandSetT<T>& set = ops.set(0);
  const GemmShape& s = ops.shape();
  rows = static_cast<int>(std::min<std::int64_t>(rows, s.m));
  const auto n = static_cast<std::size_t>(s.n);
  const auto k = static_cast<std::size_t>(s.k);
  constexpr std::size_t e = sizeof(T);
  // B is k x n or n x k: the same count of elements, copied as stored.
  std::vector<T> b(k * n), bias(set.bias.get() ? n : 0), a(rows * k), y(rows * n), got(rows * n);
  GLUKIT_BENCH_CHECK_CUDA(
      cudaMemcpyAsync(b.data(), set.b.get(), b.size() * e, cudaMemcpyDeviceToHost, stream));
  if (!bias.empty())
    GLUKIT_BENCH_CHECK_CUDA(
        cudaMemcpyAsync(bias.data(), set.bias.get(), n * e, cudaMemcpyDeviceToHost, stream));
  // Row r of the sample: one row drawn at random from each of `rows` equal bands.
  const std::int64_t band = std::max<std::int64_t>(s.m / rows, 1);
  for (int r = 0; r < rows; ++r) {
    const std::int64_t row =
        std::min<std::int64_t>(r * band + std::int64_t(detail::mix64(seed + r) % band), s.m - 1);
    GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(a.data() + r * k, set.a.get() + row * s.k, k * e,
                                            cudaMemcpyDeviceToHost, stream));
    GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(got.data() + r * n, out + row * s.n, n * e,
                                            cudaMemcpyDeviceToHost, stream));
    if (set.y.get())
      GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(y.data() + r * n, set.y.get() + row * s.n, n * e,
                                              cudaMemcpyDeviceToHost, stream));
  }
  GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));

  const glukit::AddmmGluArgsT<T> sample =
      contiguous_args<T>(s, rows, a.data(), b.data(), bias.empty() ? nullptr : bias.data(),
                         set.y.get() ? y.data() : nullptr, nullptr, ops.b_layout());
  const std::vector<double> ref = glukit::reference::addmm_glu(sample, op);
  return glukit::reference::relative_l2_error(got.data(), s.n, ref, rows, s.n);
}

}  // namespace glukit_bench
