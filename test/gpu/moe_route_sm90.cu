// GPU tests of glukit::moe_route (kernels/moe_route.hpp): the routing layout equal, value
// for value, to the host reference (reference/moe_routing.hpp) on random routings with ids
// of both index types, skewed routings (one expert takes every choice, experts left empty),
// ids out of range (routed last and counted), tokens = 0 and one token; every output
// poisoned first; each routed row's router weight in routed order (row_weight) equal to its
// choice's; two launches give the same bits; the rules refuse bad arguments before anything
// is written.
#include "gpu_test_util.hpp"
#include "glukit/kernels/moe_route.hpp"
#include "glukit/reference/moe_routing.hpp"

namespace glukit::test {
namespace {

enum class Skew { balanced, one_expert, half_empty, with_invalid };

template <class Index>
std::vector<Index> random_choices(std::int64_t tokens, int top_k, int experts, Skew skew, std::mt19937_64& rng) {
  std::vector<Index> idx(static_cast<std::size_t>(tokens * top_k));
  std::uniform_int_distribution<int> any(0, experts - 1);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int j = 0; j < top_k; ++j) {
      int e = 0;
      switch (skew) {
        case Skew::balanced: e = any(rng); break;
        case Skew::one_expert: e = j == 0 ? experts / 2 : any(rng); break;
        case Skew::half_empty: e = 2 * (any(rng) / 2); break;  // odd experts stay empty
        case Skew::with_invalid: e = any(rng) % 5 == 0 ? (any(rng) % 2 ? -1 : experts + any(rng)) : any(rng); break;
      }
      idx[static_cast<std::size_t>(t * top_k + j)] = static_cast<Index>(e);
    }
  }
  return idx;
}

template <class Index>
void check_routing(std::int64_t tokens, int top_k, int experts, Skew skew) {
  const std::uint64_t seed = fresh_seed();
  INFO("tokens " << tokens << " top_k " << top_k << " experts " << experts << " skew " << int(skew) << " seed "
                 << seed);
  std::mt19937_64 rng(seed);
  const std::vector<Index> idx = random_choices<Index>(tokens, top_k, experts, skew, rng);
  const reference::MoeRoutingHost want = reference::moe_route(idx.data(), tokens, top_k, experts);
  const std::size_t rows = static_cast<std::size_t>(tokens * top_k);
  DeviceBuffer<Index> d_idx(rows);
  d_idx.upload(idx);
  std::vector<float> weights(rows);
  std::uniform_real_distribution<float> wdist(0.f, 1.f);
  for (float& w : weights) w = wdist(rng);
  DeviceBuffer<float> d_weights(rows), row_weight(rows);
  d_weights.upload(weights);
  DeviceBuffer<std::int32_t> offsets(static_cast<std::size_t>(experts) + 1), row_choice(rows), choice_row(rows),
      invalid(1);
  DeviceBuffer<unsigned char> ws(static_cast<std::size_t>(moe_route_workspace_bytes(tokens, top_k, experts)));
  MoeRouteArgsT<Index> a{.top_k_index = d_idx.ptr, .tokens = tokens, .top_k = top_k, .experts = experts,
                         .expert_offsets = offsets.ptr, .row_choice = row_choice.ptr, .choice_row = choice_row.ptr,
                         .invalid_choices = invalid.ptr, .workspace = ws.ptr, .top_k_weights = d_weights.ptr,
                         .row_weight = row_weight.ptr};
  std::vector<std::int32_t> first_rows;
  for (int launch = 0; launch < 2; ++launch) {
    offsets.poison(), row_choice.poison(), choice_row.poison(), invalid.poison(), ws.poison(), row_weight.poison();
    const Status s = moe_route(a);
    INFO("moe_route: " << s.message());
    REQUIRE(s.ok());
    GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
    CHECK(offsets.download() == want.expert_offsets);
    CHECK(invalid.download()[0] == want.invalid_choices);
    const std::vector<std::int32_t> rc = row_choice.download();
    CHECK(rc == want.row_choice);
    CHECK(choice_row.download() == want.choice_row);
    const std::vector<float> rw = row_weight.download();
    std::size_t wrong = 0;
    for (std::size_t r = 0; r < rows; ++r) wrong += rw[r] != weights[static_cast<std::size_t>(want.row_choice[r])];
    CHECK(wrong == 0);
    if (launch == 0) first_rows = rc;
    else CHECK(rc == first_rows);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("moe_route matches the host reference", "[moe][route]", std::int32_t, std::int64_t) {
  for (Skew skew : {Skew::balanced, Skew::one_expert, Skew::half_empty, Skew::with_invalid}) {
    check_routing<TestType>(4096, 8, 128, skew);   // Qwen3-30B-A3B, 16 chunks of rows per expert
    check_routing<TestType>(1000, 4, 128, skew);   // a ragged last chunk
    check_routing<TestType>(333, 8, 256, skew);    // DeepSeek-V3's experts
    check_routing<TestType>(4099, 2, 8, skew);     // Mixtral: thousands of rows per expert
  }
  check_routing<TestType>(1, 8, 128, Skew::balanced);  // decode: one token
  check_routing<TestType>(3, 1, 1, Skew::balanced);    // one expert
  check_routing<TestType>(17, 3, 4096, Skew::balanced);
}

TEST_CASE("moe_route under the sanitizers: ragged, skewed, invalid ids", "[moe][route][sanitize]") {
  check_routing<std::int64_t>(1000, 4, 128, Skew::with_invalid);
  check_routing<std::int32_t>(333, 8, 256, Skew::one_expert);
}

TEST_CASE("moe_route with no tokens writes zero offsets", "[moe][route]") {
  DeviceBuffer<std::int32_t> offsets(129), invalid(1);
  DeviceBuffer<unsigned char> ws(static_cast<std::size_t>(moe_route_workspace_bytes(0, 8, 128)));
  offsets.poison(), invalid.poison();
  MoeRouteArgsT<std::int64_t> a{.tokens = 0, .top_k = 8, .experts = 128, .expert_offsets = offsets.ptr,
                                .invalid_choices = invalid.ptr, .workspace = ws.ptr};
  const Status s = moe_route(a);
  INFO(s.message());
  REQUIRE(s.ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  CHECK(offsets.download() == std::vector<std::int32_t>(129, 0));
  CHECK(invalid.download()[0] == 0);
}

TEST_CASE("moe_route refuses bad arguments and writes nothing", "[moe][route]") {
  DeviceBuffer<std::int64_t> idx(64);
  DeviceBuffer<std::int32_t> offsets(9), rows(64), inverse(64), invalid(1);
  DeviceBuffer<unsigned char> ws(static_cast<std::size_t>(moe_route_workspace_bytes(32, 2, 8)));
  offsets.poison();
  const MoeRouteArgsT<std::int64_t> good{.top_k_index = idx.ptr, .tokens = 32, .top_k = 2, .experts = 8,
                                         .expert_offsets = offsets.ptr, .row_choice = rows.ptr,
                                         .choice_row = inverse.ptr, .invalid_choices = invalid.ptr,
                                         .workspace = ws.ptr};
  const auto refused = [](MoeRouteArgsT<std::int64_t> a, const char* what) {
    const Status s = moe_route(a);
    INFO(what << ": " << s.message());
    CHECK(s.code() == StatusCode::invalid_argument);
    CHECK(std::string(s.message()).rfind(what, 0) == 0);
  };
  MoeRouteArgsT<std::int64_t> a = good;
  a.experts = 0, refused(a, "experts");
  a = good, a.top_k = 9, refused(a, "top_k");
  a = good, a.tokens = -1, refused(a, "tokens");
  a = good, a.top_k_index = nullptr, refused(a, "top_k_index");
  a = good, a.row_choice = nullptr, refused(a, "row_choice");
  a = good, a.workspace = static_cast<unsigned char*>(a.workspace) + 4, refused(a, "workspace");
  DeviceBuffer<float> weights(64), row_weight(64);
  a = good, a.top_k_weights = weights.ptr, refused(a, "top_k_weights, row_weight");  // one without the other
  a = good, a.row_weight = row_weight.ptr, refused(a, "top_k_weights, row_weight");
  a = good, a.top_k_weights = weights.ptr, a.row_weight = reinterpret_cast<float*>(reinterpret_cast<char*>(row_weight.ptr) + 2);
  refused(a, "row_weight");
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  for (std::int32_t v : offsets.download()) CHECK(v == -1);  // still the poison
}

}  // namespace glukit::test
