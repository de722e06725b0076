// Host reference of the MoE routing layout (ops/moe_routing.hpp): a stable counting sort of
// the choices by expert, invalid ids last, in choice order.
#pragma once
#include <cstdint>
#include <vector>

#include "glukit/ops/moe_routing.hpp"

namespace glukit::reference {

struct MoeRoutingHost {
  std::vector<std::int32_t> expert_offsets;  ///< experts + 1
  std::vector<std::int32_t> row_choice;      ///< tokens * top_k
  std::vector<std::int32_t> choice_row;      ///< tokens * top_k
  std::int32_t invalid_choices = 0;
};

/// top_k_index: tokens x top_k expert ids (any integer type).
template <class Index>
MoeRoutingHost moe_route(const Index* top_k_index, std::int64_t tokens, int top_k, int experts) {
  const std::int64_t rows = tokens * top_k;
  MoeRoutingHost r;
  r.expert_offsets.assign(static_cast<std::size_t>(experts) + 1, 0);
  r.row_choice.assign(static_cast<std::size_t>(rows), 0);
  r.choice_row.assign(static_cast<std::size_t>(rows), 0);
  // Bucket of each choice: its expert, or `experts` for an id out of range.
  const auto bucket = [&](std::int64_t c) {
    const Index e = top_k_index[c];
    return e >= 0 && e < experts ? static_cast<std::int64_t>(e) : std::int64_t{experts};
  };
  std::vector<std::int64_t> next(static_cast<std::size_t>(experts) + 2, 0);
  for (std::int64_t c = 0; c < rows; ++c) ++next[static_cast<std::size_t>(bucket(c)) + 1];
  for (int b = 0; b <= experts; ++b) next[b + 1] += next[b];
  for (int e = 0; e <= experts; ++e) r.expert_offsets[e] = static_cast<std::int32_t>(next[e]);
  r.invalid_choices = static_cast<std::int32_t>(rows - next[experts]);
  for (std::int64_t c = 0; c < rows; ++c) {
    const std::int64_t row = next[static_cast<std::size_t>(bucket(c))]++;
    r.row_choice[row] = static_cast<std::int32_t>(c);
    r.choice_row[c] = static_cast<std::int32_t>(row);
  }
  return r;
}

}  // namespace glukit::reference
