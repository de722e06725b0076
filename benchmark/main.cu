// glukit_bench: Google Benchmark suite of glukit's fused addmm + GLU against
// cuBLAS/cuBLASLt at the reference shape, plus the copy and GEMM ceilings.
//
//   glukit_bench [--glukit_samples=N] [--glukit_warmup=N] [--glukit_seed=N]
//                [--glukit_k=K] [--glukit_sweep=0|1|only] [any --benchmark_* flag]
// --glukit_k runs every reference-shape benchmark at that one K (a multiple of 8) instead
// of 256, 512 and 1024 (e.g. K = 64: a tile's main loop is one k-block, the rest is
// streaming). --glukit_sweep: 1 (default) runs the reference-shape benchmarks, then the
// LLM-shape sweep (sweep.cu, <what>/<dtype>/<layout>/M/N/K); 0 leaves the sweep out; only
// runs the sweep alone.
//
// Every benchmark is one Google Benchmark iteration holding `samples` launches,
// each timed by its own CUDA event pair; the reported (manual) time is their
// median. The context of the JSON output names the device and driver.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_context.hpp"
#include "common/cuda_check.hpp"
#include "common/short_name_reporter.hpp"
#include "glukit/platform/config.hpp"
#include "problem.hpp"

namespace glukit_bench {
namespace {

DeviceInfo g_device;
cublasHandle_t g_cublas = nullptr;
cublasLtHandle_t g_cublaslt = nullptr;
void* g_lt_workspace = nullptr;
/// cuBLASLt workspace: what its heuristics may use for the largest kernels.
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;
int g_failures = 0;
std::uint64_t g_seed_counter = 0;

/// The display driver version ("580.159.04") through NVML, loaded at run time
/// so the binary does not depend on it; "unknown" where it is missing.
std::string driver_version() {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return "unknown";
  using init_fn = int (*)();
  using version_fn = int (*)(char*, unsigned);
  using shutdown_fn = int (*)();
  auto init = reinterpret_cast<init_fn>(dlsym(nvml, "nvmlInit_v2"));
  auto version = reinterpret_cast<version_fn>(dlsym(nvml, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<shutdown_fn>(dlsym(nvml, "nvmlShutdown"));
  std::string result = "unknown";
  if (init && version && shutdown && init() == 0) {
    char buffer[96] = {};
    if (version(buffer, sizeof(buffer)) == 0) result = buffer;
    shutdown();
  }
  dlclose(nvml);
  return result;
}

std::string version_string(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

/// Consumes --glukit_<name>=<value> flags; leaves the rest for Google Benchmark.
bool parse_flags(int* argc, char** argv) {
  int kept = 1;
  bool seed_given = false;
  for (int i = 1; i < *argc; ++i) {
    const char* arg = argv[i];
    const auto value_of = [&](const char* prefix) -> const char* {
      const std::size_t len = std::strlen(prefix);
      return std::strncmp(arg, prefix, len) == 0 ? arg + len : nullptr;
    };
    const auto parse_count = [&](const char* text, const char* flag, long long min) {
      char* end = nullptr;
      const long long v = std::strtoll(text, &end, 10);
      if (end == text || *end != '\0' || v < min) {
        std::fprintf(stderr, "glukit_bench: %s needs an integer >= %lld, got '%s'\n", flag, min,
                     text);
        std::exit(1);
      }
      return v;
    };
    if (const char* v = value_of("--glukit_samples=")) {
      settings().samples = static_cast<int>(parse_count(v, "--glukit_samples", 1));
    } else if (const char* v = value_of("--glukit_warmup=")) {
      settings().warmup = static_cast<int>(parse_count(v, "--glukit_warmup", 0));
    } else if (const char* v = value_of("--glukit_seed=")) {
      settings().seed = static_cast<std::uint64_t>(parse_count(v, "--glukit_seed", 0));
      seed_given = true;
    } else if (const char* v = value_of("--glukit_k=")) {
      settings().k = static_cast<std::int64_t>(parse_count(v, "--glukit_k", 8));
    } else if (const char* v = value_of("--glukit_sweep=")) {
      if (std::strcmp(v, "0") == 0) settings().sweep = SweepMode::off;
      else if (std::strcmp(v, "1") == 0) settings().sweep = SweepMode::on;
      else if (std::strcmp(v, "only") == 0) settings().sweep = SweepMode::only;
      else {
        std::fprintf(stderr, "glukit_bench: --glukit_sweep needs 0, 1 or only, got '%s'\n", v);
        std::exit(1);
      }
    } else if (std::strncmp(arg, "--glukit_", 9) == 0) {
      std::fprintf(stderr,
                   "glukit_bench: unknown flag %s (known: --glukit_samples=N, "
                   "--glukit_warmup=N, --glukit_seed=N, --glukit_k=K, --glukit_sweep=0|1|only)\n",
                   arg);
      std::exit(1);
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  return seed_given;
}

void init_device() {
  int count = 0;
  GLUKIT_BENCH_CHECK_CUDA(cudaGetDeviceCount(&count));
  if (count < 1) fatal("cudaGetDeviceCount", "no CUDA device", __FILE__, __LINE__);
  GLUKIT_BENCH_CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop{};
  GLUKIT_BENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  g_device.ordinal = 0;
  g_device.name = prop.name;
  g_device.sm_count = prop.multiProcessorCount;
  g_device.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  g_device.cc_major = prop.major;
  g_device.cc_minor = prop.minor;
  GLUKIT_BENCH_CHECK_CUBLAS(cublasCreate(&g_cublas));
  GLUKIT_BENCH_CHECK_CUBLAS(cublasLtCreate(&g_cublaslt));
  GLUKIT_BENCH_CHECK_CUDA(cudaMalloc(&g_lt_workspace, kLtWorkspaceBytes));
}

void add_context(const std::string& command_line) {
  int driver_api = 0, runtime = 0, cublas = 0;
  GLUKIT_BENCH_CHECK_CUDA(cudaDriverGetVersion(&driver_api));
  GLUKIT_BENCH_CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  GLUKIT_BENCH_CHECK_CUBLAS(cublasGetVersion(g_cublas, &cublas));
  benchmark::AddCustomContext("device", g_device.name);
  benchmark::AddCustomContext("compute_capability", std::to_string(g_device.cc_major) + "." +
                                                        std::to_string(g_device.cc_minor));
  benchmark::AddCustomContext("sm_count", std::to_string(g_device.sm_count));
  benchmark::AddCustomContext("l2_bytes", std::to_string(g_device.l2_bytes));
  benchmark::AddCustomContext("driver", driver_version());
  benchmark::AddCustomContext("cuda_driver_api", version_string(driver_api));
  benchmark::AddCustomContext("cuda_runtime", version_string(runtime));
  benchmark::AddCustomContext("cublas", std::to_string(cublas));
  benchmark::AddCustomContext("cublaslt", std::to_string(cublasLtGetVersion()));
  benchmark::AddCustomContext("glukit_version", std::to_string(GLUKIT_VERSION_MAJOR) + "." +
                                                    std::to_string(GLUKIT_VERSION_MINOR) + "." +
                                                    std::to_string(GLUKIT_VERSION_PATCH));
  benchmark::AddCustomContext("shape", "M=" + std::to_string(kRefM) + " N=" +
                                           std::to_string(kRefN) + " K in {256,512,1024}");
  const char* sweep = settings().sweep == SweepMode::off ? "0" : settings().sweep == SweepMode::on ? "1" : "only";
  benchmark::AddCustomContext("sweep", sweep);
  benchmark::AddCustomContext("timing", "median of " + std::to_string(settings().samples) +
                                            " event-timed launches after " +
                                            std::to_string(settings().warmup) + " warm-up");
  benchmark::AddCustomContext("seed", std::to_string(settings().seed));
  benchmark::AddCustomContext("command_line", command_line);
}

void teardown() {
  GLUKIT_BENCH_CHECK_CUDA(cudaDeviceSynchronize());
  GLUKIT_BENCH_CHECK_CUDA(cudaFree(g_lt_workspace));
  GLUKIT_BENCH_CHECK_CUBLAS(cublasLtDestroy(g_cublaslt));
  GLUKIT_BENCH_CHECK_CUBLAS(cublasDestroy(g_cublas));
}

}  // namespace

Settings& settings() {
  static Settings s;
  return s;
}
const DeviceInfo& device_info() { return g_device; }
cublasHandle_t cublas_handle() { return g_cublas; }
cublasLtHandle_t cublaslt_handle() { return g_cublaslt; }
void* cublaslt_workspace() { return g_lt_workspace; }
std::size_t cublaslt_workspace_bytes() { return kLtWorkspaceBytes; }
std::uint64_t next_seed() { return settings().seed + 0x1000 * ++g_seed_counter; }

void fail(benchmark::State& state, const std::string& message) {
  // Keep every message alive for the reporters, whatever SkipWithError copies.
  static std::deque<std::string> messages;
  messages.push_back(message);
  std::fprintf(stderr, "glukit_bench: FAILED: %s\n", message.c_str());
  std::fflush(stderr);
  state.SkipWithError(messages.back().c_str());
  ++g_failures;
}
int failure_count() { return g_failures; }

Stream::Stream() { GLUKIT_BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
Stream::~Stream() { GLUKIT_BENCH_CHECK_CUDA(cudaStreamDestroy(stream_)); }

}  // namespace glukit_bench

/// --benchmark_list_tests only prints names: it needs no device.
bool only_listing(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true" ||
        arg == "--benchmark_list_tests=1")
      return true;
  }
  return false;
}

int main(int argc, char** argv) {
  using namespace glukit_bench;
  std::string command_line = argv[0];
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  if (!parse_flags(&argc, argv)) settings().seed = std::random_device{}() & 0xFFFFFFFFu;
  const bool listing = only_listing(argc, argv);
  const std::unique_ptr<benchmark::BenchmarkReporter> file_reporter = make_file_reporter(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  if (!listing) {
    init_device();
    add_context(command_line);
  }
  if (settings().sweep != SweepMode::only) {
    std::vector<std::int64_t> ks(std::begin(kRefKs), std::end(kRefKs));
    if (settings().k > 0) ks = {settings().k};
    for (const std::int64_t k : ks) {
      register_cublas_gemm(k);  // first: the other benchmarks of this K divide by its time
      register_cublaslt_bias_then_gate(k);
      register_copy_at_size(k);
      register_glukit_variants(k);
    }
    register_ceilings();
  }
  if (settings().sweep != SweepMode::off) {
    register_sweep();
    register_gated();
    register_gated_backward();
    register_addmm_backward();
    register_fp8();
    register_moe();
  }

  ShortNameReporter display_reporter(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&display_reporter, file_reporter.get());
  benchmark::Shutdown();
  if (!listing) teardown();
  if (failure_count() > 0) {
    std::fprintf(stderr, "glukit_bench: %d benchmark(s) FAILED (see the messages above)\n",
                 failure_count());
    return 1;
  }
  return 0;
}
