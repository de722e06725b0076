// Example 03: writing a new epilogue.
//
// A fused epilogue is a small type, not a change to the kernel. This one is a
// GELU-gated unit with the sigmoid approximation of GELU ("quick GELU"):
//     out = X * sigmoid(1.702 X) * Y,   X = A @ B + bias
// It is plugged into the V4 kernel by deriving a policy from
// glukit::policy::V4FusedEpilogue and naming it as the policy's epilogue_op,
// then run on a small ragged shape (M, N not multiples of any tile; leading
// dimensions wider than the rows) and checked against glukit's fp64 host
// reference, which evaluates the very same functor in double precision.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include <glukit/glukit.hpp>

#define EXAMPLE_CHECK_CUDA(call)                                                             \
  do {                                                                                       \
    const cudaError_t example_err_ = (call);                                                 \
    if (example_err_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "error: %s failed: %s (%s:%d)\n", #call,                          \
                   cudaGetErrorString(example_err_), __FILE__, __LINE__);                    \
      std::exit(2);                                                                          \
    }                                                                                        \
  } while (0)

/// The user's epilogue operation: what glukit::EpilogueOp asks for is a name,
/// whether Y is read, and a host+device call operator templated on the value
/// type (the kernel calls it in fp32, the reference in fp64). Math goes through
/// glukit::math so the same code builds for every backend: math::exp is the
/// hardware exponential on the device, and math::div the hardware reciprocal (a
/// plain `/` compiles to IEEE division with its range check and slow path).
struct QuickGeluGate {
  static constexpr const char* name() { return "QuickGeluGate"; }
  static constexpr bool reads_aux = true;
  template <class T>
  GLUKIT_HOST_DEVICE T operator()(T x, T y) const {
    const T sigmoid = glukit::math::div(T(1), T(1) + glukit::math::exp(T(-1.702) * x));
    return x * sigmoid * y;
  }
};
static_assert(glukit::EpilogueOp<QuickGeluGate>, "QuickGeluGate must meet glukit::EpilogueOp");

/// V4 (persistent, deep pipeline, fused epilogue) with the new operation. Every
/// other member (tiles, buffers, schedule) is inherited.
struct QuickGeluV4 : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
  using epilogue_op = QuickGeluGate;
  static constexpr const char* name() { return "V4FusedEpilogue+QuickGeluGate"; }
};

namespace {

// Ragged: M, N are not multiples of the 128 x 128 tile; K and every leading
// dimension are multiples of 8 elements (16 bytes), as the launcher requires.
constexpr std::int64_t kM = 333, kN = 1234, kK = 200;
constexpr std::int64_t kLda = 208, kLdb = 1240, kLdy = 1248, kLdo = 1256;
constexpr double kTolerance = 1e-2;
constexpr std::uint16_t kPoison = 0xFFFF;  // an fp16 NaN

std::vector<__half> random_halves(std::size_t count, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<__half> v(count);
  for (__half& h : v) h = __float2half_rn(dist(rng));
  return v;
}

template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  EXAMPLE_CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(T)));
  EXAMPLE_CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main() {
  std::mt19937 rng(std::random_device{}());
  const std::vector<__half> a = random_halves(std::size_t(kM * kLda), rng, 1.0f);
  const std::vector<__half> b = random_halves(std::size_t(kK * kLdb), rng, 1.0f);
  const std::vector<__half> bias = random_halves(std::size_t(kN), rng, 1.0f);
  const std::vector<__half> y = random_halves(std::size_t(kM * kLdy), rng, 1.0f);

  __half* d_a = to_device(a);
  __half* d_b = to_device(b);
  __half* d_bias = to_device(bias);
  __half* d_y = to_device(y);
  __half* d_out = nullptr;
  const std::size_t out_count = std::size_t(kM * kLdo);
  EXAMPLE_CHECK_CUDA(cudaMalloc(&d_out, out_count * sizeof(__half)));
  EXAMPLE_CHECK_CUDA(cudaMemset(d_out, 0xFF, out_count * sizeof(__half)));  // poison

  glukit::AddmmGluArgs args;
  args.a = d_a, args.b = d_b, args.bias = d_bias, args.y = d_y, args.out = d_out;
  args.m = kM, args.n = kN, args.k = kK;
  args.lda = kLda, args.ldb = kLdb, args.ldy = kLdy, args.ldo = kLdo;

  const glukit::Status status = glukit::addmm_glu<QuickGeluV4>(args);
  if (!status.ok()) {
    std::fprintf(stderr, "error: addmm_glu<%s> returned: %s\n", QuickGeluV4::name(),
                 status.message());
    return 1;
  }
  EXAMPLE_CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<__half> out(out_count);
  EXAMPLE_CHECK_CUDA(
      cudaMemcpy(out.data(), d_out, out_count * sizeof(__half), cudaMemcpyDeviceToHost));

  // The reference evaluates QuickGeluGate in fp64 on the same host operands.
  glukit::AddmmGluArgs host = args;
  host.a = a.data(), host.b = b.data(), host.bias = bias.data(), host.y = y.data();
  host.out = nullptr;
  const std::vector<double> expected = glukit::reference::addmm_glu(host, QuickGeluGate{});
  const double error = glukit::reference::relative_l2_error(out.data(), kLdo, expected, kM, kN);

  // Columns n .. ldo-1 of each row belong to the caller: they must keep the poison.
  std::int64_t touched_padding = 0;
  for (std::int64_t i = 0; i < kM; ++i)
    for (std::int64_t j = kN; j < kLdo; ++j) {
      std::uint16_t bits;
      static_assert(sizeof(bits) == sizeof(__half));
      std::memcpy(&bits, &out[std::size_t(i * kLdo + j)], sizeof(bits));
      touched_padding += bits != kPoison;
    }

  std::printf("%s on M=%lld N=%lld K=%lld (lda %lld, ldb %lld, ldy %lld, ldo %lld)\n",
              QuickGeluV4::name(), (long long)kM, (long long)kN, (long long)kK, (long long)kLda,
              (long long)kLdb, (long long)kLdy, (long long)kLdo);
  std::printf("relative L2 error vs fp64 reference: %.3e (limit %.0e)\n", error, kTolerance);
  std::printf("elements written outside the m x n window: %lld\n", (long long)touched_padding);

  for (__half* p : {d_a, d_b, d_bias, d_y, d_out}) EXAMPLE_CHECK_CUDA(cudaFree(p));
  if (!(error < kTolerance) || touched_padding != 0) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
