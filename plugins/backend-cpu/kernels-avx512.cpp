// AVX-512 (F, BW, VL, VNNI) kernels: 512-bit float loops and VNNI int8 dot products; the K-quant loops are
// the AVX2 ones recompiled for this target.
#include "kernels.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's AVX-512 headers build results from _mm512_undefined_*(), which its own flow analysis reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define BASALT_X86_NS avx512
#define BASALT_X86_512 1
#include "kernels-x86.inc"
#undef BASALT_X86_512
#undef BASALT_X86_NS
#pragma GCC diagnostic pop
#pragma GCC pop_options

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
