// All sm_90a primitives in one include.
#pragma once
#include "glukit/arch/hopper/cluster.hpp"
#include "glukit/arch/hopper/cp_async.hpp"
#include "glukit/arch/hopper/mbarrier.hpp"
#include "glukit/arch/hopper/memory.hpp"
#include "glukit/arch/hopper/sync.hpp"
#include "glukit/arch/hopper/tma.hpp"
#include "glukit/arch/hopper/wgmma.hpp"
