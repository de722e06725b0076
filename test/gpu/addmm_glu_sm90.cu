// GPU tests (label gpu): every sm90a variant against the fp64 host reference on
// fresh random inputs, at the reference shape and on ragged shapes, with the
// output poisoned before each run; plus argument errors, determinism, and
// concurrent launches.
#include <thread>

#include "gpu_test_util.hpp"

using namespace glukit;
using namespace glukit::test;

TEMPLATE_LIST_TEST_CASE("reference shape M=1024 N=21568", "[gpu][reference]", Sm90Variants) {
  const std::int64_t k = GENERATE(256, 512, 1024);
  check_problem<TestType>({1024, 21568, k});
}

TEMPLATE_LIST_TEST_CASE("ragged shapes", "[gpu][ragged][sanitize]", Sm90Variants) {
  // M, N not multiples of any tile; leading dimensions past the row.
  check_problem<TestType>({1000, 21555, 200, 200, 21560, 21560, 21560});
  check_problem<TestType>({1, 8, 8});
  check_problem<TestType>({129, 130, 72});
  check_problem<TestType>({300, 1000, 136, 200, 1016, 1024, 1032});
  check_problem<TestType>({77, 333, 8});
  check_problem<TestType>({257, 321, 1000});
}

TEMPLATE_LIST_TEST_CASE("bias null", "[gpu][ragged]", Sm90Variants) {
  Shape s{256, 640, 64};
  s.bias = false;
  check_problem<TestType>(s);
  Shape r{100, 250, 40, 48, 256, 264, 272};
  r.bias = false;
  check_problem<TestType>(r);
}

TEMPLATE_LIST_TEST_CASE("k = 0 gives out = gate(bias, y)", "[gpu]", Sm90Variants) {
  check_problem<TestType>({64, 200, 0});
  Shape s{33, 17, 0};
  s.bias = false;
  check_problem<TestType>(s);
}

TEMPLATE_LIST_TEST_CASE("m = 0 or n = 0 is a no-op", "[gpu]", Sm90Variants) {
  TestProblem pr({16, 16, 16}, fresh_seed());
  AddmmGluArgs args = pr.device_args();
  args.m = 0;
  REQUIRE(addmm_glu<TestType>(args).ok());
  args.m = 16;
  args.n = 0;
  REQUIRE(addmm_glu<TestType>(args).ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const auto out = pr.dout.download();
  CHECK(count_unwritten(out, {16, 16, 16, 16, 16, 16, 16}) == 16 * 16);  // untouched
  GLUKIT_CHECK_CUDA(cudaGetLastError());
}

TEMPLATE_LIST_TEST_CASE("bad arguments are refused and nothing is written", "[gpu]", Sm90Variants) {
  TestProblem pr({64, 64, 64}, fresh_seed());
  const AddmmGluArgs good = pr.device_args();
  std::vector<AddmmGluArgs> bad(6, good);
  bad[0].a = nullptr;
  bad[1].lda = 8;
  bad[2].ldo = 60;
  bad[3].k = 12;
  bad[4].y = good.y + 1;  // misaligned
  bad[5].m = -1;
  for (const auto& b : bad) {
    const Status st = addmm_glu<TestType>(b);
    INFO(st.message());
    CHECK_FALSE(st.ok());
    CHECK(st.code() == StatusCode::invalid_argument);
  }
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  CHECK(count_unwritten(pr.dout.download(), pr.s) == 64 * 64);
  GLUKIT_CHECK_CUDA(cudaGetLastError());
}

TEMPLATE_LIST_TEST_CASE("bitwise deterministic across runs", "[gpu][determinism]", Sm90Variants) {
  TestProblem pr({1000, 4000, 512}, fresh_seed());
  REQUIRE(addmm_glu<TestType>(pr.device_args()).ok());
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  const auto first = pr.dout.download();
  for (int run = 0; run < 3; ++run) {
    pr.dout.poison();
    REQUIRE(addmm_glu<TestType>(pr.device_args()).ok());
    GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
    const auto again = pr.dout.download();
    REQUIRE(std::memcmp(first.data(), again.data(), first.size() * sizeof(half_t)) == 0);
  }
  GLUKIT_CHECK_CUDA(cudaGetLastError());
}

TEMPLATE_LIST_TEST_CASE("concurrent streams and host threads", "[gpu][concurrency]", Sm90Variants) {
  constexpr int lanes = 4;
  std::vector<std::unique_ptr<TestProblem>> problems;
  for (int i = 0; i < lanes; ++i)
    problems.push_back(std::make_unique<TestProblem>(Shape{300 + 17 * i, 2000 + 8 * i, 128}, fresh_seed()));
  std::vector<cudaStream_t> streams(lanes);
  for (auto& s : streams) GLUKIT_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<Status> status(lanes);
  std::vector<std::thread> threads;
  for (int i = 0; i < lanes; ++i)
    threads.emplace_back([&, i] {
      cudaSetDevice(0);
      for (int rep = 0; rep < 5; ++rep) status[i] = addmm_glu<TestType>(problems[i]->device_args(), streams[i]);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < lanes; ++i) {
    INFO("lane " << i << " seed=" << problems[i]->seed << ": " << status[i].message());
    REQUIRE(status[i].ok());
    GLUKIT_CHECK_CUDA(cudaStreamSynchronize(streams[i]));
    const auto out = problems[i]->dout.download();
    CHECK(count_unwritten(out, problems[i]->s) == 0);
    check_output_matches(out, problems[i]->s, reference_of(problems[i]->host_args()));
  }
  for (auto& s : streams) GLUKIT_CHECK_CUDA(cudaStreamDestroy(s));
  GLUKIT_CHECK_CUDA(cudaGetLastError());
}

TEMPLATE_LIST_TEST_CASE("other epilogue operations", "[gpu][epilogue]", Sm90Variants) {
  check_problem<policy::WithEpilogue<TestType, epilogue::SwiGlu>, epilogue::SwiGlu>({200, 1000, 96});
  check_problem<policy::WithEpilogue<TestType, epilogue::BiasOnly>, epilogue::BiasOnly>({200, 1000, 96});
}

/// Policies a user derives: the warp-specialised kernel (producer warpgroup +
/// mbarrier ring + staged Y) with cp.async, and another tile width.
struct WarpSpecializedV3 : policy::V3DeepPipelinePersistent<arch::sm90a> {
  static constexpr bool warp_specialized = true;
  static constexpr int warps = 12;
  static constexpr int tile_n = 256;
  static constexpr int min_blocks_per_cu = 1;
  static constexpr const char* name() { return "WarpSpecializedV3"; }
};
struct WarpSpecializedV4 : policy::V4FusedEpilogue<arch::sm90a> {
  static constexpr bool bias_in_accumulator = false;
  static constexpr bool warp_specialized = true;
  static constexpr int warps = 12;
  static constexpr int tile_n = 192;
  static constexpr int min_blocks_per_cu = 1;
  static constexpr const char* name() { return "WarpSpecializedV4"; }
};
struct WarpSpecializedV4BiasInAccumulator : WarpSpecializedV4 {
  static constexpr bool bias_in_accumulator = true;
  static constexpr const char* name() { return "WarpSpecializedV4BiasInAccumulator"; }
};
/// Four buffers: the producer's wait must still be wait_group<1> (the stage it
/// signals has landed), not the multistage kernel's groups_in_flight.
struct WarpSpecializedV3FourBuffers : WarpSpecializedV3 {
  static constexpr int tile_n = 192;
  static constexpr int num_buffers = 4;
  static constexpr const char* name() { return "WarpSpecializedV3FourBuffers"; }
};
/// Two Y buffers with the cp.async producer (Y buffer index and parity per tile).
struct WarpSpecializedV4TwoY : WarpSpecializedV4 {
  static constexpr int num_buffers = 3;
  static constexpr int y_buffers = 2;
  static constexpr const char* name() { return "WarpSpecializedV4TwoY"; }
};
/// Ping-pong consumers: each warpgroup owns whole 64-row tiles, in turns.
struct WarpSpecializedTmaPingpong : policy::WarpSpecializedTma<arch::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int num_buffers = 4;
  static constexpr int y_buffers = 2;  // one per consumer warpgroup
  static constexpr int group_size_m = 16;
  static constexpr const char* name() { return "WarpSpecializedTmaPingpong"; }
};
using UserPolicies = std::tuple<WarpSpecializedV3, WarpSpecializedV4, WarpSpecializedV4BiasInAccumulator,
                                WarpSpecializedV3FourBuffers, WarpSpecializedV4TwoY, WarpSpecializedTmaPingpong>;

TEMPLATE_LIST_TEST_CASE("user-derived policies", "[gpu][user][sanitize]", UserPolicies) {
  check_problem<TestType>({1000, 21555, 200, 200, 21560, 21560, 21560});
  check_problem<TestType>({1, 8, 8});
  check_problem<TestType>({300, 1000, 136, 200, 1016, 1024, 1032});
  Shape s{256, 640, 64};
  s.bias = false;
  check_problem<TestType>(s);
  check_problem<TestType>({64, 200, 0});
}

TEMPLATE_LIST_TEST_CASE("user-derived policies at the reference shape", "[gpu][user]", UserPolicies) {
  const std::int64_t k = GENERATE(256, 1024);
  check_problem<TestType>({1024, 21568, k});
}

/// Clusters of two blocks along M sharing each B panel (TMA multicast).
struct WarpSpecializedTmaCluster : policy::WarpSpecializedTma<arch::sm90a> {
  static constexpr int cluster_m = 2;
  static constexpr const char* name() { return "WarpSpecializedTmaCluster"; }
};
using ClusterPolicies = std::tuple<WarpSpecializedTmaCluster>;

TEMPLATE_LIST_TEST_CASE("clusters of two blocks sharing B", "[gpu][cluster]", ClusterPolicies) {
  // Odd numbers of 128-row tiles (m = 300, m = 1: the second block of the last cluster
  // has only rows past m), ragged edges, k = 0, and the reference shape.
  check_problem<TestType>({1000, 21555, 200, 200, 21560, 21560, 21560});
  check_problem<TestType>({300, 1000, 136, 200, 1016, 1024, 1032});
  check_problem<TestType>({1, 8, 8});
  Shape s{384, 640, 64};
  s.bias = false;
  check_problem<TestType>(s);
  check_problem<TestType>({64, 200, 0});
  check_problem<TestType>({1024, 21568, 512});
}

using StressPolicies = std::tuple<policy::WarpSpecializedTma<arch::sm90a>, WarpSpecializedTmaPingpong>;

TEMPLATE_LIST_TEST_CASE("back-to-back launches keep the mbarrier phases right", "[gpu][stress]", StressPolicies) {
  // Tile counts per block and k-block counts that are not multiples of the ring's
  // stage count, launched many times in a row on one stream; every launch's output
  // is checked after the last one (each problem has its own output buffer).
  using P = TestType;
  const std::vector<Shape> shapes = {{1024, 21568, 256}, {333, 1000, 200}, {1000, 5000, 72}, {128, 192, 64}};
  std::vector<std::unique_ptr<TestProblem>> problems;
  for (const Shape& s : shapes) problems.push_back(std::make_unique<TestProblem>(s, fresh_seed()));
  GLUKIT_CHECK_CUDA(cudaGetLastError());
  for (int rep = 0; rep < 50; ++rep)
    for (auto& pr : problems) {
      const Status st = addmm_glu<P>(pr->device_args());
      INFO(st.message());
      REQUIRE(st.ok());
    }
  GLUKIT_CHECK_CUDA(cudaDeviceSynchronize());
  for (auto& pr : problems) {
    INFO("m=" << pr->s.m << " n=" << pr->s.n << " k=" << pr->s.k << " seed=" << pr->seed);
    const auto out = pr->dout.download();
    CHECK(count_unwritten(out, pr->s) == 0);
    check_output_matches(out, pr->s, reference_of(pr->host_args()));
  }
}
