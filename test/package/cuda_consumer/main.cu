// The CUDA consumer of the package test (package.cuda_consumer): built against an
// installed glukit by the CMakeLists.txt that README's "Using glukit from another
// project" shows, it launches glukit's default kernel. Without a GPU the launcher must
// refuse cleanly (a non-ok Status, nothing launched); with one, the result is checked
// against glukit's fp64 reference, and so are the training and fp8 launchers, called as
// docs/training.md and docs/api.md show them (designated initialisers; named policies
// where a default would compile more kernels than the call needs): the gated projection
// with its pre-activations P, the gated backward on P, the recomputing backward, addmm_glu's
// backward with its bias gradient (twice: bitwise equal), the e4m3 gated projection with
// its row maxima and quantize_rows_e4m3. Prints "glukit cuda consumer: ok ..." and exits 0
// when the run is as it should be.
#include <cuda_runtime.h>

#include <glukit/glukit.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if __cplusplus < 202002L
#error "glukit::glukit must make this CUDA translation unit C++20"
#endif

namespace {

using T = glukit::half_t;

const char* code_name(glukit::StatusCode c) {
  switch (c) {
    case glukit::StatusCode::ok: return "ok";
    case glukit::StatusCode::invalid_argument: return "invalid_argument";
    case glukit::StatusCode::unsupported_device: return "unsupported_device";
    case glukit::StatusCode::runtime_error: return "runtime_error";
  }
  return "?";
}

// No GPU: a valid problem whose pointers are never dereferenced, since the launcher must
// stop at the device checks, before touching memory.
int without_gpu(cudaError_t why) {
  alignas(16) static T storage[8];
  constexpr std::int64_t m = 128, n = 256, k = 64;
  const glukit::AddmmGluArgsT<T> args{storage, storage, nullptr, storage, storage, m, n, k, k, n, n, n};
  const glukit::Status s = glukit::addmm_glu(args, nullptr);
  std::printf("addmm_glu without a GPU (%s): %s: %s\n", cudaGetErrorString(why), code_name(s.code()), s.message());
  if (s.ok() || s.code() == glukit::StatusCode::invalid_argument) {
    std::printf("FAILED: expected unsupported_device or runtime_error\n");
    return 1;
  }
  std::printf("glukit cuda consumer: ok (no GPU: the launcher refused cleanly)\n");
  return 0;
}


template <class E>
E* to_device(const std::vector<E>& h) {
  E* d = nullptr;
  if (cudaMalloc(&d, h.size() * sizeof(E) + 16) != cudaSuccess) return nullptr;
  cudaMemcpy(d, h.data(), h.size() * sizeof(E), cudaMemcpyHostToDevice);
  return d;
}
template <class E>
E* device_zeros(std::size_t n) {
  E* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(E) + 16) != cudaSuccess) return nullptr;
  cudaMemset(d, 0, n * sizeof(E));
  return d;
}
template <class E>
std::vector<E> to_host(const E* d, std::size_t n) {
  std::vector<E> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(E), cudaMemcpyDeviceToHost);
  return h;
}
std::vector<T> values(std::size_t n, int period, float scale) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = glukit::from_float<T>(float(int((i * 7 + 3) % period) - period / 2) * scale);
  return v;
}
bool report(const char* what, double err, double bound) {
  std::printf("%s: relative L2 error %.3g\n", what, err);
  if (err < bound) return true;
  std::printf("FAILED: %s\n", what);
  return false;
}
bool launched(const char* what, const glukit::Status& s) {
  if (s.ok() && cudaDeviceSynchronize() == cudaSuccess) return true;
  std::printf("FAILED: %s: %s\n", what, s.message());
  return false;
}

// The training and fp8 launchers on an sm_90 GPU, each against the fp64 reference.
int training_and_fp8() {
  using namespace glukit;
  using Sm90 = arch::sm90a;
  constexpr std::int64_t m = 136, n = 200, k = 160;  // ragged against every tile (k: whole e4m3 k-steps)
  const std::vector<T> x = values(m * k, 13, 1.f / 16), w = values(2 * n * k, 11, 1.f / 32),
                       bias = values(2 * n, 5, 1.f / 8), w_down = values(n * k, 9, 1.f / 32),
                       dy = values(m * k, 7, 1.f / 8), dout = values(m * n, 9, 1.f / 8);
  T *d_x = to_device(x), *d_w = to_device(w), *d_bias = to_device(bias), *d_wd = to_device(w_down),
    *d_dy = to_device(dy), *d_dout = to_device(dout);
  T *d_h = device_zeros<T>(m * n), *d_p = device_zeros<T>(m * 2 * n), *d_dp = device_zeros<T>(m * 2 * n),
    *d_h2 = device_zeros<T>(m * n);
  // The gated projection and its pre-activations P (a named policy: its kernels only).
  using Gated = policy::GatedTma128x128<Sm90>;  // SwiGlu
  const GatedProjectionArgsT<T> fwd{.a = d_x, .w = d_w, .bias = d_bias, .out = d_h, .m = m, .n = n, .k = k,
                                    .lda = k, .ldw = k, .ldo = n, .p = d_p, .ldp = 2 * n};
  if (!launched("gated_projection with p", gated_projection<Gated>(fwd))) return 1;
  GatedProjectionArgsT<T> fwd_host = fwd;
  fwd_host.a = x.data(), fwd_host.w = w.data(), fwd_host.bias = bias.data();
  const std::vector<T> h = to_host(d_h, m * n), p = to_host(d_p, m * 2 * n);
  if (!report("gated_projection", reference::relative_l2_error(h.data(), n, reference::gated_projection(fwd_host), m, n),
              1e-2))
    return 1;
  // The gated backward on P: dP = dH' over P, H recomputed (W_down k x n, dY m x k).
  const GatedBackwardArgsT<T> bwd{.dy = d_dy, .w_down = d_wd, .p = d_p, .dp = d_dp, .h = d_h2, .m = m, .n = n,
                                  .k = k, .lddy = k, .ldw_down = n, .ldp = 2 * n, .lddp = 2 * n, .ldh = n};
  if (!launched("gated_backward", gated_backward<epilogue::SwiGlu>(bwd))) return 1;
  GatedBackwardArgsT<T> bwd_host = bwd;
  bwd_host.dy = dy.data(), bwd_host.w_down = w_down.data(), bwd_host.p = p.data();
  const reference::GatedBackwardResult rb = reference::gated_backward(bwd_host);
  const std::vector<T> dp = to_host(d_dp, m * 2 * n), h2 = to_host(d_h2, m * n);
  if (!report("gated_backward dP", reference::relative_l2_error(dp.data(), 2 * n, rb.dp, m, 2 * n), 1e-2) ||
      !report("gated_backward H", reference::relative_l2_error(h2.data(), n, rb.h, m, n), 1e-2))
    return 1;
  // The recomputing backward: dP from x, W and dO.
  const GatedProjectionBackwardArgsT<T> pb{.a = d_x, .w = d_w, .bias = d_bias, .dout = d_dout, .dp = d_dp, .m = m,
                                           .n = n, .k = k, .lda = k, .ldw = k, .lddout = n, .lddp = 2 * n};
  if (!launched("gated_projection_backward", gated_projection_backward<epilogue::SwiGlu>(pb))) return 1;
  GatedProjectionBackwardArgsT<T> pb_host = pb;
  pb_host.a = x.data(), pb_host.w = w.data(), pb_host.bias = bias.data(), pb_host.dout = dout.data();
  const std::vector<T> dp2 = to_host(d_dp, m * 2 * n);
  if (!report("gated_projection_backward",
              reference::relative_l2_error(dp2.data(), 2 * n, reference::gated_projection_backward(pb_host).dp, m,
                                           2 * n),
              1e-2))
    return 1;
  // addmm_glu's backward with the bias gradient (B n x k: W's first n rows), twice.
  float* d_dbias = device_zeros<float>(n);
  float* d_work = device_zeros<float>(addmm_glu_backward_workspace_floats(m, n));
  T *d_dx = device_zeros<T>(m * n), *d_dyo = device_zeros<T>(m * n);
  const AddmmGluBackwardArgsT<T> xb{.a = d_x, .b = d_w, .bias = d_bias, .y = d_dout, .dout = d_dout, .dx = d_dx,
                                    .dy = d_dyo, .m = m, .n = n, .k = k, .lda = k, .ldb = k, .ldy = n,
                                    .lddout = n, .lddx = n, .lddy = n, .b_layout = Layout::col_major,
                                    .dbias = d_dbias, .workspace = d_work};
  std::vector<std::vector<float>> sums;
  for (int r = 0; r < 2; ++r) {
    if (!launched("addmm_glu_backward", addmm_glu_backward(xb))) return 1;
    sums.push_back(to_host(d_dbias, n));
  }
  AddmmGluBackwardArgsT<T> xb_host = xb;
  xb_host.a = x.data(), xb_host.b = w.data(), xb_host.bias = bias.data(), xb_host.y = dout.data(),
  xb_host.dout = dout.data();
  const std::vector<T> dx = to_host(d_dx, m * n);
  if (!report("addmm_glu_backward dX",
              reference::relative_l2_error(dx.data(), n, reference::addmm_glu_backward(xb_host).dx, m, n), 1e-2))
    return 1;
  std::vector<double> col(n, 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) col[j] += to_float(dx[i * n + j]);
  double num = 0, den = 0;
  for (std::int64_t j = 0; j < n; ++j) num += (sums[0][j] - col[j]) * (sums[0][j] - col[j]), den += col[j] * col[j];
  if (!report("addmm_glu_backward dbias", std::sqrt(num / den), 1e-5)) return 1;
  if (std::memcmp(sums[0].data(), sums[1].data(), n * sizeof(float)) != 0) {
    std::printf("FAILED: dbias differs between two launches on the same inputs\n");
    return 1;
  }
  std::printf("addmm_glu_backward dbias: bitwise equal in two launches\n");
  // e4m3: x and W as e4m3 codes (scale 1), the gated projection with its row maxima, then
  // the output quantised per row.
  std::vector<std::uint8_t> x8(m * k), w8(2 * n * k);
  std::vector<T> xq(m * k), wq(2 * n * k);  // the codes' values, exact in T
  for (std::size_t i = 0; i < x8.size(); ++i) {
    x8[i] = float_to_fp8<Fp8Format::e4m3>(to_float(x[i]) * 4);
    xq[i] = from_float<T>(fp8_to_float<Fp8Format::e4m3>(x8[i]));
  }
  for (std::size_t i = 0; i < w8.size(); ++i) {
    w8[i] = float_to_fp8<Fp8Format::e4m3>(to_float(w[i]) * 8);
    wq[i] = from_float<T>(fp8_to_float<Fp8Format::e4m3>(w8[i]));
  }
  std::uint8_t *d_x8 = to_device(x8), *d_w8 = to_device(w8);
  const std::vector<float> one{1.f};
  float *d_one = to_device(one), *d_max = device_zeros<float>(m), *d_scale = device_zeros<float>(m);
  const GatedProjectionFp8ArgsT<T> f8{.a = reinterpret_cast<const float8_e4m3_t*>(d_x8),
                                      .w = reinterpret_cast<const float8_e4m3_t*>(d_w8), .scale_a = d_one,
                                      .scale_w = d_one, .bias = d_bias, .out = d_h, .m = m, .n = n, .k = k,
                                      .lda = k, .ldw = k, .ldo = n, .row_absmax = d_max};
  if (!launched("fp8 gated_projection", gated_projection<Gated>(f8))) return 1;
  const GatedProjectionArgsT<T> f8_host{.a = xq.data(), .w = wq.data(), .bias = bias.data(), .out = nullptr,
                                        .m = m, .n = n, .k = k, .lda = k, .ldw = k, .ldo = n};
  const std::vector<double> r8 = reference::gated_projection(f8_host);
  const std::vector<T> h8 = to_host(d_h, m * n);
  if (!report("fp8 gated_projection", reference::relative_l2_error(h8.data(), n, r8, m, n), 1e-2)) return 1;
  std::uint8_t* d_q = device_zeros<std::uint8_t>(m * n);
  const QuantizeRowsArgsT<T> qa{.x = d_h, .absmax = d_max, .scale = d_scale,
                                .q = reinterpret_cast<float8_e4m3_t*>(d_q), .m = m, .n = n, .ldx = n, .ldq = n};
  if (!launched("quantize_rows_e4m3", quantize_rows_e4m3(qa))) return 1;
  const std::vector<std::uint8_t> q = to_host(d_q, m * n);
  const std::vector<float> scale = to_host(d_scale, m);
  std::vector<T> deq(m * n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      deq[i * n + j] = from_float<T>(fp8_to_float<Fp8Format::e4m3>(q[i * n + j]) * scale[i]);
  return report("fp8 output, dequantised", reference::relative_l2_error(deq.data(), n, r8, m, n), 0.0625) ? 0 : 1;
}

int with_gpu() {
  constexpr std::int64_t m = 200, n = 328, k = 136;  // ragged against every tile
  std::vector<T> a(m * k), b(k * n), bias(n), y(m * n), out(m * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = glukit::from_float<T>(float(int(i % 13) - 6) / 16);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = glukit::from_float<T>(float(int(i % 7) - 3) / 8);
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = glukit::from_float<T>(float(int(i % 5) - 2) / 4);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = glukit::from_float<T>(float(int(i % 11) - 5) / 8);
  T *da, *db, *dbias, *dy, *dout;
  const std::size_t bytes = sizeof(T);
  if (cudaMalloc(&da, a.size() * bytes) != cudaSuccess || cudaMalloc(&db, b.size() * bytes) != cudaSuccess ||
      cudaMalloc(&dbias, bias.size() * bytes) != cudaSuccess || cudaMalloc(&dy, y.size() * bytes) != cudaSuccess ||
      cudaMalloc(&dout, out.size() * bytes) != cudaSuccess) {
    std::printf("FAILED: cudaMalloc\n");
    return 1;
  }
  cudaMemcpy(da, a.data(), a.size() * bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dbias, bias.data(), bias.size() * bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), y.size() * bytes, cudaMemcpyHostToDevice);

  glukit::AddmmGluArgsT<T> bad{da, db, dbias, dy, dout, m, n, k, k, n - 8, n, n};
  const glukit::Status refused = glukit::addmm_glu(bad, nullptr);
  if (refused.code() != glukit::StatusCode::invalid_argument || std::strncmp(refused.message(), "ldb", 3) != 0) {
    std::printf("FAILED: ldb < n gave %s: %s\n", code_name(refused.code()), refused.message());
    return 1;
  }
  const glukit::Status s = glukit::addmm_glu(glukit::AddmmGluArgsT<T>{da, db, dbias, dy, dout, m, n, k, k, n, n, n});
  const cudaError_t e = cudaDeviceSynchronize();
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (major != 9 || minor != 0) {  // a GPU other than Hopper: refused, nothing launched
    std::printf("addmm_glu on compute capability %d.%d: %s: %s\n", major, minor, code_name(s.code()), s.message());
    if (s.code() != glukit::StatusCode::unsupported_device) return 1;
    std::printf("glukit cuda consumer: ok (not an sm_90 GPU: the launcher refused cleanly)\n");
    return 0;
  }
  if (!s.ok() || e != cudaSuccess) {
    std::printf("FAILED: addmm_glu: %s: %s; synchronize: %s\n", code_name(s.code()), s.message(), cudaGetErrorString(e));
    return 1;
  }
  cudaMemcpy(out.data(), dout, out.size() * bytes, cudaMemcpyDeviceToHost);
  const glukit::AddmmGluArgsT<T> host{a.data(), b.data(), bias.data(), y.data(), out.data(), m, n, k, k, n, n, n};
  const double err = glukit::reference::relative_l2_error(out.data(), n, glukit::reference::addmm_glu(host), m, n);
  std::printf("addmm_glu %lldx%lldx%lld on the GPU: relative L2 error %.3g\n", (long long)m, (long long)n,
              (long long)k, err);
  if (!(err < 1e-2)) {
    std::printf("FAILED: relative error\n");
    return 1;
  }
  if (training_and_fp8() != 0) return 1;
  std::printf("glukit cuda consumer: ok (ran on the GPU)\n");
  return 0;
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) return without_gpu(e);
  return with_gpu();
}
