// MATMUL and MOE_MATMUL: the weight type picks the shader variant (matmul.comp, one per type; matvec.comp
// for decode with at most 4 columns); weights larger than one binding are read in row windows.
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op-helpers.hpp"
#include "ops.hpp"

namespace basalt::vk::ops {
namespace {

const char* matmul_shader(basalt_dtype t) {
    switch (t) {
        case BASALT_DTYPE_F32:
            return "matmul_f32";
        case BASALT_DTYPE_F16:
            return "matmul_f16";
        case BASALT_DTYPE_BF16:
            return "matmul_bf16";
        case BASALT_DTYPE_Q8_0:
            return "matmul_q8_0";
        case BASALT_DTYPE_Q4_0:
            return "matmul_q4_0";
        case BASALT_DTYPE_Q4_1:
            return "matmul_q4_1";
        case BASALT_DTYPE_Q5_0:
            return "matmul_q5_0";
        case BASALT_DTYPE_Q5_1:
            return "matmul_q5_1";
        case BASALT_DTYPE_Q2_K:
            return "matmul_q2_k";
        case BASALT_DTYPE_Q3_K:
            return "matmul_q3_k";
        case BASALT_DTYPE_Q4_K:
            return "matmul_q4_k";
        case BASALT_DTYPE_Q5_K:
            return "matmul_q5_k";
        case BASALT_DTYPE_Q6_K:
            return "matmul_q6_k";
        case BASALT_DTYPE_MXFP4:
            return "matmul_mxfp4";
        default:
            return nullptr;
    }
}

// The decode matvec (matvec.comp): rows per workgroup, and its variant for a weight type (null: none).
constexpr uint32_t kMatvecRows = 4;
constexpr uint32_t kMatmulRows = 8;  // MROWS of matmul.comp
constexpr uint64_t kMatvecMaxCols = 4;

const char* matvec_shader(basalt_dtype t) {
    switch (t) {
        case BASALT_DTYPE_F32:
            return "matvec_f32";
        case BASALT_DTYPE_F16:
            return "matvec_f16";
        case BASALT_DTYPE_Q8_0:
            return "matvec_q8_0";
        default:
            return nullptr;
    }
}

// Whether every row of x starts on 16 bytes of its binding (the matmul shaders then read it as vec4).
bool x_vec4(const Placed& xp, const TensorView& x) {
    return x.ne[0] % 4 == 0 && xp.delta % 16 == 0 && x.nb[1] % 16 == 0 && x.nb[2] % 16 == 0 && x.nb[3] % 16 == 0;
}

void check_weights(const NodeCtx& c, const TensorView& w) {
    if (matmul_shader(w.type) == nullptr) {
        c.fail(BASALT_ERR_UNSUPPORTED, "weight type " + type_name(w.type) + " is not supported");
    }
}

}  // namespace

void check_matmul(const NodeCtx& c) {
    const TensorView& w = c.in[0];
    check_weights(c, w);
    sdk::contract::matmul(c);
    need_fit(c, c.in[1], "input 1");
    need_fit(c, c.out, "output");
    if (static_cast<uint64_t>(w.nb[1]) + 256 > c.be->max_range())
        c.fail(BASALT_ERR_UNSUPPORTED, "one weight row exceeds maxStorageBufferRange");
}

void record_matmul(NodeCtx& c) {
    const TensorView& w = c.in[0];
    const TensorView& x = c.in[1];
    const int64_t n = w.ne[1];
    const uint64_t room = c.be->max_range() - 256;
    const int64_t per = w.extent <= room ? n : static_cast<int64_t>((room - w.row_bytes()) / w.nb[1]) + 1;
    const Placed xp = c.be->place(x);
    const Placed op = c.be->place(c.out);
    constexpr uint32_t kTile = 8;
    const uint64_t m = static_cast<uint64_t>(x.nrows());
    // The matvec reads 8-value pieces, x and F32 rows as vec4, F16 rows as words: strides and offsets aligned.
    const uint64_t walign = w.type == BASALT_DTYPE_F32 ? 16 : w.type == BASALT_DTYPE_F16 ? 4 : 2;
    const bool matvec = m <= kMatvecMaxCols && matvec_shader(w.type) != nullptr && w.ne[0] % 32 == 0 &&
                        static_cast<uint64_t>(w.nb[1]) % walign == 0 && x_vec4(xp, x);
    for (int64_t lo = 0; lo < n; lo += per) {
        const int64_t hi = std::min(n, lo + per);
        const Placed wp = per == n ? c.be->place(w)
                                   : c.be->place(w, static_cast<uint64_t>(lo * w.nb[1]),
                                                 static_cast<uint64_t>((hi - lo - 1) * w.nb[1] + w.row_bytes()));
        push::MatmulPush pc{};
        pc.k = u32(w.ne[0]);
        pc.n = u32(hi - lo);
        pc.m = u32(static_cast<int64_t>(m));
        pc.w_offset = wp.delta;
        pc.w_nb1 = u32(w.nb[1]);
        pc.x = tensor_ref(xp, x);
        pc.dst = tensor_ref(op, c.out);
        pc.first_row = u32(lo);
        pc.tile = kTile;
        pc.x_vec4 = x_vec4(xp, x) ? 1u : 0u;
        uint32_t gx = 0;
        uint32_t gz = 0;
        if (matvec && wp.delta % walign == 0) {
            Backend::split_groups(static_cast<uint64_t>(hi - lo + kMatvecRows - 1) / kMatvecRows, gx, gz);
            run(c, reduce_variant(c, matvec_shader(w.type)).c_str(), c.be->row_wg(), {wp, xp, op}, pc, gx,
                static_cast<uint32_t>(m), gz);
            continue;
        }
        Backend::split_groups(static_cast<uint64_t>(hi - lo + kMatmulRows - 1) / kMatmulRows, gx, gz);
        run(c, reduce_variant(c, matmul_shader(w.type)).c_str(), c.be->row_wg(), {wp, xp, op}, pc, gx,
            static_cast<uint32_t>((m + kTile - 1) / kTile), gz);
    }
}

void check_moe_matmul(const NodeCtx& c) {
    check_weights(c, c.in[0]);
    sdk::contract::moe_matmul(c);
    need_fit_all(c);
}

void record_moe_matmul(NodeCtx& c) {
    const TensorView& w = c.in[0];
    const TensorView& x = c.in[1];
    const TensorView& ids = c.in[2];
    const int64_t k = ids.ne[0];
    const int64_t tokens = ids.ne[1];
    const bool shared = !(x.ne[1] == k && x.ne[2] == tokens && (x.t->n_dims >= 3 || tokens == 1));
    const Placed wp = c.be->place(w);
    const Placed xp = c.be->place(x);
    const Placed op = c.be->place(c.out);
    const Placed ip = c.be->place(ids);
    push::MatmulPush pc{};
    pc.k = u32(w.ne[0]);
    pc.n = u32(w.ne[1]);
    pc.m = u32(k * tokens);
    pc.w_offset = wp.delta;
    pc.w_nb1 = u32(w.nb[1]);
    pc.x = tensor_ref(xp, x);
    pc.dst = tensor_ref(op, c.out);
    pc.moe = 1;
    pc.ids_offset = ip.delta;
    pc.experts_per_token = u32(k);
    pc.expert_stride = u32(w.nb[2]);
    pc.shared_x = shared ? 1u : 0u;
    pc.n_expert = u32(w.ne[2]);
    pc.tile = 1;
    pc.x_vec4 = x_vec4(xp, x) ? 1u : 0u;
    uint32_t gx = 0;
    uint32_t gz = 0;
    Backend::split_groups(static_cast<uint64_t>(w.ne[1] + kMatmulRows - 1) / kMatmulRows, gx, gz);
    run(c, reduce_variant(c, matmul_shader(w.type)).c_str(), c.be->row_wg(), {wp, xp, op, ip}, pc, gx, u32(k * tokens),
        gz);
}

}  // namespace basalt::vk::ops
