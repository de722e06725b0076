// What every launcher (launchers/<op>.cuh) shares: launch.h's Call read as glukit's argument
// types, glukit::Status as launch.h's, and the registration of a launcher for an element type
// (and, for a gated op, for each activation of glukit's list). A launcher fills its op's
// argument struct (include/glukit/ops/<op>.hpp) and calls glukit's launcher, which checks the
// op's rules first (its validate function) and answers with their Status: the binding adds
// no rule of its own. setup.py compiles each launchers/<op>.cuh once per element type
// (build/csrc/<op>_<tag>.cu), whose static initialiser calls its add_launchers<T>().
#pragma once
#include <glukit/glukit.hpp>

#include <tuple>
#include <type_traits>

#include "launch.h"

namespace glukit_torch {

/// Operand i as a T array (null where absent).
template <class T>
T* ptr(const Call& c, int i) {
  return static_cast<T*>(c.operands[i].data);
}
/// Operand i's row stride, in elements.
inline std::int64_t ld(const Call& c, int i) { return c.operands[i].ld; }
/// Operand i, a dequantisation scale: one value, or one per row.
inline glukit::ScaleKind scale_kind(const Call& c, int i) {
  return c.operands[i].numel > 1 ? glukit::ScaleKind::per_row : glukit::ScaleKind::tensor;
}
inline glukit::Layout b_layout(const Call& c) {
  return c.b_col_major ? glukit::Layout::col_major : glukit::Layout::row_major;
}
inline glukit::GateLayout w_layout(const Call& c) {
  return c.w_interleaved ? glukit::GateLayout::interleaved : glukit::GateLayout::stacked;
}
inline LaunchStatus plain(const glukit::Status& s) { return {static_cast<int>(s.code()), s.message()}; }
/// The MoE launchers' routing (glukit::moe_route's arguments): the expert ids (int64, tokens x
/// top_k) in operand `ids`, the outputs expert_offsets (E + 1), row_choice, choice_row,
/// invalid_choices and the workspace in operands offsets .. offsets + 4; tokens = c.m.
inline glukit::MoeRouteArgsT<std::int64_t> route_args(const Call& c, int ids, int offsets) {
  const std::int64_t tokens = c.m;
  return {.top_k_index = ptr<const std::int64_t>(c, ids),
          .tokens = tokens,
          .top_k = tokens > 0 ? static_cast<int>(c.operands[ids].numel / tokens) : 1,
          .experts = static_cast<int>(c.operands[offsets].numel - 1),
          .expert_offsets = ptr<std::int32_t>(c, offsets),
          .row_choice = ptr<std::int32_t>(c, offsets + 1),
          .choice_row = ptr<std::int32_t>(c, offsets + 2),
          .invalid_choices = ptr<std::int32_t>(c, offsets + 3),
          .workspace = ptr<void>(c, offsets + 4)};
}

/// The element type's tag, as glukit.library names it.
template <class T>
constexpr const char* element_tag() {
  if constexpr (std::is_same_v<T, glukit::half_t>) {
    return "f16";
  } else {
    static_assert(std::is_same_v<T, glukit::bfloat16_t>, "glukit._C: fp16 and bf16 launchers only");
    return "bf16";
  }
}

/// Adds `launcher`, glukit's launcher `op` for element type T reading `operands` operands.
template <class T>
void add(const char* op, Launcher launcher, int operands, const char* activation = "") {
  add_launcher(op, element_tag<T>(), activation, launcher, operands);
}

/// Adds one launcher per gated activation of glukit's list (epilogue::GatedActivations, i.e.
/// GLUKIT_GATED_ACTIVATIONS), `pick.template operator()<Op>()` being activation Op's.
template <class T, class Pick>
void add_per_activation(const char* op, int operands, Pick pick) {
  [&]<class... Ops>(std::tuple<Ops...>*) {
    (add<T>(op, pick.template operator()<Ops>(), operands, Ops::name()), ...);
  }(static_cast<glukit::epilogue::GatedActivations*>(nullptr));
}

}  // namespace glukit_torch
