// AVX2 + FMA + F16C kernels (selected at run time; this file compiles on any x86-64 compiler flags).
#include "kernels.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

// The ISA build opens, takes the loops and closes in this order (not sorted).
// clang-format off
#define BASALT_X86_512 0
#include "x86-target-push.inc"
#include "kernels-x86.inc"
#include "x86-target-pop.inc"
// clang-format on

namespace basalt::cpu {
bool init_kernels_avx2(Kernels& k) {
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))) {
        return false;
    }
    avx2::fill(k);
    fill_recurrent_kernels_avx2(k);
    k.isa = "avx2";
    return true;
}
}  // namespace basalt::cpu
#else
namespace basalt::cpu {
bool init_kernels_avx2(Kernels&) {
    return false;
}
}  // namespace basalt::cpu
#endif
