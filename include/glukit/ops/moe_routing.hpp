// The routing layout of a Mixture-of-Experts layer as an op's arguments and rules: each
// token's top_k choices become routed rows, sorted by expert and, inside an expert, by
// choice (token, then slot), so a grouped GEMM reads expert e's rows as one contiguous
// block. The layout holds indices only: a routed row reads its token's row of x where it
// is (no permuted copy), and its router weight where the router left it.
//   choice c = t * top_k + j: token t's j-th expert, top_k_index[c] (as transformers passes
//     it: tokens x top_k, row-major);
//   row_choice[r]: the choice routed row r carries (its token: row_choice[r] / top_k);
//   choice_row[c]: the routed row of choice c (the inverse: the combine's gather);
//   expert_offsets[e] .. expert_offsets[e + 1]: expert e's routed rows (experts + 1 values;
//     expert_offsets[experts] is the number of valid choices).
// A choice whose expert id lies outside [0, experts) is routed to no expert: its rows come
// after expert_offsets[experts], in choice order, and invalid_choices counts them, so the
// caller can refuse the batch without a host synchronisation (e.g. an asynchronous assert).
// The device kernels are kernels/moe_route.hpp's; reference/moe_routing.hpp is the host
// reference. No backend.
#pragma once
#include <cstdint>

#include "glukit/ops/status.hpp"

namespace glukit {

/// The routed rows, made by moe_route (kernels/moe_route.hpp) or by the caller: device
/// pointers, read by the grouped kernels.
struct MoeRouting {
  const std::int32_t* expert_offsets = nullptr;  ///< experts + 1
  const std::int32_t* row_choice = nullptr;      ///< tokens * top_k
  const std::int32_t* choice_row = nullptr;      ///< tokens * top_k (null where not needed)
  std::int64_t tokens = 0;
  int top_k = 0;
  int experts = 0;
  constexpr std::int64_t rows() const { return tokens * top_k; }
};

/// Most experts a routing names (the count pass scans its chunk once per expert, and the
/// workspace holds a count per chunk and expert), and most routed rows (32-bit row indices).
inline constexpr int max_moe_experts = 4096;
inline constexpr std::int64_t max_moe_rows = (std::int64_t{1} << 31) - 1;

/// Choices per chunk of the routing kernels: each chunk is counted, then scattered, by one
/// block in choice order (kernels/moe_route.hpp).
inline constexpr int moe_route_chunk = 256;

/// moe_route's arguments. Index: std::int32_t or std::int64_t (torch.topk's indices).
/// Outputs: expert_offsets (experts + 1), row_choice and choice_row (tokens * top_k each),
/// invalid_choices (one value); workspace: moe_route_workspace_bytes(tokens, top_k, experts)
/// bytes, 16-byte aligned. Optional, together: top_k_weights (tokens x top_k fp32, the router's
/// weights) and row_weight (tokens * top_k fp32): row_weight[r] = top_k_weights[row_choice[r]],
/// each routed row's weight in routed order (a router-weighted backward's
/// GroupedGatedBackwardArgsT::row_weight).
template <class Index>
struct MoeRouteArgsT {
  const Index* top_k_index = nullptr;
  std::int64_t tokens = 0;
  int top_k = 0;
  int experts = 0;
  std::int32_t* expert_offsets = nullptr;
  std::int32_t* row_choice = nullptr;
  std::int32_t* choice_row = nullptr;
  std::int32_t* invalid_choices = nullptr;
  void* workspace = nullptr;
  const float* top_k_weights = nullptr;
  float* row_weight = nullptr;

  /// The layout these outputs hold once moe_route has run.
  constexpr MoeRouting routing() const { return {expert_offsets, row_choice, choice_row, tokens, top_k, experts}; }
};

/// Chunks of moe_route_chunk choices.
constexpr std::int64_t moe_route_chunks(std::int64_t tokens, int top_k) {
  return (tokens * top_k + moe_route_chunk - 1) / moe_route_chunk;
}

/// Bytes of moe_route's workspace: each chunk's count per bucket (the experts, and a last
/// bucket for the invalid choices), and a row of the buckets' totals.
constexpr std::int64_t moe_route_workspace_bytes(std::int64_t tokens, int top_k, int experts) {
  return (moe_route_chunks(tokens, top_k) + 1) * (std::int64_t{experts} + 1) * 4;
}

/// The rules a routing's sizes meet, each naming its argument (host only).
inline Status validate_moe_sizes(std::int64_t tokens, int top_k, int experts) {
  if (experts < 1 || experts > max_moe_experts) return Status::invalid("experts: must be in [1, 4096]");
  if (top_k < 1 || top_k > experts) return Status::invalid("top_k: must be in [1, experts]");
  if (tokens < 0 || tokens > max_moe_rows / top_k)
    return Status::invalid("tokens: tokens * top_k must be in [0, 2^31)");
  return Status::success();
}

/// moe_route's rules (host only), each naming its argument.
template <class Index>
Status validate_moe_route(const MoeRouteArgsT<Index>& a) {
  static_assert(sizeof(Index) == 4 || sizeof(Index) == 8, "MoeRouteArgsT: Index is std::int32_t or std::int64_t");
  if (Status s = validate_moe_sizes(a.tokens, a.top_k, a.experts); !s) return s;
  if (a.expert_offsets == nullptr) return Status::invalid("expert_offsets: must not be null");
  if (a.invalid_choices == nullptr) return Status::invalid("invalid_choices: must not be null");
  if (a.workspace == nullptr || !detail::aligned16(a.workspace))
    return Status::invalid("workspace: must not be null, 16-byte aligned, moe_route_workspace_bytes long");
  if ((a.top_k_weights == nullptr) != (a.row_weight == nullptr))
    return Status::invalid("top_k_weights, row_weight: give both or neither");
  if (reinterpret_cast<std::uintptr_t>(a.top_k_weights) % 4 != 0)
    return Status::invalid("top_k_weights: must be 4-byte aligned");
  if (reinterpret_cast<std::uintptr_t>(a.row_weight) % 4 != 0) return Status::invalid("row_weight: must be 4-byte aligned");
  if (a.tokens == 0) return Status::success();
  if (a.top_k_index == nullptr) return Status::invalid("top_k_index: must not be null");
  if (a.row_choice == nullptr) return Status::invalid("row_choice: must not be null");
  if (a.choice_row == nullptr) return Status::invalid("choice_row: must not be null");
  return Status::success();
}

}  // namespace glukit
