#!/usr/bin/env bash
# On the GPU machine (cuobjdump there): per addmm_glu kernel of a binary, its HGMMA (QGMMA: e4m3)
# forms and the counts of HGMMA, local-memory instructions (LDL/STL), WARPGROUP.DEPBAR
# (one per wgmma wait: more means ptxas serialised wgmma), LDSM, STSM and mbarrier
# arrivals (SYNCS.ARRIVE), the special-function operations of the epilogue (MUFU.EX2,
# MUFU.RCP) and global reductions (RED / REDG: a composition's column sums).
#
#   scripts/sass_summary.sh BINARY [NAME_REGEX]     # default regex: addmm_glu_kernel
set -euo pipefail
bin=$1 filter=${2:-addmm_glu_kernel}
demangle=$(command -v cu++filt || command -v c++filt || echo cat)
cuobjdump -sass "$bin" | "$demangle" | awk -v filter="$filter" '
  function flush() {
    if (fn != "" && fn ~ filter)
      printf "%s %s HGMMA %d local %d DEPBAR %d LDSM %d STSM %d SYNCS.ARRIVE %d MUFU.EX2 %d MUFU.RCP %d RED %d\n", fn, forms, h, l, d, lm, sm, ar, ex, rc, rg
  }
  /Function : / { flush(); fn = $0; sub(/.*Function : /, "", fn); forms = ""; h = l = d = lm = sm = ar = ex = rc = rg = 0; next }
  /[HQ]GMMA\./ { h++; match($0, /[HQ]GMMA\.[0-9x]+\.[A-Z0-9.]+/); f = substr($0, RSTART, RLENGTH);
              if (index(forms, f) == 0) forms = forms (forms == "" ? "" : ",") f }
  /[^A-Z](LDL|STL)[. ]/ { l++ }
  /WARPGROUP\.DEPBAR/ { d++ }
  /LDSM/ { lm++ }
  /STSM/ { sm++ }
  /SYNCS\.ARRIVE/ { ar++ }
  /MUFU\.EX2/ { ex++ }
  /MUFU\.RCP/ { rc++ }
  /[^A-Z]REDG?\./ { rg++; if (index(forms, "RED") == 0) { match($0, /REDG?\.[A-Z0-9x.]+/); forms = forms "," substr($0, RSTART, RLENGTH) } }
  END { flush() }'
