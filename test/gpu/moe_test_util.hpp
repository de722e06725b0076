// Helpers of the experts' GPU tests (moe_*_sm90.cu): a ragged routing's expert ids, the count of
// elements written where nothing may be, and the per-expert checks of a gated and a down
// projection's output against the dense references.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "glukit/kernels/moe_route.hpp"
#include "glukit/reference/moe_routing.hpp"
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

/// Every expert's rows of h (the routed rows x ldh of `route`) against the dense gated projection
/// (op) of its tokens' rows of x (ldx apart), with the expert's W (2n x hidden, in layout gl) and
/// bias (2n, or null) from w and bias (experts after one another); nothing written in the padding
/// columns nor in the rows routed to no expert.
template <class T, class Op>
void check_gated_experts(const std::vector<T>& h, std::int64_t ldh, const std::vector<T>& x, std::int64_t ldx,
                         const T* w, const T* bias, std::int64_t n, std::int64_t hidden, GateLayout gl,
                         const reference::MoeRoutingHost& route, int top_k, Op op) {
  const int experts = static_cast<int>(route.expert_offsets.size()) - 1;
  for (int e = 0; e < experts; ++e) {
    const std::int64_t r0 = route.expert_offsets[e], r1 = route.expert_offsets[e + 1];
    if (r0 == r1) continue;
    INFO("expert " << e << ": rows " << r0 << ".." << r1);
    std::vector<T> gathered;
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t t = route.row_choice[r] / top_k;
      gathered.insert(gathered.end(), x.begin() + t * ldx, x.begin() + t * ldx + hidden);
    }
    GatedProjectionArgsT<T> d{gathered.data(), w + e * 2 * n * hidden, bias ? bias + e * 2 * n : nullptr, nullptr,
                              r1 - r0, n, hidden, hidden, hidden, ldh, gl};
    check_output_matches(std::vector<T>(h.begin() + r0 * ldh, h.begin() + r1 * ldh),
                         Shape{r1 - r0, n, hidden, 0, 0, 0, ldh}, gated_reference_of(d, op));
  }
  CHECK(strays(h, static_cast<std::int64_t>(route.row_choice.size()), route.expert_offsets[experts], n, ldh) == 0);
}

/// Every expert's rows of out (ldo) against the dense GEMM of its rows of h (ldh, k wide) with
/// its W_d (hidden x k in layout wl: col_major (E, H, I), row_major (E, I, H)) and bias (hidden,
/// or null); nothing written in the padding columns nor in the rows routed to no expert.
template <class T>
void check_down_experts(const std::vector<T>& out, std::int64_t ldo, const T* h, std::int64_t ldh, const T* wd,
                        const T* bias, std::int64_t hidden, std::int64_t k, Layout wl,
                        const reference::MoeRoutingHost& route) {
  const int experts = static_cast<int>(route.expert_offsets.size()) - 1;
  for (int e = 0; e < experts; ++e) {
    const std::int64_t r0 = route.expert_offsets[e], r1 = route.expert_offsets[e + 1];
    if (r0 == r1) continue;
    INFO("expert " << e);
    AddmmGluArgsT<T> g{h + r0 * ldh, wd + e * hidden * k, bias ? bias + e * hidden : nullptr, nullptr, nullptr,
                       r1 - r0, hidden, k, ldh, wl == Layout::col_major ? k : hidden, 0, ldo, wl};
    check_output_matches(std::vector<T>(out.begin() + r0 * ldo, out.begin() + r1 * ldo),
                         Shape{r1 - r0, hidden, k, 0, 0, 0, ldo}, reference_of(g, epilogue::BiasOnly{}));
  }
  CHECK(strays(out, static_cast<std::int64_t>(route.row_choice.size()), route.expert_offsets[experts], hidden, ldo) ==
        0);
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
