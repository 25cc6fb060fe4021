// What the gelu steps share: the block size of the 16-byte steps (vec4, vec4_ilp).
#pragma once

#include "common.cuh"
#include "gelu.h"

constexpr int kGeluThreads = 256;
