// The experts of a Mixture-of-Experts layer in glukit_bench, bf16, balanced or skewed random
// routing, at the shapes (experts, top-k, hidden, intermediate) of Qwen3-30B-A3B, DeepSeek-V3,
// gpt-oss-120b and Mixtral-8x7B and 1, 8, 64, 4096 and 16384 tokens (decode to prefill):
//   moe_experts/<model>/<tokens>/<routing>   the launches below timed in turns on rotated input
//       sets: glukit::moe_route (us_route), grouped_gated_projection (us_gate_up, its
//       TFLOPS), grouped_down_projection (us_down), moe_combine (us_combine), and the dense
//       cuBLAS GEMM of the gated projection's FLOPs, (tokens x top_k) x 2I x H (us_dense_gemm;
//       gate_up_vs_dense = us_dense_gemm / us_gate_up), then the warp-specialised grouped
//       kernels: the down projection (us_down_ws, down_ws_TFLOPS), the gated projection with
//       its gather of x's routed rows (us_gate_up_ws, gate_up_ws_TFLOPS, gate_up_ws_vs_dense),
//       the gather alone (us_gather), the gated projection gathering x's rows in its producer
//       instead (us_gate_up_ws_gather, gate_up_ws_gather_vs_dense), the backward's gather of
//       dY's routed rows (us_gather_dy) and its dH GEMM with the router's weights and the
//       activation's backward in the epilogue (us_backward_dh, backward_dh_TFLOPS), the gated and down
//       projections on 64-row ping-pong tiles (us_gate_up_ws64, gate_up_ws64_vs_dense,
//       us_down_ws64), the gated projection on e4m3 rows and weights on the default's tile (us_gate_up_fp8,
//       gate_up_fp8_TFLOPS; scales per routed row and per expert and W row) against cuBLASLt's
//       fp8 GEMM of the same FLOPs (us_dense_fp8, gate_up_fp8_vs_dense_fp8), the e4m3 layer from the
//       routed e4m3 rows (us_layer_fp8: the gated projection with h's row maxima, quantize_rows,
//       the e4m3 down projection, the combine) against the bf16 warp-specialised one (gather,
//       gated and down projections, combine: layer_fp8_vs_bf16_ws), the warp-specialised gated
//       projection reading W as gpt-oss stores it, (E, H, 2I) alternating (us_gate_up_alt,
//       gate_up_alt_vs_ws: its time against the stacked (E, 2I, H) read), the gated projection on
//       the other whole gated tiles, 128 x 256 and ping-pong 128 x 128 (us_gate_up_ws256,
//       us_gate_up_pp128 and each one's _vs_dense), the e4m3 gated projection on the same two
//       and on 128 x 128 and 64-row ping-pong tiles (us_gate_up_fp8_ws256, us_gate_up_fp8_pp128,
//       us_gate_up_fp8_ws128, us_gate_up_fp8_pp64), the backward's dH on ping-pong 128 x 128
//       (us_backward_dh_pp128) and the down projection on 128 x 256 (us_down_ws256); the experts the routing
//       touches (touched_experts), the routed rows' share of their 128- and 64-row tiles
//       (tile_fill_128, tile_fill_64: the tile quantisation bound) and their weights' bytes over the gate/up and down times of
//       either path (weights_TBps, weights_ws_TBps: the decode rows' bound); the card's copy rate,
//       a device-to-device copy of up to 512 MiB of weights as HBM traffic, read and write
//       (us_copy, copy_TBps), the e4m3 down projection alone on WarpSpecializedTma and on its
//       default's tile (us_down_fp8, us_down_fp8_default), and the weight
//       streams of the PyTorch layers' decode kernels against it: 64-row ping-pong gate/up with
//       WarpSpecializedTma down (weights_pp64_TBps, weights_pp64_vs_copy), the e4m3 default's
//       gate/up with the e4m3 down (weights_fp8_TBps, weights_fp8_vs_copy; with the down's
//       default, weights_fp8_default_vs_copy); the weight-streaming kernels (kernels/sm90/grouped/
//       stream_launch.hpp): us_gate_up_stream, us_down_stream, us_gate_up_fp8_stream,
//       us_down_fp8_stream, gpt-oss's layouts (us_gate_up_alt_stream; us_down_stream_ih, W_d read
//       as (E, I, H)) and their weight streams against the copy (weights_stream_vs_copy,
//       weights_fp8_stream_vs_copy, weights_alt_stream_vs_copy), beside the e4m3 down projection
//       on 64-row ping-pong tiles (us_down_fp8_pp64), and a copy of the same HBM traffic as the
//       touched weights' read, bf16 and e4m3, in one launch (us_copy_same, copy_same_vs_copy;
//       us_copy_same_fp8, copy_same_fp8_vs_copy: the rate a transfer of that size reaches), and the
//       dense gated projection on the grouped one's 128 x 256 tile over the same FLOPs (all routed
//       rows times one expert's W: us_gate_up_dense_ws256, gate_up_dense_ws256_vs_dense, the
//       grouped kernel's ceiling at the shape), the 128 x 256 tile gathering x's rows in its
//       producer (us_gate_up_ws256_gather) and the 16-bit default without x_routed
//       (us_gate_up_default_gather: its tile gathers them, or the weights are streamed), each
//       with its _vs_dense; the iteration
//       time is the layer's forward, the four glukit launches of the multistage path. Checked
//       once: the combine finite. sets / weight_sets: the input sets rotated and the weight
//       sets among them (one where the sets' weights would not fit in 80% of free memory).
// The multistage path runs V2DirectToLds; the warp-specialised one GatedTma128x128 (SwiGLU)
// and WarpSpecializedTma (BiasOnly). The two ways to the routed rows of x, gathered in the
// loader or first by moe_gather, are what the choice between them is measured by.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline_runs.cuh"
#include "bench_context.hpp"
#include "common/device_data.cuh"
#include "common/event_timer.hpp"
#include "fp8_common.cuh"
#include "glukit/glukit.hpp"

namespace glukit_bench {
namespace {

using T = glukit::bfloat16_t;
using GatePolicy = glukit::policy::WithEpilogue<glukit::policy::V2DirectToLds<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>;
using DownPolicy = glukit::policy::WithEpilogue<glukit::policy::V2DirectToLds<glukit::arch::sm90a>, glukit::epilogue::BiasOnly>;
/// The gated and down projections on the warp-specialised grouped kernels (TMA; the gated one
/// reads x's routed rows, which its launch gathers first into x_routed), timed beside them.
using GateWsPolicy =
    glukit::policy::WithEpilogue<glukit::policy::GatedTma128x128<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>;
using DownWsPolicy =
    glukit::policy::WithEpilogue<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>, glukit::epilogue::BiasOnly>;
/// The same on 64-row tiles (ping-pong consumers): experts of a few hundred rows fill them
/// better (tile_fill_64 against tile_fill_128).
using GateWs64Policy =
    glukit::policy::WithEpilogue<glukit::policy::GatedTmaPingpong64x128<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>;
using DownWs64Policy = glukit::policy::WithEpilogue<glukit::policy::WarpSpecializedTmaPingpong64x128<glukit::arch::sm90a>,
                                                    glukit::epilogue::BiasOnly>;
/// The gated projection's other whole tiles, for the grouped default's rule (the dense gated
/// rule picks among them by M and N): 128 x 256 (large experts) and ping-pong 128 x 128. (The
/// 16-row decode tiles are refused by the grouped kernel: its tiles are whole, a_rows = tile_m.)
using GateWs256Policy =
    glukit::policy::WithEpilogue<glukit::policy::GatedTma128x256<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>;
using GatePp128Policy =
    glukit::policy::WithEpilogue<glukit::policy::GatedTmaPingpong128x128<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>;
/// The gated projection on e4m3 routed rows and weights (scales per routed row and per expert
/// and W row), against cuBLASLt's fp8 GEMM of the same FLOPs: the default's pick
/// (grouped_gated_projection_fp8<SwiGlu>, kernels/sm90/plan_default.hpp), as the PyTorch layer
/// runs it.
using GateFp8Op = glukit::epilogue::SwiGlu;
/// The backward through the activation (dH = dY W_d^e, SwiGLU's backward in the epilogue).
using BackwardPolicy = glukit::policy::GatedBackwardTma128x128<glukit::arch::sm90a>;
/// The tiles of the e4m3 gated projection, the backward and the down projection, for the
/// grouped defaults' rules: the e4m3 grouped rule's 128 x 128, 128 x 256 and ping-pong 128 x 128, the
/// dense backward's ping-pong 128 x 128, and the 128 x 256 down projection.
using GateFp8Ws128Policy = GateWsPolicy;
using GateFp8Ws256Policy = GateWs256Policy;
using GateFp8Pp128Policy = GatePp128Policy;
using BackwardPp128Policy = glukit::policy::GatedBackwardTmaPingpong128x128<glukit::arch::sm90a>;
using DownWs256Policy =
    glukit::policy::WithEpilogue<glukit::policy::WarpSpecializedTma128x256<glukit::arch::sm90a>, glukit::epilogue::BiasOnly>;

/// A runtime call's error as a step's Status.
glukit::Status cuda_status(cudaError_t e) {
  return e == cudaSuccess ? glukit::Status::success()
                          : glukit::Status{glukit::StatusCode::runtime_error, cudaGetErrorString(e)};
}

struct MoeModel {
  const char* name;
  int experts, top_k;
  std::int64_t hidden, n;  ///< n: the intermediate size
};
constexpr MoeModel kModels[] = {{"qwen3_30b_a3b", 128, 8, 2048, 768},
                                {"deepseek_v3", 256, 8, 7168, 2048},
                                {"gpt_oss_120b", 128, 4, 2880, 2880},
                                {"mixtral_8x7b", 8, 2, 4096, 14336}};
constexpr std::int64_t kTokens[] = {1, 8, 64, 4096, 16384};

struct MoeCase {
  MoeModel model;
  std::int64_t tokens;
  bool skewed;  ///< a quarter of the experts take half the choices
  std::int64_t rows() const { return tokens * model.top_k; }
  double gate_up_flops() const { return 2.0 * double(rows()) * double(2 * model.n) * double(model.hidden); }
  double down_flops() const { return 2.0 * double(rows()) * double(model.hidden) * double(model.n); }
  std::string key() const {
    return std::string(model.name) + "/" + std::to_string(tokens) + (skewed ? "/skewed" : "/balanced");
  }
};

/// Expert ids: each token's top_k distinct experts, uniform or skewed.
std::vector<std::int64_t> route_ids(const MoeCase& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int e = c.model.experts;
  std::vector<std::int64_t> idx;
  idx.reserve(std::size_t(c.rows()));
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    std::vector<int> picked;
    while (int(picked.size()) < c.model.top_k) {
      int x = int(rng() % e);
      if (c.skewed && rng() % 2 == 0) x = int(rng() % std::max(1, e / 4));
      if (std::find(picked.begin(), picked.end(), x) == picked.end()) picked.push_back(x);
    }
    idx.insert(idx.end(), picked.begin(), picked.end());
  }
  return idx;
}

/// Where a scale vector's per-tensor scale sits (cuBLASLt's fp8 GEMM reads it): past the
/// per-row scales, 16-byte aligned (at the row count itself, Mixtral's one token, 2 rows, put it
/// 8 bytes past a boundary).
constexpr std::size_t scale_tail(std::size_t per_row) { return (per_row + 3) / 4 * 4; }

struct MoeOperands {
  struct Set {
    DeviceBuffer<T> x, h, out, y;
    DeviceBuffer<std::int64_t> idx;
    DeviceBuffer<float> weights;
    DeviceBuffer<std::int32_t> offsets, row_choice, choice_row, invalid;
    DeviceBuffer<unsigned char> ws;
    DeviceBuffer<T> x_routed;  ///< the routed rows of x (the warp-specialised gated projection's)
    DeviceBuffer<T> p, dp;     ///< the backward's pre-activations and their gradient (rows x 2I)
    DeviceBuffer<std::uint8_t> a8;  ///< e4m3 routed rows (rows x H)
    DeviceBuffer<float> sa8;        ///< their scales: per row, then one at scale_tail(rows)
    DeviceBuffer<std::uint8_t> h8;  ///< the e4m3 layer's h (rows x I)
    DeviceBuffer<float> hmax, hscale;  ///< h's row maxima and scales
    DeviceBuffer<float> row_w, row_dots;  ///< the backward's row weights and row dots (router-weighted)
  };
  /// The experts' weights, one per set where all sets fit in 80 % of the device's free memory,
  /// else one for every set (DeepSeek-V3's 34 GB of bf16 and e4m3 weights twice do not fit in
  /// 80 GB; the weights one token touches there, 8 experts', are still many times the L2).
  struct Weights {
    DeviceBuffer<T> w_gate_up, w_down;
    DeviceBuffer<std::uint8_t> w8, wd8;  ///< e4m3 weights (E, 2I, H) and W_d (E, H, I)
    DeviceBuffer<float> sw8, swd8;       ///< per W row, then one at scale_tail; W_d's per-column scales
  };
  MoeCase c;
  std::vector<Set> sets;
  std::vector<Weights> weight_sets;
  const Weights& weight_set(int i) const { return weight_sets[std::size_t(i) % weight_sets.size()]; }
  double touched_experts = 0;  ///< experts with rows, averaged over the sets
  /// The routed rows over the rows of the 128-row tiles their experts fill (each expert's
  /// rows rounded up to whole tiles), averaged over the sets: the grouped kernels' bound from
  /// tile quantisation, which the dense GEMM of the same rows does not pay.
  double tile_fill = 0, tile_fill_64 = 0;
  DeviceBuffer<T> dense_a, dense_b, dense_c;
  /// The card's copy rate beside the decode rows' weight streams: a device-to-device copy of
  /// up to 512 MiB of a weight set's W_gate_up (copy_bytes) into copy_dst.
  std::size_t copy_bytes;
  DeviceBuffer<std::uint8_t> copy_dst;
  MoeOperands(const MoeCase& mc, std::uint64_t seed, cudaStream_t stream)
      : c(mc),
        dense_a(std::size_t(mc.rows() * mc.model.hidden)),
        dense_b(std::size_t(2 * mc.model.n * mc.model.hidden)),
        dense_c(std::size_t(mc.rows() * 2 * mc.model.n)),
        copy_bytes(std::min<std::size_t>(std::size_t(mc.model.experts * 2 * mc.model.n * mc.model.hidden) * sizeof(T),
                                         std::size_t{512} << 20)),
        copy_dst(copy_bytes) {
    const MoeModel& m = c.model;
    const auto xs = std::size_t(c.tokens * m.hidden), wgu = std::size_t(m.experts * 2 * m.n * m.hidden),
               wd = std::size_t(m.experts * m.hidden * m.n), hs = std::size_t(c.rows() * m.n),
               os = std::size_t(c.rows() * m.hidden), rows = std::size_t(c.rows());
    const double weight_set_bytes =  // bf16 and e4m3 weights, their scales
        3.0 * double(wgu + wd) + 4.0 * double(m.experts * (2 * m.n + m.hidden));
    const double set_bytes = 2.0 * double(xs + hs + os + xs + os + 4 * hs) + double(os + hs) + weight_set_bytes;
    const int count = std::clamp(int(2.0 * double(device_info().l2_bytes) / set_bytes) + 1, 2, 3);
    std::size_t free_bytes = 0, total_bytes = 0;  // total: the query's, unused
    GLUKIT_BENCH_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    const int weight_count = double(count) * set_bytes < 0.8 * double(free_bytes) ? count : 1;
    for (int s = 0; s < weight_count; ++s) {
      Weights wt{DeviceBuffer<T>(wgu), DeviceBuffer<T>(wd), DeviceBuffer<std::uint8_t>(wgu),
                 DeviceBuffer<std::uint8_t>(wd), DeviceBuffer<float>(scale_tail(std::size_t(m.experts * 2 * m.n)) + 1),
                 DeviceBuffer<float>(std::size_t(m.experts * m.hidden))};
      fill_fp8_kernel<<<detail::grid_for(wd, 256), 256, 0, stream>>>(fp8(wt.wd8), wd, seed + 8 * s + 2, 4.f);
      fill_float_kernel<<<detail::grid_for(wt.swd8.size(), 256), 256, 0, stream>>>(wt.swd8.get(), wt.swd8.size(),
                                                                                   seed + 8 * s + 3);
      fill_fp8_kernel<<<detail::grid_for(wgu, 256), 256, 0, stream>>>(fp8(wt.w8), wgu, seed + 8 * s + 7, 4.f);
      fill_float_kernel<<<detail::grid_for(wt.sw8.size(), 256), 256, 0, stream>>>(wt.sw8.get(), wt.sw8.size(),
                                                                                  seed + 8 * s + 1);
      GLUKIT_BENCH_CHECK_LAUNCH();
      fill_nonzero(wt.w_gate_up.get(), wgu, seed + 8 * s + 1, 1.f / 16, stream);
      fill_nonzero(wt.w_down.get(), wd, seed + 8 * s + 2, 1.f / 16, stream);
      weight_sets.push_back(std::move(wt));
    }
    for (int s = 0; s < count; ++s) {
      Set st{DeviceBuffer<T>(xs),          DeviceBuffer<T>(hs),          DeviceBuffer<T>(os),
             DeviceBuffer<T>(xs),          DeviceBuffer<std::int64_t>(rows), DeviceBuffer<float>(rows),
             DeviceBuffer<std::int32_t>(m.experts + 1), DeviceBuffer<std::int32_t>(rows),
             DeviceBuffer<std::int32_t>(rows), DeviceBuffer<std::int32_t>(1),
             DeviceBuffer<unsigned char>(std::size_t(glukit::moe_route_workspace_bytes(c.tokens, m.top_k, m.experts))),
             DeviceBuffer<T>(os), DeviceBuffer<T>(2 * hs), DeviceBuffer<T>(2 * hs),
             DeviceBuffer<std::uint8_t>(os), DeviceBuffer<float>(scale_tail(rows) + 1), DeviceBuffer<std::uint8_t>(hs),
             DeviceBuffer<float>(rows), DeviceBuffer<float>(rows), DeviceBuffer<float>(rows),
             DeviceBuffer<float>(std::size_t(rows * glukit::moe_row_dot_panels(m.n)))};
      fill_fp8_kernel<<<detail::grid_for(os, 256), 256, 0, stream>>>(fp8(st.a8), os, seed + 8 * s + 6, 4.f);
      fill_float_kernel<<<detail::grid_for(st.sa8.size(), 256), 256, 0, stream>>>(st.sa8.get(), st.sa8.size(),
                                                                                  seed + 8 * s);
      // h's e4m3 rows and scales: written by layer_fp8, read alone by the down_fp8 step
      fill_fp8_kernel<<<detail::grid_for(hs, 256), 256, 0, stream>>>(fp8(st.h8), hs, seed + 8 * s + 7, 4.f);
      fill_float_kernel<<<detail::grid_for(rows, 256), 256, 0, stream>>>(st.hscale.get(), rows, seed + 8 * s + 2);
      fill_float_kernel<<<detail::grid_for(rows, 256), 256, 0, stream>>>(st.row_w.get(), rows, seed + 8 * s + 3);
      GLUKIT_BENCH_CHECK_LAUNCH();
      fill_nonzero(st.p.get(), 2 * hs, seed + 8 * s + 4, 2.f, stream);
      fill_nonzero(st.out.get(), os, seed + 8 * s + 5, 1.f, stream);
      fill_nonzero(st.x.get(), xs, seed + 8 * s, 1.f, stream);
      const std::vector<std::int64_t> ids = route_ids(c, seed + 8 * s + 3);
      std::vector<bool> used(std::size_t(m.experts), false);
      std::vector<std::int64_t> per_expert(std::size_t(m.experts), 0);
      for (const std::int64_t id : ids) used[std::size_t(id)] = true, ++per_expert[std::size_t(id)];
      touched_experts += double(std::count(used.begin(), used.end(), true)) / double(count);
      std::int64_t tiled = 0, tiled_64 = 0;
      for (const std::int64_t r : per_expert) tiled += (r + 127) / 128 * 128, tiled_64 += (r + 63) / 64 * 64;
      tile_fill += double(c.rows()) / double(tiled) / double(count);
      tile_fill_64 += double(c.rows()) / double(tiled_64) / double(count);
      GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(st.idx.get(), ids.data(), rows * 8, cudaMemcpyHostToDevice, stream));
      std::vector<float> w(rows, 1.f / float(m.top_k));
      GLUKIT_BENCH_CHECK_CUDA(cudaMemcpyAsync(st.weights.get(), w.data(), rows * 4, cudaMemcpyHostToDevice, stream));
      GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
      sets.push_back(std::move(st));
    }
    fill_nonzero(dense_a.get(), std::size_t(c.rows() * m.hidden), seed + 101, 1.f, stream);
    fill_nonzero(dense_b.get(), std::size_t(2 * m.n * m.hidden), seed + 102, 1.f / 16, stream);
  }
  glukit::MoeRouteArgsT<std::int64_t> route(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    return {s.idx.get(), c.tokens, c.model.top_k, c.model.experts, s.offsets.get(), s.row_choice.get(),
            s.choice_row.get(), s.invalid.get(), s.ws.get()};
  }
  glukit::GroupedGatedProjectionArgsT<T> gate_up(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    glukit::GroupedGatedProjectionArgsT<T> a;
    a.x = s.x.get(), a.w = weight_set(i).w_gate_up.get(), a.h = s.h.get(), a.routing = route(i).routing();
    a.hidden = c.model.hidden, a.intermediate = c.model.n, a.ldx = c.model.hidden, a.ldh = c.model.n;
    return a;
  }
  glukit::GroupedGatedProjectionArgsT<T> gate_up_ws(int i) const {
    glukit::GroupedGatedProjectionArgsT<T> a = gate_up(i);
    a.x_routed = sets[std::size_t(i) % sets.size()].x_routed.get(), a.ld_x_routed = c.model.hidden;
    return a;
  }
  /// The same launch on the weights read as gpt-oss stores them, (E, H, 2I) with gate and up
  /// columns alternating (the same bytes: the time of that layout, not its values).
  glukit::GroupedGatedProjectionArgsT<T> gate_up_alt(int i) const {
    glukit::GroupedGatedProjectionArgsT<T> a = gate_up_ws(i);
    a.w_layout = glukit::ExpertLayout::alternating;
    return a;
  }
  glukit::MoeGatherArgsT<T> gather(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    return {s.x.get(), s.x_routed.get(), route(i).routing(), c.model.hidden, c.model.hidden, c.model.hidden};
  }
  glukit::GroupedDownProjectionArgsT<T> down(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    glukit::GroupedDownProjectionArgsT<T> a;
    a.h = s.h.get(), a.w = weight_set(i).w_down.get(), a.out = s.out.get(), a.routing = route(i).routing();
    a.hidden = c.model.hidden, a.intermediate = c.model.n, a.ldh = c.model.n, a.ldo = c.model.hidden;
    return a;
  }
  /// The e4m3 gated projection: the routed rows a8, the weights w8, per-row scales.
  glukit::GroupedGatedProjectionFp8ArgsT<T> gate_up_fp8(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    glukit::GroupedGatedProjectionFp8ArgsT<T> a;
    const Weights& wt = weight_set(i);
    a.a = fp8(s.a8), a.w = fp8(wt.w8), a.scale_a = s.sa8.get(), a.scale_w = wt.sw8.get(), a.h = s.h.get();
    a.routing = route(i).routing(), a.hidden = c.model.hidden, a.intermediate = c.model.n;
    a.lda = c.model.hidden, a.ldh = c.model.n;
    a.scale_a_kind = a.scale_w_kind = glukit::ScaleKind::per_row;
    return a;
  }
  /// The e4m3 down projection: h's e4m3 rows h8 with their scales, W_d in e4m3.
  glukit::GroupedDownProjectionFp8ArgsT<T> down_fp8(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    const Weights& wt = weight_set(i);
    glukit::GroupedDownProjectionFp8ArgsT<T> down;
    down.a = fp8(s.h8), down.w = fp8(wt.wd8), down.scale_a = s.hscale.get(), down.scale_w = wt.swd8.get();
    down.out = s.out.get(), down.routing = route(i).routing(), down.hidden = c.model.hidden;
    down.intermediate = c.model.n, down.lda = c.model.n, down.ldo = c.model.hidden;
    down.scale_a_kind = down.scale_w_kind = glukit::ScaleKind::per_row;
    return down;
  }
  /// A device-to-device copy of `bytes` (at most copy_bytes) of weight set i's W_gate_up.
  glukit::Status copy(int i, cudaStream_t stream, std::size_t bytes = ~std::size_t{0}) const {
    return cuda_status(cudaMemcpyAsync(copy_dst.get(), weight_set(i).w_gate_up.get(), std::min(bytes, copy_bytes),
                                       cudaMemcpyDeviceToDevice, stream));
  }
  /// The e4m3 layer from the routed e4m3 rows: the gated projection merging h's row maxima,
  /// h quantised per row, the e4m3 down projection on its default's tile, the combine.
  glukit::Status layer_fp8(int i, cudaStream_t stream) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    const std::int64_t rows = c.rows(), n = c.model.n;
    glukit::GroupedGatedProjectionFp8ArgsT<T> up = gate_up_fp8(i);
    up.row_absmax = s.hmax.get();
    const glukit::GroupedDownProjectionFp8ArgsT<T> down = down_fp8(i);
    const glukit::QuantizeRowsArgsT<T> q{s.h.get(), s.hmax.get(), s.hscale.get(), fp8(s.h8), rows, n, n, n};
    if (glukit::Status st = cuda_status(cudaMemsetAsync(s.hmax.get(), 0, std::size_t(rows) * sizeof(float), stream));
        !st)
      return st;
    if (glukit::Status st = glukit::grouped_gated_projection_fp8<GateFp8Op>(up, stream); !st) return st;
    if (glukit::Status st = glukit::quantize_rows_e4m3(q, stream); !st) return st;
    if (glukit::Status st = glukit::grouped_down_projection_fp8(down, stream); !st) return st;
    return glukit::moe_combine(combine(i), stream);
  }
  /// The backward's dY rows: the routed rows of y (the layer's gradient), unweighted.
  glukit::MoeGatherArgsT<T> gather_dy(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    return {s.y.get(), s.out.get(), route(i).routing(), c.model.hidden, c.model.hidden, c.model.hidden};
  }
  /// The backward through the activation, router-weighted as the PyTorch layer runs it:
  /// dH = dY W_d^e (dY: out's rows), P read, dP, H and the row dots written.
  glukit::GroupedGatedBackwardArgsT<T> backward(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    glukit::GroupedGatedBackwardArgsT<T> a;
    a.dy = s.out.get(), a.w_down = weight_set(i).w_down.get(), a.p = s.p.get(), a.dp = s.dp.get(), a.h = s.h.get();
    a.routing = route(i).routing(), a.hidden = c.model.hidden, a.intermediate = c.model.n;
    a.lddy = c.model.hidden, a.ldp = a.lddp = 2 * c.model.n, a.ldh = c.model.n;
    a.row_weight = s.row_w.get(), a.row_dots = s.row_dots.get();
    return a;
  }
  glukit::MoeCombineArgsT<T, float> combine(int i) const {
    const Set& s = sets[std::size_t(i) % sets.size()];
    return {s.out.get(), s.weights.get(), s.y.get(), route(i).routing(), c.model.hidden, c.model.hidden,
            c.model.hidden};
  }
};

/// The first step of a row's turns that failed, named with its message (a failed step stops the
/// launches of the row: each step runs only while none has failed), and the optional tiles the
/// routing does not fit: a grouped kernel that refuses it with unsupported_device (its shared
/// memory holds a row-tile start per expert: the 128 x 256 tile takes 235 experts, docs/moe.md)
/// is left out of the row, not failed.
struct FirstFailure {
  std::string what;
  std::vector<std::string> refused;  ///< "step: message" of each optional tile refused
  bool ok() const { return what.empty(); }
  bool runs(const char* step) const {
    const std::string prefix = std::string(step) + ": ";
    return std::none_of(refused.begin(), refused.end(), [&](const std::string& r) { return r.rfind(prefix, 0) == 0; });
  }
  void operator()(const char* step, const glukit::Status& s) {
    if (ok() && !s) what = std::string(step) + ": " + s.message();
  }
  void operator()(const char* step, cublasStatus_t s) {
    if (ok() && s != CUBLAS_STATUS_SUCCESS) what = std::string(step) + ": cuBLAS status " + std::to_string(int(s));
  }
  void optional(const char* step, const glukit::Status& s) {
    if (s.code() == glukit::StatusCode::unsupported_device) refused.push_back(std::string(step) + ": " + s.message());
    else (*this)(step, s);
  }
};

void bm_moe(benchmark::State& state, MoeCase c) {
  for (auto _ : state) {
    Stream stream;
    const MoeOperands ops(c, next_seed(), stream);
    // Every set routed once, and the layer run once and checked finite.
    for (std::size_t s = 0; s < ops.sets.size(); ++s)
      if (const glukit::Status st = glukit::moe_route(ops.route(int(s)), stream); !st.ok()) {
        fail(state, std::string("moe_route: ") + st.message());
        return;
      }
    FirstFailure first;
    first("gate_up", glukit::grouped_gated_projection<GatePolicy>(ops.gate_up(0), stream));
    if (first.ok()) first("down", glukit::grouped_down_projection<DownPolicy>(ops.down(0), stream));
    if (first.ok()) first("combine", glukit::moe_combine(ops.combine(0), stream));
    if (!first.ok()) {
      fail(state, "moe layer: " + first.what);
      return;
    }
    std::vector<T> y(std::size_t(c.tokens * c.model.hidden));
    GLUKIT_BENCH_CHECK_CUDA(
        cudaMemcpyAsync(y.data(), ops.sets[0].y.get(), y.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
    GLUKIT_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    if (!std::all_of(y.begin(), y.end(), [](T v) { return std::isfinite(glukit::to_float(v)); })) {
      fail(state, "moe layer: the combined output is not finite");
      return;
    }
    const double est_us = (c.gate_up_flops() + c.down_flops()) / 400e12 * 1e6;
    const int samples = std::min(settings().samples, std::max(20, int(300e3 / std::max(est_us, 1.0))));
    const LaunchCounts counts = launch_counts(settings().warmup, samples);
    int call = 0;
    FirstFailure failed;
    const GemmShape dense{c.rows(), 2 * c.model.n, c.model.hidden};
    Fp8Lt dense_fp8(c.rows(), 2 * c.model.n, c.model.hidden, false);
    const auto run_dense_fp8 = [&](int i) {  // one W (expert 0's rows), per-tensor scales
      const MoeOperands::Set& s = ops.sets[std::size_t(i) % ops.sets.size()];
      const MoeOperands::Weights& wt = ops.weight_set(i);
      return dense_fp8.try_run(0, s.a8.get(), wt.w8.get(), s.sa8.get() + scale_tail(std::size_t(c.rows())),
                               wt.sw8.get() + scale_tail(std::size_t(c.model.experts * 2 * c.model.n)), nullptr,
                               ops.dense_c.get(), stream);
    };
    // Each step runs while no step has failed; `failed` names the first that did. An optional
    // tile stops running once its kernel refused the routing.
    const auto step = [&](const char* name, auto&& run) {
      return [&failed, name, run] {
        if (failed.ok()) failed(name, run());
      };
    };
    const auto tile = [&](const char* name, auto&& run) {
      return [&failed, name, run] {
        if (failed.ok() && failed.runs(name)) failed.optional(name, run());
      };
    };
    // A copy of the HBM traffic of the touched experts' weights (half their bytes, read and
    // written; bf16 and e4m3): what one launch moving that much reaches at this size.
    const double touched_bytes = ops.touched_experts * 3.0 * double(c.model.n) * double(c.model.hidden) * sizeof(T);
    const auto same_bytes = [&](int div) { return static_cast<std::size_t>(touched_bytes / div) / 16 * 16; };
    const std::vector<double> med = medians_in_turns(
        stream,
        {step("moe_route", [&] { return glukit::moe_route(ops.route(call++), stream); }),
         step("gate_up", [&] { return glukit::grouped_gated_projection<GatePolicy>(ops.gate_up(call++), stream); }),
         step("down", [&] { return glukit::grouped_down_projection<DownPolicy>(ops.down(call++), stream); }),
         step("combine", [&] { return glukit::moe_combine(ops.combine(call++), stream); }),
         [&] {
           CublasStreamBinding bind(cublas_handle(), stream);
           cublas_gemm_rowmajor(cublas_handle(), dense, ops.dense_a.get(), c.model.hidden, ops.dense_b.get(),
                                c.model.hidden, ops.dense_c.get(), 2 * c.model.n, glukit::Layout::col_major);
         },
         step("down_ws", [&] { return glukit::grouped_down_projection<DownWsPolicy>(ops.down(call++), stream); }),
         step("gate_up_ws",
              [&] { return glukit::grouped_gated_projection<GateWsPolicy>(ops.gate_up_ws(call++), stream); }),
         step("gather", [&] { return glukit::moe_gather(ops.gather(call++), stream); }),
         step("gate_up_ws_gather",
              [&] { return glukit::grouped_gated_projection<GateWsPolicy>(ops.gate_up(call++), stream); }),
         step("gather_dy", [&] { return glukit::moe_gather(ops.gather_dy(call++), stream); }),
         step("backward_dh",
              [&] { return glukit::grouped_gated_backward<BackwardPolicy>(ops.backward(call++), stream); }),
         tile("gate_up_ws64",
              [&] { return glukit::grouped_gated_projection<GateWs64Policy>(ops.gate_up_ws(call++), stream); }),
         tile("down_ws64", [&] { return glukit::grouped_down_projection<DownWs64Policy>(ops.down(call++), stream); }),
         step("gate_up_fp8",
              [&] { return glukit::grouped_gated_projection_fp8<GateFp8Op>(ops.gate_up_fp8(call++), stream); }),
         step("dense_fp8 (cuBLASLt)", [&] { return run_dense_fp8(call++); }),
         step("layer_fp8", [&] { return ops.layer_fp8(call++, stream); }),
         step("gate_up_alt",
              [&] { return glukit::grouped_gated_projection<GateWsPolicy>(ops.gate_up_alt(call++), stream); }),
         tile("gate_up_ws256",
              [&] { return glukit::grouped_gated_projection<GateWs256Policy>(ops.gate_up_ws(call++), stream); }),
         tile("gate_up_pp128",
              [&] { return glukit::grouped_gated_projection<GatePp128Policy>(ops.gate_up_ws(call++), stream); }),
         tile("gate_up_fp8_ws256",
              [&] { return glukit::grouped_gated_projection_fp8<GateFp8Ws256Policy>(ops.gate_up_fp8(call++), stream); }),
         tile("gate_up_fp8_pp128",
              [&] { return glukit::grouped_gated_projection_fp8<GateFp8Pp128Policy>(ops.gate_up_fp8(call++), stream); }),
         tile("backward_dh_pp128",
              [&] { return glukit::grouped_gated_backward<BackwardPp128Policy>(ops.backward(call++), stream); }),
         tile("down_ws256", [&] { return glukit::grouped_down_projection<DownWs256Policy>(ops.down(call++), stream); }),
         tile("gate_up_fp8_ws128",
              [&] { return glukit::grouped_gated_projection_fp8<GateFp8Ws128Policy>(ops.gate_up_fp8(call++), stream); }),
         step("copy", [&] { return ops.copy(call++, stream); }),
         step("down_fp8",
              [&] { return glukit::grouped_down_projection_fp8<DownWsPolicy>(ops.down_fp8(call++), stream); }),
         step("down_fp8_default", [&] { return glukit::grouped_down_projection_fp8(ops.down_fp8(call++), stream); }),
         tile("gate_up_fp8_pp64",
              [&] { return glukit::grouped_gated_projection_fp8<GateWs64Policy>(ops.gate_up_fp8(call++), stream); }),
         step("gate_up_stream",
              [&] { return glukit::grouped_gated_projection_streamed<glukit::epilogue::SwiGlu>(ops.gate_up(call++), stream); }),
         step("down_stream", [&] { return glukit::grouped_down_projection_streamed(ops.down(call++), stream); }),
         step("gate_up_fp8_stream",
              [&] { return glukit::grouped_gated_projection_fp8_streamed<GateFp8Op>(ops.gate_up_fp8(call++), stream); }),
         step("down_fp8_stream",
              [&] { return glukit::grouped_down_projection_fp8_streamed(ops.down_fp8(call++), stream); }),
         step("gate_up_alt_stream",
              [&] { return glukit::grouped_gated_projection_streamed<glukit::epilogue::SwiGlu>(ops.gate_up_alt(call++), stream); }),
         step("down_stream_ih",
              [&] {
                glukit::GroupedDownProjectionArgsT<T> d = ops.down(call++);
                d.w_layout = glukit::Layout::row_major;  // the same bytes read as gpt-oss's (E, I, H)
                return glukit::grouped_down_projection_streamed(d, stream);
              }),
         tile("down_fp8_pp64",
              [&] { return glukit::grouped_down_projection_fp8<DownWs64Policy>(ops.down_fp8(call++), stream); }),
         step("copy_same", [&] { return ops.copy(call++, stream, same_bytes(2)); }),
         step("copy_same_fp8", [&] { return ops.copy(call++, stream, same_bytes(4)); }),
         step("gate_up_dense_ws256", [&] {
           glukit::GatedProjectionArgsT<T> d;
           d.a = ops.dense_a.get();
           d.w = ops.dense_b.get();
           d.out = ops.dense_c.get();
           d.m = c.rows();
           d.n = c.model.n;
           d.k = d.lda = d.ldw = c.model.hidden;
           d.ldo = c.model.n;
           return glukit::gated_projection<GateWs256Policy>(d, stream);
         }),
         tile("gate_up_ws256_gather",
              [&] { return glukit::grouped_gated_projection<GateWs256Policy>(ops.gate_up(call++), stream); }),
         step("gate_up_default_gather",
              [&] { return glukit::grouped_gated_projection<glukit::epilogue::SwiGlu>(ops.gate_up(call++), stream); })},
        std::min(counts.warmup, 3), counts.samples);
    GLUKIT_BENCH_CHECK_LAUNCH();
    if (!failed.ok()) {
      fail(state, "moe layer, timed in turns: " + failed.what);
      return;
    }
    const double layer_us = med[0] + med[1] + med[2] + med[3];
    state.SetIterationTime(layer_us * 1e-6);
    state.counters["tokens"] = double(c.tokens);
    state.counters["us_route"] = med[0];
    state.counters["us_gate_up"] = med[1];
    state.counters["us_down"] = med[2];
    state.counters["us_combine"] = med[3];
    state.counters["us_dense_gemm"] = med[4];
    state.counters["gate_up_TFLOPS"] = c.gate_up_flops() / (med[1] * 1e-6) * 1e-12;
    state.counters["down_TFLOPS"] = c.down_flops() / (med[2] * 1e-6) * 1e-12;
    state.counters["dense_TFLOPS"] = c.gate_up_flops() / (med[4] * 1e-6) * 1e-12;
    state.counters["gate_up_vs_dense"] = med[4] / med[1];
    state.counters["us_down_ws"] = med[5];
    state.counters["down_ws_TFLOPS"] = c.down_flops() / (med[5] * 1e-6) * 1e-12;
    state.counters["us_gate_up_ws"] = med[6];
    state.counters["gate_up_ws_TFLOPS"] = c.gate_up_flops() / (med[6] * 1e-6) * 1e-12;
    state.counters["gate_up_ws_vs_dense"] = med[4] / med[6];
    state.counters["us_gather"] = med[7];
    state.counters["us_gate_up_ws_gather"] = med[8];
    state.counters["gate_up_ws_gather_vs_dense"] = med[4] / med[8];
    state.counters["us_gather_dy"] = med[9];
    state.counters["us_backward_dh"] = med[10];
    state.counters["backward_dh_TFLOPS"] = c.down_flops() / (med[10] * 1e-6) * 1e-12;
    // Where few tokens reach each expert the layer reads every touched expert's weights:
    // their bytes over the gate/up and down times, against the card's 4.8 TB/s.
    const double weight_bytes = ops.touched_experts * 3.0 * double(c.model.n) * double(c.model.hidden) * sizeof(T);
    state.counters["touched_experts"] = ops.touched_experts;
    state.counters["tile_fill_128"] = ops.tile_fill;
    state.counters["tile_fill_64"] = ops.tile_fill_64;
    if (failed.runs("gate_up_ws64")) {
      state.counters["us_gate_up_ws64"] = med[11];
      state.counters["gate_up_ws64_vs_dense"] = med[4] / med[11];
    }
    if (failed.runs("down_ws64")) state.counters["us_down_ws64"] = med[12];
    state.counters["us_gate_up_fp8"] = med[13];
    state.counters["gate_up_fp8_TFLOPS"] = c.gate_up_flops() / (med[13] * 1e-6) * 1e-12;
    state.counters["us_dense_fp8"] = med[14];
    state.counters["gate_up_fp8_vs_dense_fp8"] = med[14] / med[13];
    state.counters["us_layer_fp8"] = med[15];
    state.counters["layer_fp8_vs_bf16_ws"] = (med[6] + med[5] + med[3]) / med[15];
    state.counters["us_gate_up_alt"] = med[16];
    state.counters["gate_up_alt_vs_ws"] = med[6] / med[16];
    if (failed.runs("gate_up_ws256")) {
      state.counters["us_gate_up_ws256"] = med[17];
      state.counters["gate_up_ws256_vs_dense"] = med[4] / med[17];
    }
    if (failed.runs("gate_up_pp128")) {
      state.counters["us_gate_up_pp128"] = med[18];
      state.counters["gate_up_pp128_vs_dense"] = med[4] / med[18];
    }
    if (failed.runs("gate_up_fp8_ws256")) state.counters["us_gate_up_fp8_ws256"] = med[19];
    if (failed.runs("gate_up_fp8_pp128")) state.counters["us_gate_up_fp8_pp128"] = med[20];
    if (failed.runs("backward_dh_pp128")) state.counters["us_backward_dh_pp128"] = med[21];
    if (failed.runs("down_ws256")) state.counters["us_down_ws256"] = med[22];
    if (failed.runs("gate_up_fp8_ws128")) state.counters["us_gate_up_fp8_ws128"] = med[23];
    // The refused tiles: a counter each (<step>_refused) and their messages in the label.
    std::string label;
    for (const std::string& r : failed.refused) {
      state.counters[r.substr(0, r.find(':')) + "_refused"] = 1;
      label += (label.empty() ? "refused: " : "; ") + r;
    }
    if (!label.empty()) state.SetLabel(label);
    state.counters["weights_TBps"] = weight_bytes / ((med[1] + med[2]) * 1e-6) * 1e-12;
    state.counters["weights_ws_TBps"] = weight_bytes / ((med[6] + med[5]) * 1e-6) * 1e-12;
    // The card's copy rate as HBM traffic (each byte read and written) against the weight
    // streams of the PyTorch layers' decode kernels: 16 bits on 64-row ping-pong tiles and
    // WarpSpecializedTma (the default's decode pick and the launcher's down projection), e4m3 on
    // the e4m3 default's pick and WarpSpecializedTma (half the bytes).
    const double copy_TBps = 2.0 * double(ops.copy_bytes) / (med[24] * 1e-6) * 1e-12;
    state.counters["us_copy"] = med[24];
    state.counters["copy_TBps"] = copy_TBps;
    // `bytes` of HBM traffic over `us` against the copy rate.
    const auto vs_copy = [&](double bytes, double us) { return bytes / (us * 1e-6) * 1e-12 / copy_TBps; };
    state.counters["us_down_fp8"] = med[25];
    if (failed.runs("gate_up_ws64")) {
      const double pp64_TBps = weight_bytes / ((med[11] + med[5]) * 1e-6) * 1e-12;
      state.counters["weights_pp64_TBps"] = pp64_TBps;
      state.counters["weights_pp64_vs_copy"] = pp64_TBps / copy_TBps;
    }
    const double fp8_TBps = weight_bytes / 2.0 / ((med[13] + med[25]) * 1e-6) * 1e-12;
    state.counters["weights_fp8_TBps"] = fp8_TBps;
    state.counters["weights_fp8_vs_copy"] = fp8_TBps / copy_TBps;
    state.counters["us_down_fp8_default"] = med[26];
    state.counters["weights_fp8_default_vs_copy"] = vs_copy(weight_bytes / 2.0, med[13] + med[26]);
    if (failed.runs("gate_up_fp8_pp64")) state.counters["us_gate_up_fp8_pp64"] = med[27];
    state.counters["us_gate_up_stream"] = med[28];
    state.counters["us_down_stream"] = med[29];
    state.counters["us_gate_up_fp8_stream"] = med[30];
    state.counters["us_down_fp8_stream"] = med[31];
    state.counters["us_gate_up_alt_stream"] = med[32];
    state.counters["us_down_stream_ih"] = med[33];
    if (failed.runs("down_fp8_pp64")) state.counters["us_down_fp8_pp64"] = med[34];
    state.counters["weights_stream_vs_copy"] = vs_copy(weight_bytes, med[28] + med[29]);
    state.counters["weights_fp8_stream_vs_copy"] = vs_copy(weight_bytes / 2.0, med[30] + med[31]);
    state.counters["us_copy_same"] = med[35];
    state.counters["copy_same_vs_copy"] = vs_copy(2.0 * double(std::min(same_bytes(2), ops.copy_bytes)), med[35]);
    state.counters["us_copy_same_fp8"] = med[36];
    state.counters["copy_same_fp8_vs_copy"] = vs_copy(2.0 * double(std::min(same_bytes(4), ops.copy_bytes)), med[36]);
    state.counters["us_gate_up_dense_ws256"] = med[37];
    state.counters["gate_up_dense_ws256_vs_dense"] = med[4] / med[37];
    if (failed.runs("gate_up_ws256_gather")) {
      state.counters["us_gate_up_ws256_gather"] = med[38];
      state.counters["gate_up_ws256_gather_vs_dense"] = med[4] / med[38];
    }
    state.counters["us_gate_up_default_gather"] = med[39];
    state.counters["gate_up_default_gather_vs_dense"] = med[4] / med[39];
    state.counters["weights_alt_stream_vs_copy"] = vs_copy(weight_bytes, med[32] + med[33]);
    state.counters["sets"] = double(ops.sets.size());
    state.counters["weight_sets"] = double(ops.weight_sets.size());
  }
}

}  // namespace

void register_moe() {
  for (const MoeModel& m : kModels)
    for (std::int64_t t : kTokens)
      for (bool skewed : {false, true})
        configure(benchmark::RegisterBenchmark(("moe_experts/" + MoeCase{m, t, skewed}.key()).c_str(), bm_moe,
                                               MoeCase{m, t, skewed}));
}

}  // namespace glukit_bench
