// Example 01: the reference problem, end to end.
//
// Runs the four glukit variants (V1..V4 on sm90a) on out = X + X * Y with
// X = A @ B + bias at M = 1024, N = 21568, K in {256, 512, 1024}:
//   - fresh random inputs, output poisoned (all NaN) before each variant runs;
//   - checks every output element was written and is finite, and checks 32
//     random rows exactly against glukit's fp64 host reference (relative L2 < 1e-2);
//   - times each variant (CUDA events, warm-up, median of 30 launches) beside
//     cuBLAS GEMM alone (no bias, no gate) at the same K;
//   - prints time, TFLOP/s and the ratio to cuBLAS; exits non-zero on any failure.
// glukit_bench (benchmark/) measures the same more carefully (rotated inputs
// past the L2, more launches, the unfused cuBLASLt path too).
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <glukit/glukit.hpp>

#include "example_util.cuh"

namespace {

constexpr std::int64_t kM = 1024, kN = 21568;
constexpr std::int64_t kKs[] = {256, 512, 1024};
constexpr int kCheckedRows = 32;
constexpr double kTolerance = 1e-2;
constexpr int kWarmup = 5, kSamples = 30;

/// The device operands of one K, and host copies of what the reference reads.
struct Problem {
  std::int64_t k = 0;
  __half *a = nullptr, *b = nullptr, *bias = nullptr, *y = nullptr, *out = nullptr, *c = nullptr;
  std::vector<std::int64_t> rows;   // the sampled rows
  std::vector<double> expected;     // reference of those rows, kCheckedRows x kN

  glukit::AddmmGluArgs args() const {
    glukit::AddmmGluArgs p;
    p.a = a, p.b = b, p.bias = bias, p.y = y, p.out = out;
    p.m = kM, p.n = kN, p.k = k;
    p.lda = k, p.ldb = kN, p.ldy = kN, p.ldo = kN;
    return p;
  }
};

template <class T>
std::vector<T> to_host(const T* d, std::size_t count) {
  std::vector<T> h(count);
  EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

/// Gathers the sampled rows of a device matrix (ld = n) on the host.
std::vector<__half> gather_rows(const __half* d, std::int64_t n, const std::vector<std::int64_t>& rows) {
  std::vector<__half> h(rows.size() * std::size_t(n));
  for (std::size_t r = 0; r < rows.size(); ++r)
    EXAMPLE_CHECK_CUDA(cudaMemcpy(h.data() + r * n, d + rows[r] * n, n * sizeof(__half),
                                  cudaMemcpyDeviceToHost));
  return h;
}

Problem make_problem(std::int64_t k, std::uint64_t seed, std::mt19937_64& rng) {
  Problem p;
  p.k = k;
  const auto mn = std::size_t(kM * kN);
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p.a, kM * k * sizeof(__half)));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p.b, k * kN * sizeof(__half)));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p.bias, kN * sizeof(__half)));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p.y, mn * sizeof(__half)));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p.out, mn * sizeof(__half)));
  EXAMPLE_CHECK_CUDA(cudaMalloc(&p.c, mn * sizeof(__half)));
  example::fill(p.a, kM * k, seed + 1, 1.0f);
  example::fill(p.b, k * kN, seed + 2, 1.0f);
  example::fill(p.bias, kN, seed + 3, 1.0f);
  example::fill(p.y, mn, seed + 4, 1.0f);

  // The fp64 reference of kCheckedRows random rows: the same rows of A and Y,
  // all of B and bias, as a (kCheckedRows x kN) problem of its own.
  std::uniform_int_distribution<std::int64_t> pick(0, kM - 1);
  for (int r = 0; r < kCheckedRows; ++r) p.rows.push_back(pick(rng));
  const std::vector<__half> a_rows = gather_rows(p.a, k, p.rows);
  const std::vector<__half> y_rows = gather_rows(p.y, kN, p.rows);
  const std::vector<__half> b_host = to_host(p.b, std::size_t(k * kN));
  const std::vector<__half> bias_host = to_host(p.bias, std::size_t(kN));
  glukit::AddmmGluArgs sample;
  sample.a = a_rows.data(), sample.b = b_host.data(), sample.bias = bias_host.data();
  sample.y = y_rows.data();
  sample.m = kCheckedRows, sample.n = kN, sample.k = k;
  sample.lda = k, sample.ldb = kN, sample.ldy = kN, sample.ldo = kN;
  p.expected = glukit::reference::addmm_glu(sample, glukit::epilogue::GluGate{});
  return p;
}

void free_problem(Problem& p) {
  for (__half* ptr : {p.a, p.b, p.bias, p.y, p.out, p.c}) EXAMPLE_CHECK_CUDA(cudaFree(ptr));
}

struct Row {
  std::string name;
  std::int64_t k = 0;
  double us = -1.0;
  double rel_l2 = -1.0;
  std::string status = "ok";
};

double tflops(std::int64_t k, double us) { return 2.0 * double(kM) * double(kN) * double(k) / (us * 1e-6) * 1e-12; }

/// cuBLAS GEMM alone, row-major through swapped operands: C^T = B^T A^T.
double time_cublas(cublasHandle_t handle, const Problem& p, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  EXAMPLE_CHECK_CUBLAS(cublasSetStream(handle, stream));
  return example::median_us(stream, kWarmup, kSamples, [&] {
    EXAMPLE_CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(kN), int(kM), int(p.k),
                                      &alpha, p.b, CUDA_R_16F, int(kN), p.a, CUDA_R_16F, int(p.k),
                                      &beta, p.c, CUDA_R_16F, int(kN), CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
    return true;
  });
}

/// Checks, then times, one variant. Never exits: failures land in the table.
template <class Policy>
Row run_variant(const Problem& p, cudaStream_t stream) {
  Row row{Policy::name(), p.k};
  const glukit::AddmmGluArgs args = p.args();
  const auto mn = std::size_t(kM * kN);
  EXAMPLE_CHECK_CUDA(cudaMemsetAsync(p.out, 0xFF, mn * sizeof(__half), stream));  // NaN poison
  if (const glukit::Status st = glukit::addmm_glu<Policy>(args, stream); !st.ok()) {
    row.status = std::string("error: ") + st.message();
    return row;
  }
  EXAMPLE_CHECK_CUDA(cudaStreamSynchronize(stream));
  if (const unsigned long long bad = example::count_nonfinite(p.out, mn); bad != 0) {
    row.status = "FAIL: " + std::to_string(bad) + " elements unwritten or not finite";
    return row;
  }
  const std::vector<__half> got = gather_rows(p.out, kN, p.rows);
  row.rel_l2 = glukit::reference::relative_l2_error(got.data(), kN, p.expected, kCheckedRows, kN);
  if (!(row.rel_l2 < kTolerance)) {
    row.status = "FAIL: relative L2 error above 1e-2";
    return row;
  }
  const char* error = nullptr;
  row.us = example::median_us(stream, kWarmup, kSamples, [&] {
    const glukit::Status st = glukit::addmm_glu<Policy>(args, stream);
    if (!st.ok()) error = st.message();
    return st.ok();
  });
  if (error != nullptr) row.status = std::string("error: ") + error;
  return row;
}

template <class... Policies>
void run_variants(const Problem& p, cudaStream_t stream, std::vector<Row>& rows) {
  (rows.push_back(run_variant<Policies>(p, stream)), ...);
}

}  // namespace

int main() {
  int device = 0;
  cudaDeviceProp prop{};
  EXAMPLE_CHECK_CUDA(cudaGetDevice(&device));
  EXAMPLE_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  std::printf("device: %s (compute capability %d.%d, %d SMs)\n", prop.name, prop.major,
              prop.minor, prop.multiProcessorCount);

  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  std::printf("shape: M=%lld N=%lld, seed %llu\n\n", (long long)kM, (long long)kN,
              (unsigned long long)seed);

  cublasHandle_t handle = nullptr;
  EXAMPLE_CHECK_CUBLAS(cublasCreate(&handle));
  cudaStream_t stream = nullptr;
  EXAMPLE_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  using Arch = glukit::arch::sm90a;
  std::vector<Row> rows;
  for (const std::int64_t k : kKs) {
    Problem p = make_problem(k, seed + std::uint64_t(k) * 16, rng);
    Row cublas{"cublas_gemm (no bias, no gate)", k};
    cublas.us = time_cublas(handle, p, stream);
    rows.push_back(cublas);
    run_variants<glukit::policy::V1RegisterStaged<Arch>, glukit::policy::V2DirectToLds<Arch>,
                 glukit::policy::V3DeepPipelinePersistent<Arch>,
                 glukit::policy::V4FusedEpilogue<Arch>, glukit::policy::WarpSpecializedTma<Arch>>(p, stream, rows);
    free_problem(p);
  }

  std::printf("%-5s %-32s %10s %9s %10s %12s  %s\n", "K", "kernel", "time (us)", "TFLOP/s",
              "vs cuBLAS", "rel. L2 err", "check");
  int failures = 0;
  double cublas_us = 0.0;
  for (const Row& r : rows) {
    if (r.name.rfind("cublas", 0) == 0) cublas_us = r.us;
    const bool ok = r.status == "ok";
    failures += ok ? 0 : 1;
    if (r.us > 0.0) {
      std::printf("%-5lld %-32s %10.1f %9.1f %9.2fx ", (long long)r.k, r.name.c_str(), r.us,
                  tflops(r.k, r.us), cublas_us / r.us);
    } else {
      std::printf("%-5lld %-32s %10s %9s %10s ", (long long)r.k, r.name.c_str(), "-", "-", "-");
    }
    if (r.rel_l2 >= 0.0) std::printf("%12.2e  %s\n", r.rel_l2, r.status.c_str());
    else std::printf("%12s  %s\n", "-", r.status.c_str());
  }

  EXAMPLE_CHECK_CUDA(cudaStreamDestroy(stream));
  EXAMPLE_CHECK_CUBLAS(cublasDestroy(handle));
  if (failures > 0) {
    std::printf("\n%d variant run(s) FAILED\n", failures);
    return 1;
  }
  std::printf("\nall variants match the fp64 reference (%d sampled rows per K)\n", kCheckedRows);
  return 0;
}
