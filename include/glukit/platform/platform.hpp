// The platform layer in one include.
#pragma once
#include "glukit/platform/config.hpp"
#include "glukit/platform/half.hpp"
#include "glukit/platform/math.hpp"
#include "glukit/platform/runtime.hpp"
