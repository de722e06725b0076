// rocPRIM's blocked block load, as the register-staged copier uses it. rocPRIM
// 3.4 (ROCm 6.4) predates gfx950: its config.hpp does not recognise the chip
// and its atomics header then fails with #error. gfx950 executes the gfx9.4
// ISA, so while rocPRIM's headers are read in a gfx950 device pass, the chip is
// presented as the gfx9.4 generic target; the macro is removed again after.
#pragma once
#include "glukit/platform/config.hpp"

#if defined(GLUKIT_ARCH_GFX950) && !defined(__gfx9_4_generic__)
#include <rocprim/rocprim_version.hpp>
#if ROCPRIM_VERSION < 300500
#define __gfx9_4_generic__ 1
#define GLUKIT_ROCPRIM_GFX94_SHIM 1
#endif
#endif

#include <rocprim/block/block_load_func.hpp>

#if defined(GLUKIT_ROCPRIM_GFX94_SHIM)
#undef __gfx9_4_generic__
#undef GLUKIT_ROCPRIM_GFX94_SHIM
#endif
