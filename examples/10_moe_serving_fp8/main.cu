// Example 10: the experts of example 09's Qwen3-30B-A3B Mixture-of-Experts layer (128 experts,
// top-8, hidden 2048, intermediate 768) served in fp8: e4m3 operands with fp32 scales, bf16
// output, sm90a, 4096 tokens (or the count given as the first argument). The data flow, every
// step on the stream and none waiting for the host (docs/moe.md, "Serving in fp8"):
//   weights, once: W_gu (E, 2I, H) and W_d (E, H, I), bf16 as trained, to e4m3 with one scale
//             per expert and W row (quantize_rows_e4m3 over their E 2I and E H rows), as
//             python's MoEExperts.to_fp8() converts them;
//   routing:  moe_route turns top_k_index (tokens x 8) into the routed rows, sorted by expert;
//   x:        quantize_rows_e4m3, one dynamic scale per token (its maximum found by the kernel);
//   gather:   moe_gather_e4m3 copies each routed row's token's codes and scale: x is quantised
//             once per token, not top_k times, and the gather moves one byte an element;
//   gate/up:  grouped_gated_projection_fp8<SwiGlu> (the e4m3 default's tile) multiplies the
//             codes on e4m3 wgmma, applies the routed row's and the W row's scales to the
//             accumulators before SwiGLU, writes h in bf16 and merges each row's largest |h|
//             into h_absmax (zeroed first);
//   h:        quantize_rows_e4m3 with those maxima: h's codes and one scale per routed row (the
//             gated projection has no e4m3 output of its own yet);
//   down:     grouped_down_projection_fp8 (the default's tile): out = h W_d^e^T, bf16;
//   combine:  y[t] = sum_j w[t, j] out[row(t, j)] (moe_combine, fp32, bf16 y).
// Sampled tokens are checked in relative L2 against fp64 sums of the dequantised operands (the
// codes times their scales, as the GPU made them): h, and y from the GPU's e4m3 h, within 1e-2
// (the e4m3 MMAs add each k32 step's products keeping about 14 significant bits; the bound
// test/gpu/moe_fp8_sm90.cu takes from fp8_problem.hpp, ceil(k / 32) 2^-12 of each element's
// magnitude sum, is a worst case; on random rows like these a few 1e-3 is expected); x against
// its codes, and y against the layer with h unquantised, within 2^-4 (e4m3 keeps 4 significant
// bits: about 2.5e-2 expected). Each step's median time of 20 and the whole layer's are printed.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
using e4m3 = glukit::float8_e4m3_t;

namespace {

constexpr int kLaunches = 20;
constexpr std::int64_t kDefaultTokens = 4096, kHidden = 2048, kInter = 768;
constexpr int kExperts = 128, kTopK = 8;
constexpr std::int64_t kGateUpRows = kExperts * 2 * kInter, kDownRows = kExperts * kHidden;  // W rows, one scale each
constexpr double kBound = 1e-2, kE4m3Bound = 0.0625;  // relative L2: bf16 results, e4m3 rounding (2^-4)

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
  CHECK_CUDA(cudaMemset(d, 0xFF, count * sizeof(T)));  // NaN (e4m3 code 0xFF too): an unwritten element fails
  return d;
}

template <class T>
std::vector<T> download(const T* d, std::size_t count) {
  std::vector<T> h(count);
  CHECK_CUDA(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

/// count e4m3 codes from the device, as bytes.
std::vector<std::uint8_t> codes(const e4m3* d, std::size_t count) {
  return download(reinterpret_cast<const std::uint8_t*>(d), count);
}

/// Exits with what failed and the Status's message (which names the argument) unless s is ok.
void check(const char* what, const glukit::Status& s) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s\n", what, s.message());
  std::exit(1);
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
    check(what, s);
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

/// Relative L2 error of got (want.size() values) against want.
double rel_err(const bf16* got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t j = 0; j < want.size(); ++j) {
    const double d = f(got[j]) - want[j];
    num += d * d, den += want[j] * want[j];
  }
  return std::isfinite(num) ? std::sqrt(num / den) : INFINITY;
}

/// One step of the layer: its name (for the table and for a refusal's message), its launch,
/// its FLOPs (0: not a GEMM).
struct Step {
  const char* name;
  std::function<glukit::Status()> launch;
  double flops;
};

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t tokens = argc > 1 ? std::atoll(argv[1]) : kDefaultTokens, rows = tokens * kTopK;
  if (tokens < 1) {
    std::fprintf(stderr, "usage: %s [tokens, at least 1; default %lld]\n", argv[0],
                 static_cast<long long>(kDefaultTokens));
    return 2;
  }
  std::mt19937_64 rng(20261206);
  // Each token's 8 distinct experts and its router weights (a softmax's, here random).
  std::vector<std::int64_t> ids(static_cast<std::size_t>(rows));
  std::vector<float> weights(ids.size());
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::vector<int> perm(kExperts);
    for (int e = 0; e < kExperts; ++e) perm[e] = e;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int j = 0; j < kTopK; ++j) ids[t * kTopK + j] = perm[j], weights[t * kTopK + j] = unit(rng) / kTopK;
  }
  const std::vector<bf16> x = random_bf16(tokens * kHidden, rng, 1.0f);
  bf16* d_x = upload(x);
  std::int64_t* d_ids = upload(ids);
  float* d_weights = upload(weights);

  // The weights, once: bf16 (E, 2I, H) and (E, H, I) to e4m3 codes and a scale per W row.
  e4m3 *d_wgu = poisoned<e4m3>(kGateUpRows * kHidden), *d_wd = poisoned<e4m3>(kDownRows * kInter);
  float *d_wgu_scale = poisoned<float>(kGateUpRows), *d_wd_scale = poisoned<float>(kDownRows);
  {
    bf16 *d_wgu16 = upload(random_bf16(kGateUpRows * kHidden, rng, 1.0f / 45)),
         *d_wd16 = upload(random_bf16(kDownRows * kInter, rng, 1.0f / 28));
    check("quantize_rows_e4m3 (W_gu)",
          glukit::quantize_rows_e4m3(glukit::QuantizeRowsArgsT<bf16>{.x = d_wgu16, .scale = d_wgu_scale, .q = d_wgu,
                                                                     .m = kGateUpRows, .n = kHidden,
                                                                     .ldx = kHidden, .ldq = kHidden}));
    check("quantize_rows_e4m3 (W_d)",
          glukit::quantize_rows_e4m3(glukit::QuantizeRowsArgsT<bf16>{.x = d_wd16, .scale = d_wd_scale, .q = d_wd,
                                                                     .m = kDownRows, .n = kInter,
                                                                     .ldx = kInter, .ldq = kInter}));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaFree(d_wgu16));
    CHECK_CUDA(cudaFree(d_wd16));
  }

  std::int32_t *d_offsets = poisoned<std::int32_t>(kExperts + 1), *d_row_choice = poisoned<std::int32_t>(rows),
               *d_choice_row = poisoned<std::int32_t>(rows), *d_invalid = poisoned<std::int32_t>(1);
  unsigned char* d_ws = poisoned<unsigned char>(glukit::moe_route_workspace_bytes(tokens, kTopK, kExperts));
  e4m3 *d_xq = poisoned<e4m3>(tokens * kHidden), *d_xr = poisoned<e4m3>(rows * kHidden),
       *d_hq = poisoned<e4m3>(rows * kInter);
  float *d_x_scale = poisoned<float>(tokens), *d_xr_scale = poisoned<float>(rows), *d_h_absmax = poisoned<float>(rows),
        *d_h_scale = poisoned<float>(rows);
  bf16 *d_h = poisoned<bf16>(rows * kInter), *d_out = poisoned<bf16>(rows * kHidden),
       *d_y = poisoned<bf16>(tokens * kHidden);

  const glukit::MoeRouteArgsT<std::int64_t> route{d_ids, tokens, kTopK, kExperts, d_offsets, d_row_choice,
                                                  d_choice_row, d_invalid, d_ws};
  const glukit::MoeRouting routing = route.routing();
  constexpr glukit::ScaleKind per_row = glukit::ScaleKind::per_row;
  const glukit::QuantizeRowsArgsT<bf16> quantize_x{.x = d_x, .scale = d_x_scale, .q = d_xq, .m = tokens,
                                                   .n = kHidden, .ldx = kHidden, .ldq = kHidden};
  const glukit::MoeGatherE4m3ArgsT<e4m3> gather{.x = d_xq, .x_scale = d_x_scale, .out = d_xr, .out_scale = d_xr_scale,
                                                .routing = routing, .hidden = kHidden, .ldx = kHidden, .ldo = kHidden};
  glukit::GroupedGatedProjectionFp8ArgsT<bf16> up;
  up.a = d_xr, up.w = d_wgu, up.scale_a = d_xr_scale, up.scale_w = d_wgu_scale, up.h = d_h, up.routing = routing;
  up.hidden = kHidden, up.intermediate = kInter, up.lda = kHidden, up.ldh = kInter;
  up.scale_a_kind = per_row, up.scale_w_kind = per_row, up.row_absmax = d_h_absmax;
  const glukit::QuantizeRowsArgsT<bf16> quantize_h{.x = d_h, .absmax = d_h_absmax, .scale = d_h_scale, .q = d_hq,
                                                   .m = rows, .n = kInter, .ldx = kInter, .ldq = kInter};
  glukit::GroupedDownProjectionFp8ArgsT<bf16> down;
  down.a = d_hq, down.w = d_wd, down.scale_a = d_h_scale, down.scale_w = d_wd_scale, down.out = d_out;
  down.routing = routing, down.hidden = kHidden, down.intermediate = kInter, down.lda = kInter, down.ldo = kHidden;
  down.scale_a_kind = per_row, down.scale_w_kind = per_row;
  const glukit::MoeCombineArgsT<bf16, float> combine{d_out, d_weights, d_y, routing, kHidden, kHidden, kHidden};

  const double up_flops = 2.0 * double(rows) * 2 * kInter * kHidden, down_flops = 2.0 * double(rows) * kHidden * kInter;
  const std::vector<Step> steps = {
      {"moe_route", [&] { return glukit::moe_route(route); }, 0},
      {"quantize_rows_e4m3 (x, per token)", [&] { return glukit::quantize_rows_e4m3(quantize_x); }, 0},
      {"moe_gather_e4m3 (codes and scales)", [&] { return glukit::moe_gather_e4m3(gather); }, 0},
      {"grouped_gated_projection_fp8 (h, row max)",
       [&] {
         CHECK_CUDA(cudaMemsetAsync(d_h_absmax, 0, rows * sizeof(float)));  // the maxima merge into 0
         return glukit::grouped_gated_projection_fp8<glukit::epilogue::SwiGlu>(up);
       },
       up_flops},
      {"quantize_rows_e4m3 (h, per routed row)", [&] { return glukit::quantize_rows_e4m3(quantize_h); }, 0},
      {"grouped_down_projection_fp8", [&] { return glukit::grouped_down_projection_fp8(down); }, down_flops},
      {"moe_combine", [&] { return glukit::moe_combine(combine); }, 0},
  };
  std::vector<float> step_ms;
  for (const Step& s : steps) step_ms.push_back(median_ms(s.name, s.launch));
  const float layer_ms = median_ms("layer", [&] {
    for (const Step& s : steps) check(s.name, s.launch());
    return glukit::Status::success();
  });

  // Checks on sampled tokens: fp64 sums of the codes times their scales, as the GPU made them.
  const bool routed_all = download(d_invalid, 1)[0] == 0;  // a server would refuse a batch with ids out of range
  const std::vector<std::int32_t> choice_row = download(d_choice_row, rows);
  const std::vector<bf16> y = download(d_y, tokens * kHidden);
  std::array<double, 256> value{};  // every e4m3 code's value
  for (int c = 0; c < 256; ++c) value[c] = glukit::fp8_to_float<glukit::Fp8Format::e4m3>(static_cast<std::uint8_t>(c));
  double worst = 0, worst_e4m3 = 0;
  for (const std::int64_t t : {std::int64_t{0}, tokens / 3, tokens - 1}) {
    const std::vector<std::uint8_t> xq = codes(d_xq + t * kHidden, kHidden);
    const double sx = download(d_x_scale + t, 1)[0];
    std::vector<double> x_deq(kHidden), y_want(kHidden, 0.0), y_exact_h(kHidden, 0.0);
    for (std::int64_t kk = 0; kk < kHidden; ++kk) x_deq[kk] = value[xq[kk]] * sx;
    worst_e4m3 = std::max(worst_e4m3, rel_err(x.data() + t * kHidden, x_deq));
    for (int j = 0; j < kTopK; ++j) {
      const std::int64_t e = ids[t * kTopK + j], r = choice_row[t * kTopK + j];
      const double w = weights[t * kTopK + j];
      const std::vector<std::uint8_t> wgu = codes(d_wgu + e * 2 * kInter * kHidden, 2 * kInter * kHidden),
                                      wd = codes(d_wd + e * kHidden * kInter, kHidden * kInter),
                                      hq = codes(d_hq + r * kInter, kInter);
      const std::vector<float> wgu_scale = download(d_wgu_scale + e * 2 * kInter, 2 * kInter),
                               wd_scale = download(d_wd_scale + e * kHidden, kHidden);
      const std::vector<bf16> h = download(d_h + r * kInter, kInter);
      const double sh = download(d_h_scale + r, 1)[0];
      std::vector<double> h_want(kInter);
      for (std::int64_t i = 0; i < kInter; ++i) {
        double g = 0, u = 0;
        for (std::int64_t kk = 0; kk < kHidden; ++kk) {
          g += x_deq[kk] * value[wgu[i * kHidden + kk]];
          u += x_deq[kk] * value[wgu[(kInter + i) * kHidden + kk]];
        }
        h_want[i] = glukit::epilogue::SwiGlu{}(g * wgu_scale[i], u * wgu_scale[kInter + i]);
      }
      worst = std::max(worst, rel_err(h.data(), h_want));
      for (std::int64_t c = 0; c < kHidden; ++c) {
        double o = 0, o_exact_h = 0;  // out[r][c] from the GPU's e4m3 h, and from h unquantised
        for (std::int64_t i = 0; i < kInter; ++i) {
          o += value[hq[i]] * sh * value[wd[c * kInter + i]];
          o_exact_h += h_want[i] * value[wd[c * kInter + i]];
        }
        y_want[c] += w * o * wd_scale[c], y_exact_h[c] += w * o_exact_h * wd_scale[c];
      }
    }
    worst = std::max(worst, rel_err(y.data() + t * kHidden, y_want));
    worst_e4m3 = std::max(worst_e4m3, rel_err(y.data() + t * kHidden, y_exact_h));
  }

  std::printf("e4m3 experts, %lld tokens x top-%d of %d experts, hidden %lld, intermediate %lld:\n",
              static_cast<long long>(tokens), kTopK, kExperts, static_cast<long long>(kHidden),
              static_cast<long long>(kInter));
  const auto row = [](const char* what, float ms, double flops) {
    std::printf("%-44s %8.1f us", what, ms * 1e3);
    if (flops > 0) std::printf("  %6.1f TFLOP/s", flops / (ms * 1e-3) * 1e-12);
    std::printf("\n");
  };
  for (std::size_t i = 0; i < steps.size(); ++i) row(steps[i].name, step_ms[i], steps[i].flops);
  row("layer (the steps above, in turn)", layer_ms, up_flops + down_flops);
  const bool ok = routed_all && worst < kBound && worst_e4m3 < kE4m3Bound;
  std::printf("worst sampled check, relative L2 against fp64 of the dequantised operands: %.2e (bound %.0e); "
              "x and y against x and h unquantised: %.2e (bound %.4f)%s  %s\n",
              worst, kBound, worst_e4m3, kE4m3Bound, routed_all ? "" : "; ids out of range", ok ? "ok" : "FAILED");
  for (void* d : std::initializer_list<void*>{d_x, d_ids, d_weights, d_wgu, d_wd, d_wgu_scale, d_wd_scale, d_offsets,
                                              d_row_choice, d_choice_row, d_invalid, d_ws, d_xq, d_xr, d_hq, d_x_scale,
                                              d_xr_scale, d_h_absmax, d_h_scale, d_h, d_out, d_y})
    CHECK_CUDA(cudaFree(d));
  return ok ? 0 : 1;
}
