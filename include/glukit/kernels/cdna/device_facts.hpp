// The HIP runtime's current device (detail::CurrentDevice), and which CDNA chip a device
// is and how many CUs it has, queried once per device and cached: the launchers'
// device check (kernels/cdna/launcher.hpp) and the defaults' choice of kernel
// (on_current_chip, kernels/cdna/defaults.hpp). HIP translation units only.
#pragma once
#include <atomic>
#include <concepts>
#include <cstring>

#include "glukit/arch/tags.hpp"
#include "glukit/kernels/op_kernel.hpp"
#include "glukit/ops/addmm_glu.hpp"
#include "glukit/platform/runtime.hpp"

namespace glukit::detail {

/// The HIP runtime's current device.
template <>
struct CurrentDevice<Backend::hip> {
  static Status get(int* device) {
    if (get_device(device) != success) return {StatusCode::runtime_error, "hipGetDevice failed"};
    return Status::success();
  }
};

}  // namespace glukit::detail

namespace glukit::cdna {

/// The CDNA chips glukit has kernels for, as a device reports itself.
enum class Chip : int {
  unknown = 0,  ///< not queried yet (never returned)
  gfx942 = 1,
  gfx950 = 2,
  other = 3,
};

template <class Arch>
inline constexpr Chip chip_of = std::same_as<Arch, arch::gfx942>   ? Chip::gfx942
                                : std::same_as<Arch, arch::gfx950> ? Chip::gfx950
                                                                   : Chip::other;

/// Cached per-device facts: which chip the device's gcnArchName names (its
/// prefix up to ':' or the end) and its CU count. Unknown devices are queried once.
struct DeviceFacts {
  static constexpr int max_devices = 64;
  struct Facts {
    Chip chip;
    int compute_units;
  };

  static Status query(int device, Facts* facts) {
    static std::atomic<int> cache[max_devices] = {};  // (CUs << 2) | chip; 0 = not queried
    if (device < 0 || device >= max_devices) return {StatusCode::unsupported_device, "device: id out of range"};
    int packed = cache[device].load(std::memory_order_relaxed);
    if (packed == 0) {
      hipDeviceProp_t prop;
      if (hipGetDeviceProperties(&prop, device) != hipSuccess)
        return {StatusCode::runtime_error, "hipGetDeviceProperties failed"};
      const Chip chip = names(prop.gcnArchName, arch_traits<arch::gfx942>::name())   ? Chip::gfx942
                        : names(prop.gcnArchName, arch_traits<arch::gfx950>::name()) ? Chip::gfx950
                                                                                     : Chip::other;
      packed = (prop.multiProcessorCount << 2) | static_cast<int>(chip);
      cache[device].store(packed, std::memory_order_relaxed);
    }
    *facts = {static_cast<Chip>(packed & 3), packed >> 2};
    return Status::success();
  }

  /// The CU count of `device` when it is Arch's chip; unsupported_device otherwise.
  template <class Arch>
  static Status query(int device, int* compute_units) {
    Facts f{};
    if (Status s = query(device, &f); !s) return s;
    if (f.chip != chip_of<Arch>)
      return {StatusCode::unsupported_device, "device: the current GPU is not the policy's chip"};
    *compute_units = f.compute_units;
    return Status::success();
  }

 private:
  /// gcnArchName ("gfx942:sramecc+:xnack-") names `chip`.
  static bool names(const char* gcn_arch_name, const char* chip) {
    const std::size_t n = std::strlen(chip);
    return std::strncmp(gcn_arch_name, chip, n) == 0 && (gcn_arch_name[n] == '\0' || gcn_arch_name[n] == ':');
  }
};

/// run(arch::gfx942{}, device) or run(arch::gfx950{}, device) by the chip of the current
/// device, `device`: the defaults' dispatch (kernels/cdna/defaults.hpp) and their one device
/// query; `unsupported` is the message for any other device.
template <class Run>
Status on_current_chip(const char* unsupported, Run&& run) {
  int device = 0;
  if (Status s = detail::CurrentDevice<Backend::hip>::get(&device); !s) return s;
  DeviceFacts::Facts facts{};
  if (Status s = DeviceFacts::query(device, &facts); !s) return s;
  switch (facts.chip) {
    case Chip::gfx942:
      return run(arch::gfx942{}, device);
    case Chip::gfx950:
      return run(arch::gfx950{}, device);
    default:
      return {StatusCode::unsupported_device, unsupported};
  }
}

}  // namespace glukit::cdna
