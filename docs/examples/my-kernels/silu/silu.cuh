// What the silu steps share: the function, in fp32, and the block size.
#pragma once

#include "common.cuh"
#include "silu.h"

constexpr int kSiluThreads = 256;

__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }
