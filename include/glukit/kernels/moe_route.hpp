// The MoE routing layout made on the device (ops/moe_routing.hpp): a stable counting sort
// of the choices by expert in four launches, no atomics and no host synchronisation (CUDA
// graph safe), the same bits run after run:
//   1. count: block `chunk` counts its moe_route_chunk choices per bucket (an expert, or the
//      last bucket for ids out of range), thread b scanning the chunk for bucket b;
//   2. chunk bases: thread b turns bucket b's counts into each chunk's first row within
//      the bucket, in chunk order, and keeps the bucket's total;
//   3. bucket offsets: one block scans the totals into expert_offsets (and invalid_choices,
//      the last bucket's total);
//   4. scatter: a choice's row is its bucket's offset, plus its chunk's base, plus the
//      choices of its bucket before it in its chunk.
// The workspace holds the counts, (chunks + 1) x (experts + 1) int32 (the last row: the
// totals). One source for both backends, like kernels/column_sums.hpp.
#pragma once
#include <cstdint>

#include "glukit/ops/moe_routing.hpp"
#include "glukit/ops/status.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/runtime.hpp"
#include "glukit/platform/thread_index.hpp"

namespace glukit {

namespace detail {
inline constexpr int moe_route_threads = moe_route_chunk;

/// The bucket of choice c: its expert id, or `experts` when the id is out of range.
template <class Index>
GLUKIT_DEVICE inline int moe_bucket(const Index* top_k_index, std::int64_t c, int experts) {
  const Index e = top_k_index[c];
  return e >= 0 && e < experts ? static_cast<int>(e) : experts;
}

/// The buckets of block_x()'s chunk into `buckets` (-1 past the last choice).
template <class Index>
GLUKIT_DEVICE inline void moe_load_chunk(int* buckets, const Index* top_k_index, std::int64_t rows, int experts) {
  const std::int64_t c = std::int64_t{block_x()} * moe_route_chunk + thread_x();
  buckets[thread_x()] = c < rows ? moe_bucket(top_k_index, c, experts) : -1;
  block_sync();
}

/// Pass 1. counts[chunk][b]: the chunk's choices in bucket b.
template <class Index>
__global__ void __launch_bounds__(moe_route_threads)
    moe_route_count(const Index* top_k_index, std::int64_t rows, int experts, std::int32_t* counts) {
  __shared__ int buckets[moe_route_chunk];
  moe_load_chunk(buckets, top_k_index, rows, experts);
  std::int32_t* row = counts + std::int64_t{block_x()} * (experts + 1);
  for (int b = static_cast<int>(thread_x()); b <= experts; b += moe_route_threads) {
    int n = 0;
    for (int i = 0; i < moe_route_chunk; ++i) n += buckets[i] == b;
    row[b] = n;
  }
}

/// Pass 2. Thread b: counts[chunk][b] becomes the chunk's first row within bucket b (the
/// counts of the chunks before it); counts[chunks][b] the bucket's total.
template <int = 0>
__global__ void __launch_bounds__(moe_route_threads)
    moe_route_chunk_bases(std::int32_t* counts, std::int64_t chunks, int experts) {
  const std::int64_t b = std::int64_t{block_x()} * moe_route_threads + thread_x();
  if (b > experts) return;
  std::int32_t run = 0;
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
    std::int32_t* v = counts + chunk * (experts + 1) + b;
    const std::int32_t n = *v;
    *v = run;
    run += n;
  }
  counts[chunks * (experts + 1) + b] = run;
}

/// Pass 3, one block. The totals (counts[chunks][.]) scanned into expert_offsets: thread t
/// sums its segment of buckets, thread 0 the segments, then each thread writes its
/// segment's offsets.
template <int = 0>
__global__ void __launch_bounds__(moe_route_threads)
    moe_route_offsets(const std::int32_t* totals, int experts, std::int32_t* expert_offsets,
                      std::int32_t* invalid_choices) {
  __shared__ std::int32_t segment_start[moe_route_threads];
  const int t = static_cast<int>(thread_x());
  const int per = (experts + 1 + moe_route_threads - 1) / moe_route_threads;
  const int b0 = t * per, b1 = b0 + per < experts + 1 ? b0 + per : experts + 1;
  std::int32_t sum = 0;
  for (int b = b0; b < b1; ++b) sum += totals[b];
  segment_start[t] = sum;
  block_sync();
  if (t == 0) {
    std::int32_t run = 0;
    for (int i = 0; i < moe_route_threads; ++i) {
      const std::int32_t n = segment_start[i];
      segment_start[i] = run;
      run += n;
    }
  }
  block_sync();
  std::int32_t run = segment_start[t];
  for (int b = b0; b < b1; ++b) {
    expert_offsets[b] = run;
    run += totals[b];
  }
  if (t == 0) *invalid_choices = totals[experts];
}

/// Pass 4. Each choice to its row (and its weight, where asked, to row_weight).
template <class Index>
__global__ void __launch_bounds__(moe_route_threads)
    moe_route_scatter(const Index* top_k_index, std::int64_t rows, int experts, const std::int32_t* chunk_bases,
                      const std::int32_t* expert_offsets, std::int32_t* row_choice, std::int32_t* choice_row,
                      const float* top_k_weights, float* row_weight) {
  __shared__ int buckets[moe_route_chunk];
  moe_load_chunk(buckets, top_k_index, rows, experts);
  const int t = static_cast<int>(thread_x());
  const int b = buckets[t];
  if (b < 0) return;
  int before = 0;
  for (int i = 0; i < t; ++i) before += buckets[i] == b;
  const std::int64_t c = std::int64_t{block_x()} * moe_route_chunk + t;
  const std::int32_t row = expert_offsets[b] + chunk_bases[std::int64_t{block_x()} * (experts + 1) + b] + before;
  row_choice[row] = static_cast<std::int32_t>(c);
  choice_row[c] = row;
  if (row_weight != nullptr) row_weight[row] = top_k_weights[c];
}
}  // namespace detail

/// Makes the routing layout of a.top_k_index on `stream` (ops/moe_routing.hpp): validates,
/// then launches; asynchronous. a.routing() is the layout once it has run.
template <class Index>
Status moe_route(const MoeRouteArgsT<Index>& a, stream_t stream = {}) {
  if (Status s = validate_moe_route(a); !s) return s;
  const Index* index = a.top_k_index;
  std::int64_t rows = a.tokens * a.top_k;
  std::int64_t chunks = moe_route_chunks(a.tokens, a.top_k);
  int experts = a.experts;
  auto* counts = static_cast<std::int32_t*>(a.workspace);
  const std::int32_t* totals = counts + chunks * (experts + 1);
  std::int32_t* offsets = a.expert_offsets;
  std::int32_t* invalid = a.invalid_choices;
  std::int32_t* row_choice = a.row_choice;
  std::int32_t* choice_row = a.choice_row;
  const float* weights = a.top_k_weights;
  float* row_weight = a.row_weight;
  const auto launch = [&](auto* kernel, std::int64_t grid, void** args) -> Status {
    if (error_t e = launch_kernel(kernel, static_cast<unsigned>(grid), detail::moe_route_threads, args, 0, stream);
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    return Status::success();
  };
  const std::int64_t bucket_blocks = (experts + 1 + detail::moe_route_threads - 1) / detail::moe_route_threads;
  void* count_args[] = {&index, &rows, &experts, &counts};
  void* base_args[] = {&counts, &chunks, &experts};
  void* offset_args[] = {&totals, &experts, &offsets, &invalid};
  void* scatter_args[] = {&index, &rows, &experts, &counts, &offsets, &row_choice, &choice_row, &weights, &row_weight};
  if (rows > 0)
    if (Status s = launch(&detail::moe_route_count<Index>, chunks, count_args); !s) return s;
  if (Status s = launch(&detail::moe_route_chunk_bases<>, bucket_blocks, base_args); !s) return s;
  if (Status s = launch(&detail::moe_route_offsets<>, 1, offset_args); !s) return s;
  if (rows > 0)
    if (Status s = launch(&detail::moe_route_scatter<Index>, chunks, scatter_args); !s) return s;
  return Status::success();
}

}  // namespace glukit
