// Host launcher of the sm90a kernels: the CUDA runtime's current device
// (detail::CurrentDevice), argument rules, device checks (including that
// the kernel image is sm_90a code: plan_image.hpp), one-time
// per-device set-up (shared-memory opt-in, SM count, occupancy), the tile
// schedule from the same plan the kernel walks, and the launch.
#pragma once
#include <atomic>

#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/kernels/column_sums.hpp"
#include "glukit/kernels/op_kernel.hpp"
#include "glukit/kernels/sm90/entry.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::sm90 {

/// Per-device facts a launch needs, computed once per (policy, device). Racing
/// first calls compute the same values; the atomics make that benign.
template <class P>
struct DeviceSetup {
  static constexpr int max_devices = 64;
  struct Entry {
    std::atomic<int> workers{0};  ///< 0: not set up; > 0: SMs x resident blocks per SM
  };
  static Entry& entry(int device) {
    static Entry entries[max_devices];
    return entries[device];
  }

  /// Raises the dynamic shared-memory limit of k, the kernel exactly as the caller will use
  /// it. Each translation unit that launches the kernel holds its own copy of it and of its
  /// host stub (whole-program compilation), and each inline function of this header may be
  /// linked from a different unit: `&addmm_glu_kernel<P>` written in two functions can name
  /// two kernels. So the caller forms the pointer once and hands it to every call that sets,
  /// queries or launches (a query on an unraised copy reads "cannot be resident"; a launch,
  /// "invalid argument": both seen in the GPU tests). Done before every launch, not cached:
  /// the attribute belongs to the copy.
  template <class Kernel>
  static Status allow_smem(Kernel* k) {
    if (set_max_dynamic_smem(k, KernelPlan<P>::smem_bytes) != success)
      return {StatusCode::runtime_error, "device: cannot raise the kernel's dynamic shared-memory limit"};
    return Status::success();
  }

  /// Returns the resident-block count (persistent grid size), or a non-ok status.
  static Status get(int device, int* workers) {
    if (device < 0 || device >= max_devices) return {StatusCode::unsupported_device, "device: ordinal >= 64"};
    Entry& e = entry(device);
    if (int w = e.workers.load(std::memory_order_acquire); w > 0) {
      *workers = w;
      return Status::success();
    }
    int major = 0, minor = 0, sms = 0, smem = 0;
    if (device_cc(device, &major, &minor) != success || device_sm_count(device, &sms) != success ||
        device_max_smem_per_block(device, &smem) != success)
      return {StatusCode::runtime_error, "device: cannot read the device's attributes"};
    if (major != 9 || minor != 0)
      return {StatusCode::unsupported_device,
              "device: this policy is built for sm90a; the current device is not compute capability 9.0"};
    // The image this translation unit holds for the device must be the sm_90a kernel: an
    // sm_90 (or JIT-compiled) one is a stub that traps. Checked before anything is set or
    // launched. A failed query (no image for the device) is the runtime's last error too.
    auto* k = &addmm_glu_kernel<P>;  // one pointer for the image check, the limit and the query
    KernelImage image;
    image.found = kernel_static_smem(k, &image.static_smem_bytes) == success;
    if (Status s = check_kernel_image(image); !s.ok()) return s;
    if (smem < KernelPlan<P>::smem_bytes)
      return {StatusCode::unsupported_device,
              "device: not enough shared memory per block for this policy's ring"};
    if (Status s = allow_smem(k); !s.ok()) return s;  // the occupancy query needs it
    int blocks = 0;
    if (occupancy_blocks_per_sm(&blocks, k, MainloopPlan<P>::threads, KernelPlan<P>::smem_bytes) != success ||
        blocks < 1)
      return {StatusCode::unsupported_device, "device: the kernel cannot be resident (registers or shared memory)"};
    int w = sms * blocks;  // workers: resident blocks, or resident clusters
    if constexpr (MainloopPlan<P>::cluster_m > 1) {
      if (occupancy_clusters(&w, k, MainloopPlan<P>::threads, KernelPlan<P>::smem_bytes,
                             MainloopPlan<P>::cluster_m) != success ||
          w < 1)
        return {StatusCode::unsupported_device, "device: no cluster of this policy's blocks can be resident"};
    }
    e.workers.store(w, std::memory_order_release);
    *workers = w;
    return Status::success();
  }
};

template <class P>
Params<P> make_params(const Args<P>& args, int workers) {
  return {{},
          args,
          MainloopPlan<P>::schedule(args.m, args.n, args.k, workers),
          static_cast<int>(ceil_div(args.k, P::tile_k))};
}

/// How wide the matrix operand in slot S is as composition C stages it (epilogue::slot_of),
/// in output widths: 0 (not staged), 1 (its own columns: n) or 2 (the gate's and up
/// projection's columns in W's row order: 2n).
template <class C, epilogue::Slot S>
constexpr int staged_width() {
  using In = typename C::inputs;
  int w = 0;
  for (int t = 0; t < epilogue::Arity<C>::tiles; ++t)
    if (epilogue::slot_of(In::operand[t]) == S) w = In::columns[t] == epilogue::Columns::own && w < 2 ? 1 : 2;
  return w;
}

/// Tensor maps for the TMA producer: A, B (its rows as the B-row map reads them), the
/// staged inputs as 128-byte-swizzled 64-column boxes of a_rows rows (B stored n x k: boxes
/// of 64 rows of n by 64 k, read like A), the bias as one unswizzled row. Operands a launch
/// does not touch stay unencoded.
template <class P>
Status encode_tensor_maps(const Args<P>& a, const OperandSlotsT<element_of<P>>& x, TensorMaps* maps) {
  using namespace arch::hopper;
  using T = element_of<P>;
  using Plan = KernelPlan<P>;
  using C = composition_of<P>;
  bool ok = true;
  if (a.k > 0) {
    ok &= encode_tensor_map<T>(&maps->a, a.a, a.m, a.k, a.lda, Plan::a_rows, 64, true);
    if constexpr (Plan::b_k_major)
      ok &= encode_tensor_map<T>(&maps->b, a.b, Plan::Rows::b_rows(a.n), a.k, a.ldb, Plan::b_box_rows, 64, true);
    else
      ok &= encode_tensor_map<T>(&maps->b, a.b, a.k, Plan::Rows::b_rows(a.n), a.ldb, P::tile_k, 64, true);
  }
  constexpr int y_width = staged_width<C, epilogue::Slot::y>();
  constexpr int in2_width = staged_width<C, epilogue::Slot::in2>();
  if constexpr (y_width > 0)
    ok &= encode_tensor_map<T>(&maps->y, a.y, a.m, y_width * a.n, a.ldy,
                               Plan::a_rows, 64, true);
  if constexpr (in2_width > 0)
    ok &= encode_tensor_map<T>(&maps->in2, x.in2, a.m, in2_width * a.n, x.ld_in2,
                               Plan::a_rows, 64, true);
  if (a.bias != nullptr && Plan::Rows::bias_run)  // else copied run by run by the Y producer
    ok &= encode_tensor_map<T>(&maps->bias, a.bias, 1, Plan::Rows::b_rows(a.n), (Plan::Rows::b_rows(a.n) + 7) / 8 * 8,
                               1, P::tile_n, false);
  return ok ? Status::success()
            : Status{StatusCode::runtime_error, "tensor maps: cuTensorMapEncodeTiled failed or is unavailable"};
}

}  // namespace glukit::sm90

namespace glukit::detail {

/// The CUDA runtime's current device.
template <>
struct CurrentDevice<Backend::cuda> {
  static Status get(int* device) {
    if (get_device(device) != success) return {StatusCode::runtime_error, "device: no current CUDA device"};
    return Status::success();
  }
};

/// P: a policy bound to a problem (BackendLauncher's contract, kernels/op_kernel.hpp).
template <class P>
struct BackendLauncher<P, Backend::cuda> {
  /// The pre-activations are written by the warp-specialised TMA kernels whose tiles store
  /// all their rows; every other problem runs on every policy check_policy accepts.
  static constexpr bool runs = !problem_of<P>::store_preact ||
                               (sm90::MainloopPlan<P>::tma && sm90::MainloopPlan<P>::stage_y &&
                                sm90::MainloopPlan<P>::a_rows == P::tile_m);
  static constexpr const char* refusal =
      "p: this policy cannot write the pre-activations (an sm90a warp-specialised TMA policy with a_rows = tile_m can)";

  /// No rules beyond the kernel types' validate before the device checks: the grid and TMA
  /// coordinate limits below are checked after them.
  static Status check(const sm90::Args<P>&, const OperandSlotsT<element_of<P>>& = {}) { return Status::success(); }

  /// extra: the operands beyond addmm_glu's, in the composition's slots (kernels/operand_slots.hpp).
  static Status run(const sm90::Args<P>& args, stream_t stream, int device,
                    const OperandSlotsT<element_of<P>>& extra = {}) {
    int workers = 0;
    if (Status s = sm90::DeviceSetup<P>::get(device, &workers); !s.ok()) return s;  // device checks first
    auto* kernel = &sm90::addmm_glu_kernel<P>;  // the copy this function launches (allow_smem)
    if (Status s = sm90::DeviceSetup<P>::allow_smem(kernel); !s.ok()) return s;
    sm90::Params<P> params = sm90::make_params<P>(args, workers);
    params.extra = extra;
    constexpr std::int64_t cm = sm90::MainloopPlan<P>::cluster_m;  // blocks per worker
    const std::int64_t blocks = params.schedule.workers * cm;
    constexpr std::int64_t max_grid = (std::int64_t{1} << 31) - 1;
    if (blocks > max_grid)
      return Status::invalid("m, n: more tiles than one grid can launch (2^31 - 1); use a persistent policy");
    if constexpr (sm90::MainloopPlan<P>::tma) {
      // TMA box coordinates are 32-bit: the last box of a dimension must start below 2^31.
      constexpr std::int64_t max_coord = (std::int64_t{1} << 31) - 256;
      using C = composition_of<P>;
      constexpr bool wide = sm90::MainloopPlan<P>::Rows::paired || sm90::staged_width<C, epilogue::Slot::y>() == 2 ||
                            sm90::staged_width<C, epilogue::Slot::in2>() == 2;  // 2n columns or rows
      constexpr int n_per_col = wide ? 2 : 1;
      if (args.m > max_coord || n_per_col * args.n > max_coord || args.k > max_coord)
        return Status::invalid("m, n, k: must be < 2^31 - 256 for the TMA policy's box coordinates");
      if (Status s = sm90::encode_tensor_maps<P>(args, extra, &params.maps); !s.ok()) return s;
    }
    // cudaLaunchKernel reports this launch's own error; the thread's last-error state
    // (which may hold an earlier, unrelated failure of the caller's) is left alone.
    void* kernel_args[] = {&params};
    if (error_t e = launch_kernel(kernel, static_cast<unsigned>(blocks),
                                  sm90::MainloopPlan<P>::threads, kernel_args, sm90::KernelPlan<P>::smem_bytes,
                                  stream, static_cast<unsigned>(cm));
        e != success)
      return {StatusCode::runtime_error, error_string(e)};
    // A column_sum composition's vector: its partials added in a fixed order.
    if constexpr (epilogue::Arity<composition_of<P>>::column_sum >= 0)
      if (extra.vectors.column_sums != nullptr)
        return sum_column_partials(extra.vectors.column_partials, args.m, args.n, extra.vectors.column_sums, stream);
    return Status::success();
  }
};

}  // namespace glukit::detail
