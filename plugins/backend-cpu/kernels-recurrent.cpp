// AVX2 and AVX-512 builds of the recurrent ops' inner loops (kernels-recurrent-x86.inc: GATED_DELTA's two forms,
// SSM_CONV), selected with the rest of a table (kernels-avx2.cpp / kernels-avx512.cpp call fill_recurrent_kernels_*).
// Built with -ffp-contract=off (CMakeLists) so that no multiply and add pair is fused: the floats are the baseline
// loops' on every ISA.
#include "kernels.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define BASALT_X86_NS avx2
#define BASALT_X86_512 0
#include "kernels-recurrent-x86.inc"
#undef BASALT_X86_512
#undef BASALT_X86_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's AVX-512 headers build results from _mm512_undefined_*(), which its own flow analysis reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define BASALT_X86_NS avx512
#define BASALT_X86_512 1
#include "kernels-recurrent-x86.inc"
#undef BASALT_X86_512
#undef BASALT_X86_NS
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace basalt::cpu {
void fill_recurrent_kernels_avx2(Kernels& k) {
    k.delta_dots = avx2::delta_dots;
    k.delta_rows = avx2::delta_rows;
    k.delta_recurrent8 = avx2::delta_recurrent8;
    k.conv_rows = avx2::conv_rows;
}
void fill_recurrent_kernels_avx512(Kernels& k) {
    k.delta_dots = avx512::delta_dots;
    k.delta_rows = avx512::delta_rows;
    k.delta_recurrent8 = avx512::delta_recurrent8;
    k.conv_rows = avx512::conv_rows;
}
}  // namespace basalt::cpu
#else
namespace basalt::cpu {
void fill_recurrent_kernels_avx2(Kernels&) {}
void fill_recurrent_kernels_avx512(Kernels&) {}
}  // namespace basalt::cpu
#endif
