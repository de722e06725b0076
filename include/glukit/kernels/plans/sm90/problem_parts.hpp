// What a bound policy's problem (ops/) asks of the sm90a kernel, in the kernel's own
// terms: the one place the backend's plans read a problem. The main loop sees only the
// B-row map (b_rows.hpp); the epilogue sees the composition (epilogue/compose.hpp: what
// it reads, stages and writes), the gate layout of its gate / up operands, whether the
// GEMM has a bias and whether the accumulators are dequantised before it.
#pragma once
#include <type_traits>

#include "glukit/epilogue/compose.hpp"
#include "glukit/kernels/policy.hpp"
#include "glukit/kernels/plans/sm90/b_rows.hpp"

namespace glukit::sm90 {

template <class P>
struct ProblemParts {
  using problem = problem_of<P>;
  using C = composition_of<P>;
  /// The gate / up order of W's rows (the B-row map's pairs) or of the saved
  /// pre-activations' columns (the gated backward's inputs); stacked where neither.
  static constexpr GateLayout gate_layout = [] {
    if constexpr (requires { problem::gate_layout; }) return problem::gate_layout;
    else return GateLayout::stacked;
  }();
  /// The B-row map: gate and up in adjacent columns of a k x 2n B (AlternatingRows), in
  /// runs of 64 rows of W (PairedRows), or the GEMM's own columns.
  static constexpr bool alternating = [] {
    if constexpr (requires { problem::alternating; }) return bool(problem::alternating);
    else return false;
  }();
  using Rows = std::conditional_t<alternating, AlternatingRows<P::tile_n>,
                                  std::conditional_t<problem::gated, PairedRows<P::tile_n, gate_layout>,
                                                     PlainRows<P::tile_n>>>;
  /// Tile-shaped inputs the epilogue reads at the output element (staged beside the
  /// accumulators by the warp-specialised producer).
  static constexpr int staged_inputs = epilogue::Arity<C>::tiles;
  /// Does the GEMM have a bias? (The gated backward's dH has none.)
  static constexpr bool biased = !problem::gated_backward;
  /// A scaled (fp8) problem: the accumulators are dequantised before the bias is added.
  static constexpr bool dequantised = problem::scaled;
  /// May the bias be the accumulators' initial value? One contiguous run (the row map),
  /// added before any dequantisation.
  static constexpr bool bias_may_initialise = Rows::bias_run && !dequantised;
};

}  // namespace glukit::sm90
