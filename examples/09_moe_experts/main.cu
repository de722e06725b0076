// Example 09: the experts of a Qwen3-30B-A3B Mixture-of-Experts layer (128 experts, top-8,
// hidden 2048, intermediate 768), bf16, 4096 tokens, through glukit's grouped kernels:
//   routing:  glukit::moe_route turns the router's top_k_index (tokens x 8, as transformers
//             passes it) into the routed rows sorted by expert, on the device (no host sync),
//             and puts each routed row's router weight beside it (row_weight, for the backward);
//   forward:  the routed rows of x (moe_gather, inside the launch), h = silu(x W_g^e^T) *
//             (x W_u^e^T) and the pre-activations P of every routed row in one launch
//             (grouped_gated_projection<SwiGlu>: the default's tile), out = h W_d^e^T
//             (grouped_down_projection), y[t] = sum_j w[t, j] out[row(t, j)] (moe_combine);
//   backward, router-weighted (as python/glukit/moe.py runs it): dY's routed rows = dy[t]
//             (moe_gather, unweighted), then with each routed row's router weight w_r dH = dY W_d^e with the activation's backward in the epilogue, which
//             applies w_r: dP from w_r dH and H = w_r silu(G) U written, dH never in memory, and
//             each row's silu(G) U . dH as partial sums per 64 columns (row_dots), whose row sum
//             is the router weight's gradient dy[t] . out[row] (grouped_gated_backward on
//             GatedBackwardTma128x128 with row_weight and row_dots; the forward keeps no out rows);
//             that sum per choice (moe_router_grad); dx's routed rows dP W_gu^e (the down
//             projection's kernel over W_gu read as row-major blocks) and their sum per token
//             (moe_combine with unit weights). The weight gradients are K-grouped GEMMs
//             (dP_e^T x_e, dY_e^T h_e: torch._grouped_mm in python/glukit/moe.py).
// Sampled tokens' y, dx and router weights' gradient and sampled routed rows' dP and h are
// checked against fp64 host sums, and each launch's median time of 20 is printed. docs/api.md
// describes the calls; python's glukit.moe.MoEExperts runs the same path from PyTorch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "glukit/glukit.hpp"

#define CHECK_CUDA(call)                                                                              \
  do {                                                                                                \
    const cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "error: %s: %s (%s:%d)\n", #call, cudaGetErrorString(err_), __FILE__, __LINE__); \
      std::exit(2);                                                                                   \
    }                                                                                                 \
  } while (0)

using bf16 = glukit::bfloat16_t;

namespace {

constexpr int kLaunches = 20;
constexpr std::int64_t kTokens = 4096, kHidden = 2048, kInter = 768;
constexpr int kExperts = 128, kTopK = 8;
constexpr std::int64_t kRows = kTokens * kTopK;

std::vector<bf16> random_bf16(std::size_t count, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<bf16> v(count);
  for (auto& x : v) x = glukit::to_bfloat16(d(rng));
  return v;
}

template <class T>
T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class T>
T* poisoned(std::size_t count) {
  T* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, count * sizeof(T)));
  CHECK_CUDA(cudaMemset(d, 0xFF, count * sizeof(T)));  // NaN: an unwritten element fails the check
  return d;
}

template <class T>
std::vector<T> download(const T* d, std::size_t count) {
  std::vector<T> h(count);
  CHECK_CUDA(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

/// Median ms of kLaunches launches of `launch` (after 3 warm-up ones); exits on a non-ok Status.
template <class Launch>
float median_ms(const char* what, Launch&& launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < kLaunches + 3; ++i) {
    CHECK_CUDA(cudaEventRecord(start));
    const glukit::Status s = launch();
    CHECK_CUDA(cudaEventRecord(stop));
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", what, s.message());
      std::exit(1);
    }
    CHECK_CUDA(cudaEventSynchronize(stop));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double f(bf16 v) { return glukit::to_float(v); }
double f(float v) { return v; }
double silu(double g) { return g / (1.0 + std::exp(-g)); }

/// Relative L2 error of got (want.size() values, bf16 or float) against want.
template <class G>
double rel_err(const G* got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t j = 0; j < want.size(); ++j) {
    const double d = f(got[j]) - want[j];
    num += d * d, den += want[j] * want[j];
  }
  return std::isfinite(num) ? std::sqrt(num / den) : INFINITY;
}

}  // namespace

int main() {
  std::mt19937_64 rng(20261205);
  // Each token's 8 distinct experts and its router weights (a softmax's, here random).
  std::vector<std::int64_t> ids(static_cast<std::size_t>(kRows));
  std::vector<float> weights(ids.size());
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (std::int64_t t = 0; t < kTokens; ++t) {
    std::vector<int> perm(kExperts);
    for (int e = 0; e < kExperts; ++e) perm[e] = e;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int j = 0; j < kTopK; ++j) ids[t * kTopK + j] = perm[j], weights[t * kTopK + j] = unit(rng) / kTopK;
  }
  const std::vector<bf16> x = random_bf16(kTokens * kHidden, rng, 1.0f);
  const std::vector<bf16> w_gu = random_bf16(kExperts * 2 * kInter * kHidden, rng, 1.0f / 45);  // (E, 2I, H)
  const std::vector<bf16> w_d = random_bf16(kExperts * kHidden * kInter, rng, 1.0f / 28);      // (E, H, I)
  const std::vector<bf16> dy = random_bf16(kTokens * kHidden, rng, 1.0f);
  bf16 *d_x = upload(x), *d_wgu = upload(w_gu), *d_wd = upload(w_d), *d_dy = upload(dy);
  std::int64_t* d_ids = upload(ids);
  float* d_weights = upload(weights);
  const std::vector<float> ones(ids.size(), 1.0f);
  float* d_ones = upload(ones);
  std::int32_t *d_offsets = poisoned<std::int32_t>(kExperts + 1), *d_row_choice = poisoned<std::int32_t>(kRows),
               *d_choice_row = poisoned<std::int32_t>(kRows), *d_invalid = poisoned<std::int32_t>(1);
  unsigned char* d_ws = poisoned<unsigned char>(glukit::moe_route_workspace_bytes(kTokens, kTopK, kExperts));
  bf16 *d_xr = poisoned<bf16>(kRows * kHidden), *d_h = poisoned<bf16>(kRows * kInter),
       *d_p = poisoned<bf16>(kRows * 2 * kInter), *d_out = poisoned<bf16>(kRows * kHidden),
       *d_y = poisoned<bf16>(kTokens * kHidden), *d_dyr = poisoned<bf16>(kRows * kHidden),
       *d_dp = poisoned<bf16>(kRows * 2 * kInter), *d_h2 = poisoned<bf16>(kRows * kInter),
       *d_dxr = poisoned<bf16>(kRows * kHidden), *d_dx = poisoned<bf16>(kTokens * kHidden);
  const std::int64_t panels = glukit::moe_row_dot_panels(kInter);  // row dots: one per 64 columns of I
  float *d_row_w = poisoned<float>(kRows), *d_row_dots = poisoned<float>(kRows * panels),
        *d_dw = poisoned<float>(kRows);  // the router weights' gradient, tokens x top_k

  const glukit::MoeRouteArgsT<std::int64_t> route{d_ids,        kTokens,   kTopK, kExperts,  d_offsets, d_row_choice,
                                                  d_choice_row, d_invalid, d_ws,  d_weights, d_row_w};
  const glukit::MoeRouting routing = route.routing();
  const float route_ms = median_ms("moe_route", [&] { return glukit::moe_route(route); });

  // Forward. x_routed: the launch gathers x's routed rows first, the kernel reads them by TMA.
  glukit::GroupedGatedProjectionArgsT<bf16> up;
  up.x = d_x, up.w = d_wgu, up.h = d_h, up.routing = routing, up.hidden = kHidden, up.intermediate = kInter;
  up.ldx = kHidden, up.ldh = kInter, up.x_routed = d_xr, up.ld_x_routed = kHidden, up.p = d_p, up.ldp = 2 * kInter;
  const float up_ms = median_ms("grouped_gated_projection",
                                [&] { return glukit::grouped_gated_projection<glukit::epilogue::SwiGlu>(up); });
  glukit::GroupedDownProjectionArgsT<bf16> down;
  down.h = d_h, down.w = d_wd, down.out = d_out, down.routing = routing, down.hidden = kHidden;
  down.intermediate = kInter, down.ldh = kInter, down.ldo = kHidden, down.w_layout = glukit::Layout::col_major;
  const float down_ms = median_ms("grouped_down_projection", [&] { return glukit::grouped_down_projection(down); });
  const glukit::MoeCombineArgsT<bf16, float> combine{d_out, d_weights, d_y, routing, kHidden, kHidden, kHidden};
  const float combine_ms = median_ms("moe_combine", [&] { return glukit::moe_combine(combine); });

  // Backward through the activation, router-weighted: dy's routed rows unweighted, each row's
  // weight applied in the epilogue, the router weights' gradient from the row dots; then dx.
  const glukit::MoeGatherArgsT<bf16> gather_dy{d_dy, d_dyr, routing, kHidden, kHidden, kHidden};
  const float gather_ms = median_ms("moe_gather", [&] { return glukit::moe_gather(gather_dy); });
  glukit::GroupedGatedBackwardArgsT<bf16> back;
  back.dy = d_dyr, back.w_down = d_wd, back.p = d_p, back.dp = d_dp, back.h = d_h2, back.routing = routing;
  back.hidden = kHidden, back.intermediate = kInter, back.lddy = kHidden, back.ldp = back.lddp = 2 * kInter;
  back.ldh = kInter, back.row_weight = d_row_w, back.row_dots = d_row_dots;
  using Back = glukit::policy::GatedBackwardTma128x128<glukit::arch::sm90a>;  // SwiGLU, the forward's
  const float back_ms = median_ms("grouped_gated_backward", [&] { return glukit::grouped_gated_backward<Back>(back); });
  const glukit::MoeRouterGradArgsT<bf16> router_grad{d_row_dots, d_dw, routing, kInter};  // no down bias here
  const float dw_ms = median_ms("moe_router_grad", [&] { return glukit::moe_router_grad(router_grad); });
  glukit::GroupedDownProjectionArgsT<bf16> dx_rows;  // dP (rows x 2I) W_gu^e (2I x H)
  dx_rows.h = d_dp, dx_rows.w = d_wgu, dx_rows.out = d_dxr, dx_rows.routing = routing, dx_rows.hidden = kHidden;
  dx_rows.intermediate = 2 * kInter, dx_rows.ldh = 2 * kInter, dx_rows.ldo = kHidden;
  dx_rows.w_layout = glukit::Layout::row_major;
  const float dx_ms = median_ms("grouped_down_projection (dx)", [&] { return glukit::grouped_down_projection(dx_rows); });
  const glukit::MoeCombineArgsT<bf16, float> dx_sum{d_dxr, d_ones, d_dx, routing, kHidden, kHidden, kHidden};
  const float dx_sum_ms = median_ms("moe_combine (dx)", [&] { return glukit::moe_combine(dx_sum); });

  // Checks on sampled tokens (fp64 sums of the bf16 operands; the backward's from the P and
  // dY rows the GPU wrote, as its own reference is the forward's P).
  const std::vector<std::int32_t> choice_row = download(d_choice_row, kRows);
  const std::vector<bf16> y = download(d_y, kTokens * kHidden), dx = download(d_dx, kTokens * kHidden);
  const std::vector<float> dw = download(d_dw, kRows);
  std::vector<float> dw_got;  // the sampled choices' router gradients, and their fp64 sums
  std::vector<double> dw_want;
  double worst = 0;
  for (const std::int64_t t : {std::int64_t{0}, kTokens / 3, kTokens - 1}) {
    std::vector<double> y_want(kHidden, 0.0), dx_want(kHidden, 0.0);
    for (int j = 0; j < kTopK; ++j) {
      const std::int64_t e = ids[t * kTopK + j], r = choice_row[t * kTopK + j];
      const bf16* wg = w_gu.data() + e * 2 * kInter * kHidden;
      const std::vector<bf16> p = download(d_p + r * 2 * kInter, 2 * kInter),
                              dyr = download(d_dyr + r * kHidden, kHidden), dp = download(d_dp + r * 2 * kInter, 2 * kInter),
                              h2 = download(d_h2 + r * kInter, kInter);
      std::vector<double> h(kInter), dp_want(2 * kInter), h_want(kInter), dyr_want(kHidden);
      const double w = weights[t * kTopK + j];
      for (std::int64_t kk = 0; kk < kHidden; ++kk) dyr_want[kk] = f(dy[t * kHidden + kk]);
      worst = std::max(worst, rel_err(dyr.data(), dyr_want));
      double dot = 0;  // silu(G) U . dH: the router weight's gradient
      for (std::int64_t i = 0; i < kInter; ++i) {
        double g = 0, u = 0, dh = 0;
        for (std::int64_t kk = 0; kk < kHidden; ++kk) {
          g += f(x[t * kHidden + kk]) * f(wg[i * kHidden + kk]);
          u += f(x[t * kHidden + kk]) * f(wg[(kInter + i) * kHidden + kk]);
          dh += f(dyr[kk]) * f(w_d[(e * kHidden + kk) * kInter + i]);
        }
        h[i] = silu(g) * u;
        const double gp = f(p[i]), up_ = f(p[kInter + i]), s = 1.0 / (1.0 + std::exp(-gp));
        dp_want[i] = w * dh * up_ * s * (1.0 + gp * (1.0 - s)), dp_want[kInter + i] = w * dh * gp * s;
        h_want[i] = w * gp * s * up_;
        dot += gp * s * up_ * dh;
      }
      dw_got.push_back(dw[t * kTopK + j]), dw_want.push_back(dot);
      worst = std::max({worst, rel_err(dp.data(), dp_want), rel_err(h2.data(), h_want)});
      for (std::int64_t c = 0; c < kHidden; ++c) {
        double o = 0, d = 0;
        for (std::int64_t i = 0; i < kInter; ++i) o += h[i] * f(w_d[(e * kHidden + c) * kInter + i]);
        for (std::int64_t i = 0; i < 2 * kInter; ++i) d += f(dp[i]) * f(wg[i * kHidden + c]);
        y_want[c] += w * o, dx_want[c] += d;
      }
    }
    worst = std::max({worst, rel_err(y.data() + t * kHidden, y_want), rel_err(dx.data() + t * kHidden, dx_want)});
  }
  worst = std::max(worst, rel_err(dw_got.data(), dw_want));  // over the sampled choices together
  const double up_flops = 2.0 * kRows * 2 * kInter * kHidden, down_flops = 2.0 * kRows * kHidden * kInter;
  const auto row = [](const char* what, float ms, double flops) {
    std::printf("%-44s %8.1f us", what, ms * 1e3);
    if (flops > 0) std::printf("  %6.1f TFLOP/s", flops / (ms * 1e-3) * 1e-12);
    std::printf("\n");
  };
  row("moe_route", route_ms, 0);
  row("grouped_gated_projection (h and P)", up_ms, up_flops);
  row("grouped_down_projection", down_ms, down_flops);
  row("moe_combine", combine_ms, 0);
  row("moe_gather (dY rows)", gather_ms, 0);
  row("grouped_gated_backward (dP, h, row dots)", back_ms, down_flops);
  row("moe_router_grad (router weights' gradient)", dw_ms, 0);
  row("grouped_down_projection (dx rows)", dx_ms, up_flops);
  row("moe_combine (dx)", dx_sum_ms, 0);
  const bool ok = worst < 1e-2;
  std::printf("worst sampled check, relative L2 against fp64: %.2e  %s\n", worst, ok ? "ok" : "FAILED");
  for (void* d : std::initializer_list<void*>{d_x, d_wgu, d_wd, d_dy, d_ids, d_weights, d_ones, d_offsets,
                                              d_row_choice, d_choice_row, d_invalid, d_ws, d_xr, d_h, d_p, d_out,
                                              d_y, d_dyr, d_dp, d_h2, d_dxr, d_dx, d_row_w, d_row_dots, d_dw})
    CHECK_CUDA(cudaFree(d));
  return ok ? 0 : 1;
}
