#include "types.hpp"

namespace basalt::cpu {

const TypeInfo* type_info(basalt_dtype type) noexcept {
    static const TypeInfo f32{"f32", 1, 4, 4}, f16{"f16", 1, 2, 2}, bf16{"bf16", 1, 2, 2}, i32{"i32", 1, 4, 4},
        q4_0{"q4_0", 32, 18, 2}, q4_1{"q4_1", 32, 20, 2}, q5_0{"q5_0", 32, 22, 2}, q5_1{"q5_1", 32, 24, 2},
        q8_0{"q8_0", 32, 34, 2}, q2_k{"q2_K", 256, 84, 2}, q3_k{"q3_K", 256, 110, 2}, q4_k{"q4_K", 256, 144, 2},
        q5_k{"q5_K", 256, 176, 2}, q6_k{"q6_K", 256, 210, 2}, kivi_t8{"kivi_t8", 32, 36, 2},
        kivi_t4{"kivi_t4", 32, 20, 2}, kivi_t2{"kivi_t2", 32, 12, 2}, kivi_c8{"kivi_c8", 32, 36, 2},
        kivi_c4{"kivi_c4", 32, 20, 2}, kivi_c2{"kivi_c2", 32, 12, 2}, mxfp4{"mxfp4", 32, 17, 1};
    switch (type) {
        case BASALT_DTYPE_F32:
            return &f32;
        case BASALT_DTYPE_F16:
            return &f16;
        case BASALT_DTYPE_BF16:
            return &bf16;
        case BASALT_DTYPE_I32:
            return &i32;
        case BASALT_DTYPE_Q4_0:
            return &q4_0;
        case BASALT_DTYPE_Q4_1:
            return &q4_1;
        case BASALT_DTYPE_Q5_0:
            return &q5_0;
        case BASALT_DTYPE_Q5_1:
            return &q5_1;
        case BASALT_DTYPE_Q8_0:
            return &q8_0;
        case BASALT_DTYPE_Q2_K:
            return &q2_k;
        case BASALT_DTYPE_Q3_K:
            return &q3_k;
        case BASALT_DTYPE_Q4_K:
            return &q4_k;
        case BASALT_DTYPE_Q5_K:
            return &q5_k;
        case BASALT_DTYPE_Q6_K:
            return &q6_k;
        case BASALT_DTYPE_KIVI_T8:
            return &kivi_t8;
        case BASALT_DTYPE_KIVI_T4:
            return &kivi_t4;
        case BASALT_DTYPE_KIVI_T2:
            return &kivi_t2;
        case BASALT_DTYPE_KIVI_C8:
            return &kivi_c8;
        case BASALT_DTYPE_KIVI_C4:
            return &kivi_c4;
        case BASALT_DTYPE_KIVI_C2:
            return &kivi_c2;
        case BASALT_DTYPE_MXFP4:
            return &mxfp4;
        default:
            return nullptr;
    }
}

std::string type_name(basalt_dtype type) {
    const TypeInfo* ti = type_info(type);
    return ti != nullptr ? std::string(ti->name) : "type " + std::to_string(type);
}

bool matmul_weight_supported(basalt_dtype type) noexcept {
    // The KIVI types are KV-cache storage only (ATTENTION / KV_WRITE).
    return type != BASALT_DTYPE_I32 && type < BASALT_DTYPE_KIVI_T8 && type_info(type) != nullptr;
}

ActFormat act_format(basalt_dtype weight) noexcept {
    switch (weight) {
        case BASALT_DTYPE_F16:
            return ActFormat::F16;
        case BASALT_DTYPE_Q4_0:
        case BASALT_DTYPE_Q5_0:
        case BASALT_DTYPE_Q8_0:
        case BASALT_DTYPE_MXFP4:
            return ActFormat::Q8_0;
        case BASALT_DTYPE_Q4_1:
        case BASALT_DTYPE_Q5_1:
            return ActFormat::Q8_1;
        case BASALT_DTYPE_Q2_K:
        case BASALT_DTYPE_Q3_K:
        case BASALT_DTYPE_Q4_K:
        case BASALT_DTYPE_Q5_K:
        case BASALT_DTYPE_Q6_K:
            return ActFormat::Q8_K;
        default:
            return ActFormat::F32;  // F32 and BF16 weights take F32 activations
    }
}

int64_t act_row_bytes(ActFormat f, int64_t n) noexcept {
    switch (f) {
        case ActFormat::F32:
            return n * 4;
        case ActFormat::F16:
            return n * 2;
        case ActFormat::Q8_0:
            return n / kQK * static_cast<int64_t>(sizeof(BlockQ8_0));
        case ActFormat::Q8_1:
            return n / kQK * static_cast<int64_t>(sizeof(BlockQ8_1));
        case ActFormat::Q8_K:
            return n / kQKK * static_cast<int64_t>(sizeof(BlockQ8_K));
    }
    return 0;
}

}  // namespace basalt::cpu
