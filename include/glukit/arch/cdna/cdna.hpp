// The CDNA arch layer in one include: every AMD intrinsic, builtin and inline
// asm of glukit lives under arch/cdna/.
#pragma once
#include "glukit/arch/cdna/buffer.hpp"
#include "glukit/arch/cdna/convert.hpp"
#include "glukit/arch/cdna/device.hpp"
#include "glukit/arch/cdna/lds.hpp"
#include "glukit/arch/cdna/mfma.hpp"
#include "glukit/arch/cdna/stage_pipeline.hpp"
#include "glukit/arch/cdna/sync.hpp"
