// tma_store on a cp.async policy: the output tile leaves through TMA, which only the
// TMA kernel's producer issues.
// expect-error: tma_store: needs copier = CopierKind::tma
#include <glukit/glukit.hpp>

struct StoreWithoutTma : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
  static constexpr bool warp_specialized = true;
  static constexpr int warps = 12;
  static constexpr int tile_n = 192;
  static constexpr int min_blocks_per_cu = 1;
  static constexpr bool tma_store = true;
  static constexpr bool out_via_smem = false;  // the TMA engine stores the tile
};
using Kernel = glukit::AddmmGlu<StoreWithoutTma>;
static_assert(sizeof(Kernel) > 0);
