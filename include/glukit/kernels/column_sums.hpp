// The deterministic column sums of a composition's `column_sum` output (addmm_glu's
// backward: dbias, the column sums of dX). The kernels' epilogues write the sums of each
// 16-row group of the output's rows, as stored, into the caller's workspace (the
// partials: column_partial_rows(m) x n fp32, row-major), with plain stores; two passes
// then add them in an order fixed by m and n alone, whatever order the tiles ran in, so
// the same inputs give the same bits, run after run:
//   1. each chunk of column_chunk_rows partial rows, summed in row order into its first row;
//   2. the chunks' first rows, summed in chunk order into the vector (written, not added).
// One source for both backends (a device compiler's header: kernels/sm90 and kernels/cdna
// include it): plain loads and stores, launched through platform/runtime.hpp.
#pragma once
#include <cstdint>

#include "glukit/ops/operands.hpp"
#include "glukit/ops/status.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/runtime.hpp"
#include "glukit/platform/thread_index.hpp"

namespace glukit {

namespace detail {
inline constexpr int column_chunk_rows = 32;  ///< partial rows per chunk of pass 1
inline constexpr int column_sum_threads = 128;

/// Pass 1. Thread (chunk, quad): columns 4 quad .. 4 quad + 3 of partial rows
/// [chunk * column_chunk_rows, + column_chunk_rows) summed in row order into the first.
template <int = 0>
__global__ void __launch_bounds__(column_sum_threads)
    column_partials_chunk(float* partials, std::int64_t rows, std::int64_t n, std::int64_t quad_blocks) {
  const std::int64_t chunk = block_x() / quad_blocks;
  const std::int64_t quad = (block_x() % quad_blocks) * column_sum_threads + thread_x();
  if (4 * quad >= n) return;
  const std::int64_t r0 = chunk * column_chunk_rows;
  const std::int64_t r1 = r0 + column_chunk_rows < rows ? r0 + column_chunk_rows : rows;
  float4* first = reinterpret_cast<float4*>(partials + r0 * n) + quad;
  float4 s = *first;
  for (std::int64_t r = r0 + 1; r < r1; ++r) {
    const float4 v = reinterpret_cast<const float4*>(partials + r * n)[quad];
    s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
  }
  *first = s;
}

/// Pass 2. Thread quad: the chunks' sums of its 4 columns, in chunk order, into sums.
template <int = 0>
__global__ void __launch_bounds__(column_sum_threads)
    column_partials_total(const float* partials, std::int64_t rows, std::int64_t n, float* sums) {
  const std::int64_t quad = std::int64_t{block_x()} * column_sum_threads + thread_x();
  if (4 * quad >= n) return;
  float4 s = reinterpret_cast<const float4*>(partials)[quad];
  for (std::int64_t r = column_chunk_rows; r < rows; r += column_chunk_rows) {
    const float4 v = reinterpret_cast<const float4*>(partials + r * n)[quad];
    s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
  }
  reinterpret_cast<float4*>(sums)[quad] = s;
}
}  // namespace detail

/// Sums the column partials of an m x n output (column_partial_rows(m) rows; n a multiple
/// of 4, both buffers 16-byte aligned: the ops' rules) into sums (n floats), on stream.
/// Asynchronous; the partials are overwritten.
inline Status sum_column_partials(float* partials, std::int64_t m, std::int64_t n, float* sums, stream_t stream) {
  std::int64_t rows = column_partial_rows(m);
  if (rows == 0 || n == 0) return Status::success();
  std::int64_t quad_blocks = (n / 4 + detail::column_sum_threads - 1) / detail::column_sum_threads;
  const std::int64_t chunks = (rows + detail::column_chunk_rows - 1) / detail::column_chunk_rows;
  if (chunks * quad_blocks > (std::int64_t{1} << 31) - 1)
    return Status::invalid("m, n: too many column partials for one grid");
  void* args1[] = {&partials, &rows, &n, &quad_blocks};
  if (rows > 1) {  // (one chunk too: pass 2 reads only the chunks' first rows)
    if (error_t e = launch_kernel(&detail::column_partials_chunk<>, static_cast<unsigned>(chunks * quad_blocks),
                                  detail::column_sum_threads, args1, 0, stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
  }
  void* args2[] = {&partials, &rows, &n, &sums};
  if (error_t e = launch_kernel(&detail::column_partials_total<>, static_cast<unsigned>(quad_blocks),
                                detail::column_sum_threads, args2, 0, stream);
      e != success)
    return {StatusCode::runtime_error, error_string(e)};
  return Status::success();
}

}  // namespace glukit
