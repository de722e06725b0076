// The routed rows of x on the device (ops/moe_gather.hpp, MoeGatherArgsT): block r copies
// x's row of routed row r's token (routing.row_choice[r] / top_k) into out's row r, eight
// elements a thread at a time, scaled by the choice's weight where weights are given; rows
// past expert_offsets[experts] (the choices routed to no expert) are not written. What the
// grouped kernels that read A with TMA multiply (grouped_gated_projection with x_routed), what
// a backward's weight gradient reads again, and the backward's dY rows. moe_gather_e4m3
// (MoeGatherE4m3ArgsT): block r copies the e4m3 codes of routed row r's token, 16 bytes a
// thread, and the token's scale (the e4m3 serving path's A rows). One source for both
// backends, like kernels/moe_combine.hpp; in a plain C++ translation unit (kernels/grouped.hpp
// includes it there too) a launch is a compile error naming the compiler it needs.
#pragma once
#include <cstdint>

#include "glukit/arch/tags.hpp"
#include "glukit/ops/moe_gather.hpp"
#include "glukit/ops/status.hpp"
#include "glukit/platform/config.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/platform/runtime.hpp"
#include "glukit/platform/thread_index.hpp"

namespace glukit {

#if defined(GLUKIT_BACKEND_CUDA) || defined(GLUKIT_BACKEND_HIP)
namespace detail {
inline constexpr int moe_gather_threads = 128;

template <Element T>
__global__ void __launch_bounds__(moe_gather_threads) moe_gather_kernel(MoeGatherArgsT<T> a) {
  const std::int64_t r = block_x();
  const std::int32_t choice = a.routing.row_choice[r];
  if (r >= a.routing.expert_offsets[a.routing.experts]) return;  // routed to no expert
  const std::int64_t token = choice / a.routing.top_k;
  const auto* src = reinterpret_cast<const EightElements<T>*>(a.x + token * a.ldx);
  auto* dst = reinterpret_cast<EightElements<T>*>(a.out + r * a.ldo);
  const float w = a.weights != nullptr ? a.weights[choice] : 1.f;
  for (std::int64_t c = thread_x(); 8 * c < a.hidden; c += moe_gather_threads) {
    EightElements<T> v = src[c];
    if (a.weights != nullptr) {
#pragma unroll
      for (int i = 0; i < 8; ++i) v.v[i] = from_float<T>(w * to_float(v.v[i]));
    }
    dst[c] = v;
  }
}

struct alignas(16) SixteenBytes {
  std::uint32_t v[4];
};

/// Block r: routed row r's codes, 16 bytes a thread at a time, and its token's scale.
template <Fp8Element F8>
__global__ void __launch_bounds__(moe_gather_threads) moe_gather_e4m3_kernel(MoeGatherE4m3ArgsT<F8> a) {
  const std::int64_t r = block_x();
  if (r >= a.routing.expert_offsets[a.routing.experts]) return;  // routed to no expert
  const std::int64_t token = a.routing.row_choice[r] / a.routing.top_k;
  if (thread_x() == 0) a.out_scale[r] = a.x_scale[token];
  const auto* src = reinterpret_cast<const SixteenBytes*>(a.x + token * a.ldx);
  auto* dst = reinterpret_cast<SixteenBytes*>(a.out + r * a.ldo);
  for (std::int64_t c = thread_x(); 16 * c < a.hidden; c += moe_gather_threads) dst[c] = src[c];
}

/// One block of moe_gather_threads per routed row of `args` (the gathers' launch).
template <class Args>
Status launch_per_row(void (*kernel)(Args), Args args, stream_t stream) {
  void* kernel_args[] = {&args};
  if (error_t e = launch_kernel(kernel, static_cast<unsigned>(args.routing.rows()), moe_gather_threads, kernel_args, 0,
                                stream);
      e != success)
    return {StatusCode::runtime_error, error_string(e)};
  return Status::success();
}
}  // namespace detail

/// out's routed rows = x's rows of their tokens (MoeGatherArgsT); validates, then launches on
/// `stream`; asynchronous.
template <Element T>
Status moe_gather(const MoeGatherArgsT<T>& a, stream_t stream = {}) {
  if (Status s = validate_moe_gather(a); !s) return s;
  if (a.routing.rows() == 0 || a.hidden == 0) return Status::success();
  return detail::launch_per_row(&detail::moe_gather_kernel<T>, a, stream);
}

/// out's routed rows and their scales = x's rows and scales of their tokens
/// (MoeGatherE4m3ArgsT); validates, then launches on `stream`; asynchronous.
template <Fp8Element F8>
Status moe_gather_e4m3(const MoeGatherE4m3ArgsT<F8>& a, stream_t stream = {}) {
  if (Status s = validate_moe_gather_e4m3(a); !s) return s;
  if (a.routing.rows() == 0) return Status::success();
  return detail::launch_per_row(&detail::moe_gather_e4m3_kernel<F8>, a, stream);
}
#else
template <Element T>
Status moe_gather(const MoeGatherArgsT<T>&, stream_t = {}) {
  static_assert(dependent_false<T>,
                "glukit::moe_gather: a device compiler's translation unit launches it (nvcc or hip-clang)");
  return Status::invalid("unreachable");
}
template <Fp8Element F8>
Status moe_gather_e4m3(const MoeGatherE4m3ArgsT<F8>&, stream_t = {}) {
  static_assert(dependent_false<F8>,
                "glukit::moe_gather_e4m3: a device compiler's translation unit launches it (nvcc or hip-clang)");
  return Status::invalid("unreachable");
}
#endif

}  // namespace glukit
