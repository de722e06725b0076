// glukit umbrella header: platform, arch tags, blocks, epilogues, kernels, reference.
#pragma once
#include "glukit/platform/platform.hpp"
#include "glukit/arch/tags.hpp"
#include "glukit/blocks/copy_partition.hpp"
#include "glukit/blocks/pipeline.hpp"
#include "glukit/blocks/smem_layout.hpp"
#include "glukit/blocks/tile_scheduler.hpp"
#include "glukit/epilogue/functors.hpp"
#include "glukit/kernels/addmm_glu.hpp"
#include "glukit/kernels/gated_args.hpp"
#include "glukit/kernels/gated_projection.hpp"
#include "glukit/reference/addmm_glu.hpp"
