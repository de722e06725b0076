// Architecture tags and arch_traits<Tag>: the one place that holds the numbers
// of a chip that plans and policies depend on (shared memory, wave size,
// chiplets, MMA shape). Intrinsics live in arch/<target>/, not here.
#pragma once
#include <cstdint>

namespace glukit {

enum class Backend { cuda, hip };

namespace arch {
struct sm90a {};   ///< NVIDIA Hopper (H100/H200), wgmma + TMA
struct gfx942 {};  ///< AMD CDNA3 (MI300)
struct gfx950 {};  ///< AMD CDNA4 (MI350/MI355)
}  // namespace arch

template <class T>
inline constexpr bool dependent_false = false;

template <class Arch>
struct arch_traits {
  static_assert(dependent_false<Arch>,
                "glukit::arch_traits: unknown architecture tag; use glukit::arch::sm90a, "
                "glukit::arch::gfx942 or glukit::arch::gfx950");
};

template <>
struct arch_traits<arch::sm90a> {
  static constexpr const char* name() { return "sm90a"; }
  static constexpr Backend backend = Backend::cuda;
  static constexpr int wave_size = 32;
  static constexpr int warpgroup_size = 128;           ///< threads that issue one wgmma
  static constexpr int smem_bytes_per_block = 232448;  ///< 227 KiB opt-in limit
  static constexpr int smem_bytes_per_sm = 233472;     ///< 228 KiB
  static constexpr int registers_per_sm = 65536;
  static constexpr int max_threads_per_block = 1024;
  static constexpr int compute_units_hint = 132;  ///< H100 SXM / H200
  static constexpr int chiplets = 1;
  static constexpr int mma_m = 64, mma_k = 16;   ///< wgmma m64nNk16
  static constexpr int mma_n_max = 256, mma_n_step = 8;
  static constexpr int cc_major = 9, cc_minor = 0;
  static constexpr bool fp8_fnuz = false;  ///< wgmma's e4m3 is OCP E4M3
};

template <>
struct arch_traits<arch::gfx942> {
  static constexpr const char* name() { return "gfx942"; }
  static constexpr Backend backend = Backend::hip;
  static constexpr int wave_size = 64;
  static constexpr int smem_bytes_per_block = 64 * 1024;  ///< LDS per workgroup
  static constexpr int smem_bytes_per_sm = 64 * 1024;
  static constexpr int registers_per_sm = 4 * 512 * 64;  ///< 4 SIMDs x 512 VGPRs x 64 lanes
  static constexpr int max_threads_per_block = 1024;
  static constexpr int compute_units_hint = 304;  ///< MI300X
  static constexpr int chiplets = 8;              ///< XCDs, workgroups dispatched round-robin
  static constexpr int mma_m = 16, mma_n = 16, mma_k = 16;  ///< v_mfma_f32_16x16x16_f16
  static constexpr int direct_to_lds_max_bytes = 4;
  static constexpr int lds_banks = 32;                ///< 4-byte LDS banks
  static constexpr bool transposed_lds_read = false;  ///< no ds_read_b64_tr_b16
  static constexpr bool fp8_fnuz = true;               ///< the fp8 MFMAs read E4M3FNUZ
};

template <>
struct arch_traits<arch::gfx950> {
  static constexpr const char* name() { return "gfx950"; }
  static constexpr Backend backend = Backend::hip;
  static constexpr int wave_size = 64;
  static constexpr int smem_bytes_per_block = 160 * 1024;
  static constexpr int smem_bytes_per_sm = 160 * 1024;
  static constexpr int registers_per_sm = 4 * 512 * 64;
  static constexpr int max_threads_per_block = 1024;
  static constexpr int compute_units_hint = 256;  ///< MI350X / MI355X
  static constexpr int chiplets = 8;
  static constexpr int mma_m = 16, mma_n = 16, mma_k = 32;  ///< v_mfma_f32_16x16x32_f16
  static constexpr int direct_to_lds_max_bytes = 16;
  static constexpr int lds_banks = 64;               ///< 4-byte LDS banks
  static constexpr bool transposed_lds_read = true;  ///< ds_read_b64_tr_b16
  static constexpr bool fp8_fnuz = false;            ///< the fp8 MFMAs read OCP E4M3
};

/// True when an arch tag names a known chip.
template <class Arch>
concept ArchTag = requires {
  { arch_traits<Arch>::name() };
  arch_traits<Arch>::backend;
};

}  // namespace glukit
