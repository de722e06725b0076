// The backend of this translation unit: its launchers and defaults (nvcc: kernels/sm90/,
// with the fp8 output's quantisation pass; hip-clang: kernels/cdna/), and the MoE routing
// (kernels/moe_route.hpp, one source for both). A plain C++
// translation unit gets none: it can validate arguments, check policies and run the
// reference; a launch is a compile error naming the compiler it needs.
#pragma once
#include "glukit/kernels/grouped.hpp"
#include "glukit/kernels/op_kernel.hpp"

#if defined(GLUKIT_BACKEND_CUDA)
#include "glukit/kernels/moe_combine.hpp"
#include "glukit/kernels/moe_route.hpp"
#include "glukit/kernels/sm90/defaults.hpp"
#include "glukit/kernels/sm90/grouped/launcher.hpp"
#include "glukit/kernels/sm90/quantize_rows.hpp"
#elif defined(GLUKIT_BACKEND_HIP)
#include "glukit/kernels/cdna/defaults.hpp"
#include "glukit/kernels/cdna/grouped_launcher.hpp"
#include "glukit/kernels/moe_combine.hpp"
#include "glukit/kernels/moe_route.hpp"
#endif
