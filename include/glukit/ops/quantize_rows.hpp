// The fp8 output's second step as an op's arguments and rules: per-row e4m3 quantisation
// (QuantizeRowsArgsT<T>; the CUDA kernel is kernels/sm90/quantize_rows.hpp's
// glukit::quantize_rows_e4m3). No backend.
#pragma once
#include <cstdint>

#include "glukit/ops/status.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/platform/fp8.hpp"

namespace glukit {

/// Per-row e4m3 quantisation of an output (the fp8 output's second step, after a kernel merged
/// each row's largest |value| into absmax: GatedProjectionFp8ArgsT::row_absmax), or of any
/// 16-bit matrix (absmax null: the row maxima are found first, e.g. an activation's dynamic
/// per-token scales):
///   scale[i] = max(absmax[i] / 448, FLT_MIN)  (NaN stays NaN: a zero row never divides by 0)
///   q[i][j]  = e4m3(x[i][j] / scale[i])      (round to nearest even, saturating to +-448, NaN kept)
/// x: m x n (ldx), T; q: m x n (ldq, bytes); n a multiple of 8.
template <Element T>
struct QuantizeRowsArgsT {
  const T* x = nullptr;
  const float* absmax = nullptr;
  float* scale = nullptr;
  float8_e4m3_t* q = nullptr;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t ldx = 0;
  std::int64_t ldq = 0;
};

/// quantize_rows_e4m3's rules (host only), each naming its argument.
template <Element T>
Status validate_quantize_rows(const QuantizeRowsArgsT<T>& p) {
  if (p.m < 0 || p.m >= max_dimension) return Status::invalid("m: must be >= 0 and < 2^31");
  if (p.n < 0 || p.n >= max_dimension) return Status::invalid("n: must be >= 0 and < 2^31");
  if (p.m == 0 || p.n == 0) return Status::success();
  if (p.n % vector_elems != 0) return Status::invalid("n: must be a multiple of 8");
  if (p.x == nullptr || !detail::aligned16(p.x)) return Status::invalid("x: must not be null, 16-byte aligned");
  if (p.ldx < p.n || p.ldx % vector_elems != 0) return Status::invalid("ldx: must be >= n and a multiple of 8");
  if (p.q == nullptr || reinterpret_cast<std::uintptr_t>(p.q) % 8 != 0)
    return Status::invalid("q: must not be null, 8-byte aligned");
  if (p.ldq < p.n || p.ldq % 8 != 0) return Status::invalid("ldq: must be >= n and a multiple of 8");
  if (p.scale == nullptr) return Status::invalid("scale: must not be null");
  constexpr std::int64_t max_elems = std::int64_t{1} << 61;
  if (p.ldx > max_elems / p.m || p.ldq > max_elems / p.m) return Status::invalid("ldx, ldq: m * ld overflows");
  return Status::success();
}

}  // namespace glukit
