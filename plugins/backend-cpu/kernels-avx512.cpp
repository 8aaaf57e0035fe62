// AVX-512 (F, BW, VL, VNNI) kernels: 512-bit float loops and VNNI int8 dot products; the K-quant loops are
// the AVX2 ones recompiled for this target.
#include "kernels.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

// The ISA build opens, takes the loops and closes in this order (not sorted).
// clang-format off
#define BASALT_X86_512 1
#include "x86-target-push.inc"
#include "kernels-x86.inc"
#include "x86-target-pop.inc"
// clang-format on

namespace basalt::cpu {
bool init_kernels_avx512(Kernels& k) {
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
          __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vnni"))) {
        return false;
    }
    avx512::fill(k);
    fill_recurrent_kernels_avx512(k);
    k.isa = "avx512";
    return true;
}
}  // namespace basalt::cpu
#else
namespace basalt::cpu {
bool init_kernels_avx512(Kernels&) {
    return false;
}
}  // namespace basalt::cpu
#endif
