// AVX2 + FMA + F16C kernels (selected at run time; this file compiles on any x86-64 compiler flags).
#include "kernels.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define BASALT_X86_NS avx2
#define BASALT_X86_512 0
#include "kernels-x86.inc"
#undef BASALT_X86_512
#undef BASALT_X86_NS
#pragma GCC pop_options

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
