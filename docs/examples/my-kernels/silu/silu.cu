// The silu family's step table; each step is a file of cuda_silu/ that registers itself in it.
#include "silu.h"

namespace kl {

KL_DEFINE_STEP_TABLE(silu, SiluStep)

}  // namespace kl
