// The four variants of the reference work's optimisation path as policies:
// aliases over one kernel, differing only in these named members. A user
// tunes or extends one by deriving from it and shadowing members, e.g.
//   struct MyPolicy : glukit::policy::V4FusedEpilogue<glukit::arch::sm90a> {
//     using epilogue_op = glukit::epilogue::SwiGlu;
//     static constexpr const char* name() { return "MySwiGlu"; }
//   };
// This header gathers the policies: the variants (policy_variants.hpp) and each arch's tuned
// values and kernels (policies_sm90a.hpp, policies_cdna.hpp).
#pragma once
#include "glukit/kernels/policies_cdna.hpp"
#include "glukit/kernels/policies_sm90a.hpp"
#include "glukit/kernels/policy_variants.hpp"
