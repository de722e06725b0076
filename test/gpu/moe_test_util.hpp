// Helpers of the experts' GPU tests (moe_experts_sm90.cu, moe_backward_sm90.cu): a ragged
// routing's expert ids, and the count of elements written where nothing may be.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "glukit/kernels/moe_route.hpp"
#include "gpu_test_util.hpp"

namespace glukit::test {

/// Elements of a rows x ld buffer written (not the poison): in the first `valid` rows past
/// column `cols`, in the other rows anywhere.
template <class T>
std::int64_t strays(const std::vector<T>& v, std::int64_t rows, std::int64_t valid, std::int64_t cols,
                    std::int64_t ld) {
  std::int64_t n = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = (r < valid ? cols : 0); j < ld; ++j) {
      std::uint16_t bits;
      std::memcpy(&bits, &v[r * ld + j], 2);
      n += bits != poison_bits;
    }
  return n;
}

/// Expert ids (tokens x top_k): expert 0 empty, expert 1 one row, expert 2 129 rows (where
/// the tokens allow), the rest at random; a few ids out of range.
inline std::vector<std::int64_t> moe_choices(std::int64_t tokens, int top_k, int experts, std::mt19937_64& rng) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(tokens * top_k));
  std::int64_t c = 0;
  for (auto& v : idx) {
    if (c == 0) v = 1;
    else if (c <= 129) v = 2;
    else if (rng() % 97 == 0) v = rng() % 2 ? -3 : experts + 5;
    else v = 3 + static_cast<std::int64_t>(rng() % (experts - 3));
    ++c;
  }
  std::shuffle(idx.begin() + 1, idx.end(), rng);  // choice 0 keeps expert 1's single row
  return idx;
}

/// A routing made on the device: the expert ids uploaded, moe_route's outputs and workspace,
/// and its arguments (route.routing(): the layout the grouped kernels read).
struct DeviceRouting {
  DeviceBuffer<std::int64_t> idx;
  DeviceBuffer<std::int32_t> offsets, row_choice, choice_row, invalid;
  DeviceBuffer<unsigned char> ws;
  MoeRouteArgsT<std::int64_t> route;
  DeviceRouting(const std::vector<std::int64_t>& ids, std::int64_t tokens, int top_k, int experts)
      : idx(ids.size()),
        offsets(static_cast<std::size_t>(experts) + 1),
        row_choice(ids.size()),
        choice_row(ids.size()),
        invalid(1),
        ws(static_cast<std::size_t>(moe_route_workspace_bytes(tokens, top_k, experts))),
        route{.top_k_index = idx.ptr, .tokens = tokens, .top_k = top_k, .experts = experts,
              .expert_offsets = offsets.ptr, .row_choice = row_choice.ptr, .choice_row = choice_row.ptr,
              .invalid_choices = invalid.ptr, .workspace = ws.ptr} {
    idx.upload(ids);
    const Status st = moe_route(route);
    INFO("moe_route: " << st.message());
    REQUIRE(st.ok());
  }
  MoeRouting routing() const { return route.routing(); }
};

}  // namespace glukit::test
