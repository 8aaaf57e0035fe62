// AVX2 and AVX-512 builds of the recurrent ops' inner loops (kernels-recurrent-x86.inc: GATED_DELTA's two forms,
// SSM_CONV), selected with the rest of a table (kernels-avx2.cpp / kernels-avx512.cpp call fill_recurrent_kernels_*).
// Built with -ffp-contract=off (CMakeLists) so that no multiply and add pair is fused: the floats are the baseline
// loops' on every ISA.
#include "kernels.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

// The ISA build opens, takes the loops and closes in this order (not sorted).
// clang-format off
#define BASALT_X86_512 0
#include "x86-target-push.inc"
#include "kernels-recurrent-x86.inc"
#include "x86-target-pop.inc"
// clang-format on

// The ISA build opens, takes the loops and closes in this order (not sorted).
// clang-format off
#define BASALT_X86_512 1
#include "x86-target-push.inc"
#include "kernels-recurrent-x86.inc"
#include "x86-target-pop.inc"
// clang-format on

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
