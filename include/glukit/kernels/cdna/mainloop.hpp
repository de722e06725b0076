// The K loop: operand fragments read from the LDS ring, MFMAs into fp32
// accumulators, and the two ways of feeding the ring.
//   SerialMainloop (V1): register-staged copy of k-block kb + 1 around the
//     MFMAs of k-block kb, one workgroup barrier per k-block.
//   PipelinedMainloop (V2+): direct-to-LDS ring of NumBuffers stages plus one
//     register stage, run as the two-group stage pipeline
//     (arch/cdna/stage_pipeline.hpp). Per k-block i, each wave runs
//       compute stage: MFMAs on the fragments of k-block i (priority low)
//       memory stage:  issue k-block i + NumBuffers into the buffer k-block i
//                      left, read the fragments of k-block i + 1, wait until
//                      k-block i + 2 has landed (vmcnt(WaitPlan::hot)) and the
//                      LDS reads are back (lgkmcnt(0))              (priority high)
//     The barrier after the memory stage of the group that reads a k-block
//     first comes after both groups' waits for it, and a buffer is overwritten
//     only after both groups' reads of it.
#pragma once
#include <cstdint>
#include <utility>

#include "glukit/arch/cdna/cdna.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/kernels/plans/cdna/plan.hpp"

namespace glukit::cdna {

namespace detail {
/// f(integral_constant<int, I>) for I = 0 .. N-1.
template <int N, class F>
GLUKIT_DEVICE inline void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}
/// f(integral_constant<int, v>) for the runtime v in [Lo, Hi]: turns a small
/// runtime count into a compile-time wait count.
template <int Lo, int Hi, class F>
GLUKIT_DEVICE inline void dispatch(int v, F&& f) {
  static_for<Hi - Lo + 1>([&](auto i) {
    if (v == Lo + decltype(i)::value) f(std::integral_constant<int, Lo + decltype(i)::value>{});
  });
}
}  // namespace detail

/// The operand fragments of one k-block for one wave: A (MFMA srcB) and B
/// (MFMA srcA) for every MFMA step and block; addresses from MainloopPlan. A,
/// and B given col_major, are k-major in LDS: one 8-byte read per k-quad.
/// Row-major B: gfx950's transposed read per k-quad, or gfx942's 2-byte reads.
template <class P>
struct Fragments {
  using Plan = MainloopPlan<P>;
  using Mma = arch::cdna::Mfma<typename P::arch, operand_of<P>>;  ///< T, or e4m3 pairs
  using Geo = typename Plan::Mma;
  using quad = typename Mma::quad;
  static constexpr int steps = Plan::k_steps;
  static constexpr int bm = Plan::Waves::blocks_m;
  static constexpr int bn = Plan::Waves::blocks_n;
  static_assert(Mma::k == Geo::k, "Fragments: MFMA wrapper and plan disagree on k");

  typename Mma::operand a[steps][bm];
  typename Mma::operand b[steps][bn];

  GLUKIT_DEVICE void read(std::uint32_t stage_base, int wave, int lane) {
    const std::uint32_t a_base = stage_base + Plan::a_member;
    const std::uint32_t b_base = stage_base + Plan::b_member;
    for (int s = 0; s < steps; ++s) {
      for (int mb = 0; mb < bm; ++mb)
        a[s][mb] = read_quads([&](int h) { return a_base + Plan::a_frag_offset(s, h, mb, wave, lane); });
      for (int nb = 0; nb < bn; ++nb) {
        if constexpr (Plan::b_k_major) {
          b[s][nb] = read_quads([&](int h) { return b_base + Plan::b_frag_offset(s, h, nb, wave, lane); });
        } else if constexpr (Plan::traits::transposed_lds_read && Geo::quads == 2) {
          b[s][nb] = arch::cdna::join(
              arch::cdna::lds_read_tr16_b64<quad>(b_base + Plan::b_frag_tr_offset(s, 0, nb, wave, lane)),
              arch::cdna::lds_read_tr16_b64<quad>(b_base + Plan::b_frag_tr_offset(s, 1, nb, wave, lane)));
        } else {
          typename Mma::operand v;
          for (int e = 0; e < Geo::operand_elems; ++e)
            v[e] = arch::cdna::lds_read_b16<typename Mma::element>(
                b_base + Plan::b_frag_elem_offset(s, e, nb, wave, lane));
          b[s][nb] = v;
        }
      }
    }
  }

  /// acc[mb][nb] += A block mb x B block nb over the k-block (operands swapped:
  /// srcA = B, srcB = A, so a lane's accumulators run along n).
  GLUKIT_DEVICE void mma(arch::cdna::float4_t (&acc)[bm][bn]) const {
    for (int s = 0; s < steps; ++s)
      for (int mb = 0; mb < bm; ++mb)
        for (int nb = 0; nb < bn; ++nb) acc[mb][nb] = Mma::mma(b[s][nb], a[s][mb], acc[mb][nb]);
  }

 private:
  /// One operand of a k-major tile: its k-quads (1 or 2) as 8-byte reads at address(h).
  template <class Address>
  GLUKIT_DEVICE static typename Mma::operand read_quads(Address&& address) {
    if constexpr (Geo::quads == 1) {
      return arch::cdna::lds_read_b64<quad>(address(0));
    } else {
      return arch::cdna::join(arch::cdna::lds_read_b64<quad>(address(0)),
                              arch::cdna::lds_read_b64<quad>(address(1)));
    }
  }
};

template <class P>
class SerialMainloop {
  using Plan = MainloopPlan<P>;
  using Frag = Fragments<P>;
  static constexpr int stages = P::num_buffers;

 public:
  static constexpr const char* name() { return "SerialMainloop"; }

  template <class Copier, class BeforeDrain>
  GLUKIT_DEVICE static void run(Copier& copier, arch::cdna::float4_t (&acc)[Frag::bm][Frag::bn],
                                std::uint32_t lds, int k_blocks, int wave, int lane,
                                BeforeDrain&& before_drain) {
    if (k_blocks > 0) {
      PipelineState<stages> stage{};
      copier.load(0);
      copier.store(lds + Plan::Buffers::stage_offset(stage.index));
      arch::cdna::workgroup_sync();
      for (int kb = 0; kb < k_blocks; ++kb) {
        const bool more = kb + 1 < k_blocks;
        if (more) copier.load(kb + 1);  // in flight during the MFMAs
        Frag f;
        f.read(lds + Plan::Buffers::stage_offset(stage.index), wave, lane);
        f.mma(acc);
        ++stage;
        if (more) copier.store(lds + Plan::Buffers::stage_offset(stage.index));
        arch::cdna::workgroup_sync();
      }
    }
    before_drain();
  }
};

template <class P>
class PipelinedMainloop {
  using Plan = MainloopPlan<P>;
  using Frag = Fragments<P>;
  using Waits = WaitPlan<P>;
  using Buffers = typename Plan::Buffers;
  static constexpr int stages = P::num_buffers;

 public:
  static constexpr const char* name() { return "PipelinedMainloop"; }

  /// before_drain runs after the last direct-to-LDS load is issued and before
  /// the drain MFMAs (V4: the Y prefetch, counted in WaitPlan::tail).
  template <class Copier, class BeforeDrain>
  GLUKIT_DEVICE static void run(Copier& copier, arch::cdna::float4_t (&acc)[Frag::bm][Frag::bn],
                                std::uint32_t lds, int k_blocks, int wave, int lane,
                                BeforeDrain&& before_drain) {
    using namespace arch::cdna;
    if (k_blocks <= 0) {
      before_drain();
      return;
    }
    const StagePipeline pipe(stage_pipeline<P>() &&
                             StagePipelinePlan<P::warps>::group_of(wave) == 1);
    const auto stage_at = [&](int index) { return lds + Buffers::stage_offset(index); };

    // Prologue: fill the ring, read k-block 0, make k-block 1 visible.
    const int issued = k_blocks < stages ? k_blocks : stages;
    detail::static_for<stages>([&](auto j) {
      if (decltype(j)::value < issued) copier.issue(decltype(j)::value, stage_at(decltype(j)::value));
    });
    detail::dispatch<1, stages>(issued, [](auto n) { wait_vmcnt<Waits::prologue(0, decltype(n)::value)>(); });
    barrier();
    Frag cur;
    cur.read(stage_at(0), wave, lane);
    detail::dispatch<2, stages>(issued, [](auto n) { wait_vmcnt<Waits::prologue(1, decltype(n)::value)>(); });
    wait_lgkmcnt<0>();
    barrier();

    pipe.enter();
    PipelineState<stages> write{};        // ring slot of the next direct-to-LDS stage
    PipelineState<stages> read = write.advanced(1);  // ring slot of the next fragment read
    int kb = 0;
    for (; kb < k_blocks - stages; ++kb) {  // hot loop: one k-block issued per iteration
      pipe.template stage<compute_priority>([&] { cur.mma(acc); });
      pipe.template stage<memory_priority>([&] {
        copier.issue(kb + stages, stage_at(write.index));
        ++write;
        Frag next;
        next.read(stage_at(read.index), wave, lane);
        ++read;
        wait_vmcnt<Waits::hot>();
        wait_lgkmcnt<0>();
        cur = next;
      });
    }
    before_drain();
    // Drain: the last min(k_blocks, stages) k-blocks, unrolled (left = k-blocks to go).
    const int left0 = k_blocks - kb;
    detail::static_for<stages>([&](auto j) {
      constexpr int left = stages - decltype(j)::value;
      if (left <= left0) {
        pipe.template stage<compute_priority>([&] { cur.mma(acc); });
        pipe.template stage<memory_priority>([&] {
          if constexpr (left > 1) {
            Frag next;
            next.read(stage_at(read.index), wave, lane);
            ++read;
            if constexpr (left >= 3) wait_vmcnt<Waits::tail(left)>();
            wait_lgkmcnt<0>();
            cur = next;
          }
        });
      }
    });
    pipe.leave();
  }
};

}  // namespace glukit::cdna
