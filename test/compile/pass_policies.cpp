// The positive case: every variant on every arch, and a user's derived policy
// with its own epilogue, pass the policy check and give a kernel type whose
// host-side validation is usable from plain C++.
#include <glukit/glukit.hpp>

namespace gp = glukit::policy;
namespace ga = glukit::arch;

template <class P>
constexpr bool kernel_ok() {
  using K = glukit::AddmmGlu<P>;
  return sizeof(K) > 0 && glukit::check_policy<P>();  // sizeof instantiates AddmmGlu<P>, whose checks run then
}

template <class Arch>
constexpr bool all_variants_ok() {
  return kernel_ok<gp::V1RegisterStaged<Arch>>() && kernel_ok<gp::V2DirectToLds<Arch>>() &&
         kernel_ok<gp::V3DeepPipelinePersistent<Arch>>() && kernel_ok<gp::V4FusedEpilogue<Arch>>();
}
static_assert(all_variants_ok<ga::sm90a>());
static_assert(all_variants_ok<ga::gfx942>());
static_assert(all_variants_ok<ga::gfx950>());

struct MySwiGlu : gp::V4FusedEpilogue<ga::sm90a> {
  using epilogue_op = glukit::epilogue::SwiGlu;
  static constexpr const char* name() { return "MySwiGlu"; }
};
static_assert(kernel_ok<MySwiGlu>());

/// The optional consumer modes of the warp-specialised TMA kernel.
struct MyPingpong : gp::WarpSpecializedTma<ga::sm90a> {
  static constexpr bool pingpong = true;
  static constexpr int tile_m = 64;
  static constexpr int y_buffers = 2;
  static constexpr int num_buffers = 5;
};
struct MyCluster : gp::WarpSpecializedTma<ga::sm90a> {
  static constexpr int cluster_m = 2;
};
static_assert(kernel_ok<MyPingpong>() && kernel_ok<MyCluster>());

glukit::Status validate(const glukit::AddmmGluArgs& args) {
  return glukit::AddmmGlu<MySwiGlu>::validate(args);
}
