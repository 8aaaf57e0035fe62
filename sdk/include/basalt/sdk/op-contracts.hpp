// The shape, type and parameter contracts of the backend ABI's ops (abi/include/basalt/plugin_backend.h), written
// once for every backend. A backend's node check calls the op's contract, then adds what is its own: which weight,
// cache and cast types it supports, and device limits. Header-only; needs basalt_blocks (type traits).
//
// Each function takes the node's check context `c`, any type with: in[] and out (views with t, type, ne[4],
// nrows(), nelements(), rows_packed() and shape()), node, ip(slot), fp(slot) (named parameters, op-decls.hpp),
// fail(status, what) (throws, naming the node), expect_type(view, role, type) and expect_same_shape(a, role_a, b,
// role_b). They only read; thread-safe. ops.def names each op's contract; check(c) runs the one of c's op.
#pragma once

#include <basalt/plugin_backend.h>
#include <basalt/blocks/dtype.hpp>
#include <basalt/sdk/op-decls.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace basalt::sdk::contract {

// Elements per block of a view's type (1 for plain and unknown types).
template <class View>
int64_t block_of(const View& v) noexcept {
    const blocks::DtypeTraits* tr = blocks::dtype_traits(v.type);
    return tr != nullptr ? tr->block_size : 1;
}

// ADD, MUL: input 1 has input 0's shape or is one row of it (broadcast); SWIGLU, GEGLU, SWIGLU_OAI: both inputs
// have the output's shape (SWIGLU_OAI: finite alpha, limit > 0). All F32.
template <class C>
void binary(const C& c) {
    c.expect_type(c.in[0], "input 0", BASALT_DTYPE_F32);
    c.expect_type(c.in[1], "input 1", BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    c.expect_same_shape(c.in[0], "input 0", c.out, "output");
    if (c.node->op == BASALT_OP_SWIGLU_OAI) {
        const float alpha = c.fp(op::swiglu_oai::alpha);
        const float limit = c.fp(op::swiglu_oai::limit);
        if (!std::isfinite(alpha) || !(limit > 0.0f) || !std::isfinite(limit)) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "alpha fp[0] = " + std::to_string(alpha) +
                                                    " must be finite and limit " + "fp[1] = " + std::to_string(limit) +
                                                    " finite and > 0");
        }
    }
    if (c.node->op == BASALT_OP_SWIGLU || c.node->op == BASALT_OP_GEGLU || c.node->op == BASALT_OP_SWIGLU_OAI) {
        c.expect_same_shape(c.in[1], "input 1", c.out, "output");
        return;
    }
    const bool same = c.in[1].ne[0] == c.in[0].ne[0] && c.in[1].ne[1] == c.in[0].ne[1] &&
                      c.in[1].ne[2] == c.in[0].ne[2] && c.in[1].ne[3] == c.in[0].ne[3];
    const bool row = c.in[1].ne[0] == c.in[0].ne[0] && c.in[1].nrows() == 1;
    if (!same && !row) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "input 1 " + c.in[1].shape() + " neither matches input 0 " +
                                                c.in[0].shape() + " nor is one row of " +
                                                std::to_string(c.in[0].ne[0]));
    }
}

// SCALE, RMS_NORM, LAYER_NORM, SOFTMAX, SILU, GELU, GELU_ERF, TANH, SIGMOID, SOFTPLUS: F32, output shaped as the input;
// norms' epsilon >= 0.
template <class C>
void unary(const C& c) {
    c.expect_type(c.in[0], "input 0", BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    c.expect_same_shape(c.in[0], "input 0", c.out, "output");
    if (c.node->op == BASALT_OP_RMS_NORM || c.node->op == BASALT_OP_LAYER_NORM) {
        const float eps = c.fp(c.node->op == BASALT_OP_RMS_NORM ? op::rms_norm::eps : op::layer_norm::eps);
        if (!(eps >= 0.0f)) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "epsilon fp[0] = " + std::to_string(eps) + " must be >= 0");
        }
    }
}

// ROPE: x [head_dim, n_head, T] F32, positions one packed I32 per token, mode 0/1, even n_rot <= head_dim.
template <class C>
void rope(const C& c) {
    c.expect_type(c.in[0], "input 0", BASALT_DTYPE_F32);
    c.expect_type(c.in[1], "positions", BASALT_DTYPE_I32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    c.expect_same_shape(c.in[0], "input 0", c.out, "output");
    const int64_t hd = c.in[0].ne[0];
    const int64_t tokens = c.in[0].ne[2] * c.in[0].ne[3];
    if (c.in[1].nelements() != tokens || !c.in[1].rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "positions " + c.in[1].shape() + " must hold one packed I32 per token (" + std::to_string(tokens) + ")");
    }
    const int32_t mode = c.ip(op::rope::mode);
    const int32_t n_rot = c.ip(op::rope::n_rot);
    if (mode != 0 && mode != 1) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "mode ip[0] = " + std::to_string(mode) + " (0 pairs, 1 neox)");
    }
    if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > hd) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "n_rot ip[1] = " + std::to_string(n_rot) + " must be even and in 2.." + std::to_string(hd));
    }
    const float base = c.fp(op::rope::freq_base);
    if (!(base > 0.0f) || !std::isfinite(c.fp(op::rope::freq_scale))) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "freq_base fp[0] = " + std::to_string(base) + " must be > 0 and freq_scale fp[1] finite");
    }
    // Since 1.4: frequency factors, YaRN and the cos/sin magnitude.
    if (c.node->n_inputs == 3) {
        c.expect_type(c.in[2], "frequency factors", BASALT_DTYPE_F32);
        if (c.in[2].nelements() < n_rot / 2 || !c.in[2].rows_packed()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "frequency factors " + c.in[2].shape() + " must hold n_rot/2 = " +
                                                    std::to_string(n_rot / 2) + " packed values");
        }
    }
    const float ext = c.fp(op::rope::ext_factor);
    if (!std::isfinite(ext) || !std::isfinite(c.fp(op::rope::attn_factor))) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "ext_factor fp[2] and attn_factor fp[3] must be finite");
    }
    if (ext != 0.0f) {
        const float fast = c.fp(op::rope::beta_fast);
        const float slow = c.fp(op::rope::beta_slow);
        if (c.ip(op::rope::n_ctx_orig) <= 0 || !(fast > 0.0f) || !(slow > 0.0f) ||
            !(c.fp(op::rope::freq_scale) > 0.0f)) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT,
                   "YaRN (ext_factor fp[2] != 0) needs n_ctx_orig ip[2] > 0, beta_fast fp[4], beta_slow fp[5] and "
                   "freq_scale fp[1] > 0");
        }
    }
}

// The head sizes and counts of an ATTENTION node.
struct AttentionShape {
    int64_t hd_k = 0;
    int64_t hd_v = 0;
    int64_t n_head = 0;
    int64_t n_kv = 0;
    int64_t tokens = 0;
};

// ATTENTION's shapes: q [hd_k, n_head, T] F32; K [hd_k * n_kv, n_slots], V [hd_v * n_kv, n_slots] (head sizes
// whole blocks of their types; which cache types work is the backend's check); slot lists packed I32
// [2 * n_vis, n_lists]; query table packed I32 [2, T]; output [hd_v * n_head, T] or [hd_v, n_head, T] F32;
// window, sinks >= 0, finite scale, soft-cap >= 0.
template <class C>
AttentionShape attention(const C& c) {
    c.expect_type(c.in[0], "q", BASALT_DTYPE_F32);
    c.expect_type(c.in[3], "slot lists", BASALT_DTYPE_I32);
    c.expect_type(c.in[4], "query table", BASALT_DTYPE_I32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    AttentionShape s;
    s.hd_k = c.in[0].ne[0];
    s.n_head = c.in[0].ne[1];
    s.tokens = c.in[0].ne[2];
    s.n_kv = s.hd_k > 0 ? c.in[1].ne[0] / s.hd_k : 0;
    if (c.in[0].ne[3] != 1) c.fail(BASALT_ERR_INVALID_ARGUMENT, "q " + c.in[0].shape() + " must be [hd_k, n_head, T]");
    if (s.hd_k < 1 || c.in[1].ne[0] % s.hd_k != 0 || s.n_kv < 1 || s.n_head % s.n_kv != 0) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "K cache " + c.in[1].shape() + " is not [hd_k * n_kv_head, n_slots] with " +
                                                "hd_k = " + std::to_string(s.hd_k) + " and n_head " +
                                                std::to_string(s.n_head) + " a multiple of n_kv_head");
    }
    if (c.in[2].ne[0] % s.n_kv != 0 || c.in[2].nrows() != c.in[1].nrows()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "V cache " + c.in[2].shape() + " is not [hd_v * " + std::to_string(s.n_kv) +
                                                ", n_slots] like K " + c.in[1].shape());
    }
    s.hd_v = c.in[2].ne[0] / s.n_kv;
    for (int i = 1; i <= 2; ++i) {
        const int64_t hd = i == 1 ? s.hd_k : s.hd_v;
        if (hd % block_of(c.in[i]) != 0) {
            c.fail(BASALT_ERR_UNSUPPORTED, std::string(i == 1 ? "K" : "V") + " head size " + std::to_string(hd) +
                                               " is not a multiple of " + blocks::dtype_name(c.in[i].type) +
                                               "'s block");
        }
    }
    if (c.in[3].ne[0] % 2 != 0 || !c.in[3].rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "slot lists " + c.in[3].shape() + " must be packed [2 * n_vis, n_lists]");
    }
    if (c.in[4].ne[0] != 2 || c.in[4].nrows() != s.tokens || !c.in[4].rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "query table " + c.in[4].shape() + " must be packed [2, T] with T = " + std::to_string(s.tokens));
    }
    const bool flat = c.out.ne[0] == s.hd_v * s.n_head && c.out.nrows() == s.tokens && c.out.ne[2] == 1;
    const bool split = c.out.ne[0] == s.hd_v && c.out.ne[1] == s.n_head && c.out.ne[2] == s.tokens;
    if (!flat && !split) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + c.out.shape() + " must be [hd_v * n_head, T] = [" +
                                                std::to_string(s.hd_v * s.n_head) + ", " + std::to_string(s.tokens) +
                                                "]");
    }
    namespace a = op::attention;
    const int32_t window = c.ip(a::window);
    const int32_t sinks = c.ip(a::sinks);
    const float scale = c.fp(a::scale);
    const float cap = c.fp(a::soft_cap);
    if (window < 0 || sinks < 0 || !(cap >= 0.0f) || !std::isfinite(scale) || !std::isfinite(cap)) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "window ip[0] = " + std::to_string(window) + ", sinks ip[1] = " +
                                                std::to_string(sinks) + ", scale fp[0] = " + std::to_string(scale) +
                                                ", soft-cap fp[1] = " + std::to_string(cap) + " are not valid");
    }
    // Since 1.4: sink keys at cache positions (ip[2] 1), rotated with ROPE's parameters ip[3], ip[4], fp[2], fp[3].
    if (const int32_t cp = c.ip(a::cache_positions); cp != 0) {
        if (cp != 1 || window == 0) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "cache positions ip[2] = " + std::to_string(cp) +
                                                    " must be 0 or 1, and 1 needs a window ip[0] (it is " +
                                                    std::to_string(window) + ")");
        }
        const int32_t mode = c.ip(a::rope_mode);
        const int32_t n_rot = c.ip(a::n_rot);
        const float base = c.fp(a::freq_base);
        const float fscale = c.fp(a::freq_scale);
        if ((mode != 0 && mode != 1) || n_rot <= 0 || n_rot % 2 != 0 || n_rot > s.hd_k || !(base > 0.0f) ||
            !std::isfinite(base) || !std::isfinite(fscale)) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "sink rotation: rope mode ip[3] = " + std::to_string(mode) +
                                                    ", n_rot ip[4] = " + std::to_string(n_rot) +
                                                    ", freq_base fp[2] = " + std::to_string(base) +
                                                    ", freq_scale fp[3] = " + std::to_string(fscale) +
                                                    " are not valid (head size " + std::to_string(s.hd_k) + ")");
        }
    }
    const int32_t flags = c.ip(a::flags);
    if ((flags & ~3) != 0) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "flags ip[5] = " + std::to_string(flags) + " (bit 0: not causal, bit 1: sink logits)");
    }
    // Since 1.5: learned sink logits, one per head, in the last input (6 inputs, or 7 after the position bias).
    const bool sink_logits = (flags & 2) != 0;
    if (sink_logits) {
        const int last = c.node->n_inputs - 1;
        if (c.node->n_inputs != 6 && c.node->n_inputs != 7) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT,
                   "sink logits (flags bit 1) need 6 inputs, or 7 with a position bias; "
                   "the node has " +
                       std::to_string(c.node->n_inputs));
        }
        c.expect_type(c.in[last], "sink logits", BASALT_DTYPE_F32);
        if (c.in[last].nelements() != s.n_head || !c.in[last].rows_packed()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "sink logits " + c.in[last].shape() + " must hold n_head = " +
                                                    std::to_string(s.n_head) + " packed values");
        }
    }
    if (c.node->n_inputs == (sink_logits ? 7 : 6)) {  // relative position bias by distance (8: the residual window)
        c.expect_type(c.in[5], "position bias", BASALT_DTYPE_F32);
        if (c.in[5].ne[0] != s.n_head || c.in[5].ne[1] % 2 != 1 || c.in[5].ne[2] != 1 || c.in[5].ne[3] != 1 ||
            !c.in[5].rows_packed()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "position bias " + c.in[5].shape() + " must be packed [n_head = " +
                                                    std::to_string(s.n_head) + ", 2R + 1]");
        }
    }
    return s;
}

// KV_WRITE: x [n, T] F32 into the cache (input 1, which is also the output: the write is in place), slots one
// packed I32 per row of x. Which cache types work is the backend's check.
template <class C>
void kv_write(const C& c) {
    c.expect_type(c.in[0], "input 0", BASALT_DTYPE_F32);
    c.expect_type(c.in[2], "slots", BASALT_DTYPE_I32);
    const auto& cache = c.in[1];
    if (c.node->output != c.node->inputs[1]) {
        const basalt_tensor* a = c.out.t;
        const basalt_tensor* b = cache.t;
        bool same = a->buffer == b->buffer && a->offset == b->offset && a->dtype == b->dtype && a->buffer != nullptr;
        for (int i = 0; i < 4 && same; ++i) same = c.out.ne[i] == cache.ne[i] && c.out.nb[i] == cache.nb[i];
        if (!same) c.fail(BASALT_ERR_INVALID_ARGUMENT, "output must be the cache (input 1): the write is in place");
    }
    if (c.in[0].ne[0] != cache.ne[0]) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "input 0 " + c.in[0].shape() + " and cache " + cache.shape() + " differ in row length");
    }
    if (c.in[2].nelements() != c.in[0].nrows() || !c.in[2].rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "slots " + c.in[2].shape() + " must be packed, one per row of input 0 (" +
                                                std::to_string(c.in[0].nrows()) + ")");
    }
}

// CAST's shapes (which types convert is the backend's check): output shaped as the input.
template <class C>
void cast(const C& c) {
    c.expect_same_shape(c.in[0], "input 0", c.out, "output");
}

// COPY: same type and element count; a reshaping copy of a block type needs packed rows.
template <class C>
void copy(const C& c) {
    if (c.in[0].type != c.out.type) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "input type " + std::string(blocks::dtype_name(c.in[0].type)) +
                                                " differs from output type " + blocks::dtype_name(c.out.type));
    }
    if (c.in[0].nelements() != c.out.nelements()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "input " + c.in[0].shape() + " and output " + c.out.shape() + " differ in element count");
    }
    const bool same_rows = c.in[0].ne[0] == c.out.ne[0];
    const bool packed = c.in[0].rows_packed() && c.out.rows_packed();
    if (!same_rows && !packed && block_of(c.out) != 1) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "reshaping copy of strided " + std::string(blocks::dtype_name(c.out.type)) + " tensors");
    }
}

// Whether a checked COPY node only reshapes an intermediate into an intermediate: same type and element count,
// both densely packed (elements, then rows). A backend may then skip it and let the output take the input's
// memory (plan_intermediates' alias).
template <class C>
bool is_reshape(const C& c) {
    if (c.node->op != BASALT_OP_COPY || c.in[0].t->buffer != nullptr || c.out.t->buffer != nullptr) return false;
    const blocks::DtypeTraits* tr = blocks::dtype_traits(c.out.type);
    if (tr == nullptr || c.in[0].type != c.out.type || c.in[0].nelements() != c.out.nelements()) return false;
    const auto elem = static_cast<int64_t>(tr->type_size);
    return c.in[0].nb[0] == elem && c.out.nb[0] == elem && c.in[0].rows_packed() && c.out.rows_packed();
}

// MATMUL's shapes (which weight types work is the backend's check): W [K, N] 2-D, x [K, M...] F32, out [N, M...] F32.
template <class C>
void matmul(const C& c) {
    const auto& w = c.in[0];
    c.expect_type(c.in[1], "input 1", BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    if (w.ne[2] != 1 || w.ne[3] != 1) c.fail(BASALT_ERR_INVALID_ARGUMENT, "weights " + w.shape() + " must be 2-D");
    if (c.in[1].ne[0] != w.ne[0]) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "input 1 " + c.in[1].shape() + " does not have the weights' K = " + std::to_string(w.ne[0]));
    }
    if (c.out.ne[0] != w.ne[1] || c.out.ne[1] != c.in[1].ne[1] || c.out.ne[2] != c.in[1].ne[2] ||
        c.out.ne[3] != c.in[1].ne[3]) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + c.out.shape() + " must be [" + std::to_string(w.ne[1]) +
                                                ", M] for weights " + w.shape() + " and input " + c.in[1].shape());
    }
}

// MOE_MATMUL's shapes (weight types: the backend's check): experts [K, N, n_expert], x [K, T] (shared) or
// [K, k, T] (one per selected expert) F32, ids packed I32 [k, T], out [N, k, T] F32. Returns true when x is shared.
template <class C>
bool moe_matmul(const C& c) {
    const auto& w = c.in[0];
    c.expect_type(c.in[1], "input 1", BASALT_DTYPE_F32);
    c.expect_type(c.in[2], "expert ids", BASALT_DTYPE_I32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    const auto& ids = c.in[2];
    const int64_t k = ids.ne[0];
    const int64_t tokens = ids.ne[1];
    if (w.ne[3] != 1) c.fail(BASALT_ERR_INVALID_ARGUMENT, "experts " + w.shape() + " must be [K, N, n_expert]");
    if (ids.ne[2] != 1 || ids.ne[3] != 1 || !ids.rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "expert ids " + ids.shape() + " must be packed [k, T]");
    }
    const auto& x = c.in[1];
    const bool per_expert = x.ne[1] == k && x.ne[2] == tokens && x.ne[3] == 1 && (x.t->n_dims >= 3 || tokens == 1);
    const bool shared = x.ne[1] == tokens && x.ne[2] == 1 && x.ne[3] == 1;
    if (x.ne[0] != w.ne[0] || (!per_expert && !shared)) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "input 1 " + x.shape() +
                                                " must be [K, T] or [K, k, T] with K = " + std::to_string(w.ne[0]) +
                                                ", k = " + std::to_string(k) + ", T = " + std::to_string(tokens));
    }
    if (c.out.ne[0] != w.ne[1] || c.out.ne[1] != k || c.out.ne[2] != tokens || c.out.ne[3] != 1) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + c.out.shape() + " must be [N, k, T] = [" +
                                                std::to_string(w.ne[1]) + ", " + std::to_string(k) + ", " +
                                                std::to_string(tokens) + "]");
    }
    return shared && !per_expert;
}

// GET_ROWS' shapes (source types: the backend's check): packed I32 row ids, out [n, ids] F32.
template <class C>
void get_rows(const C& c) {
    const auto& src = c.in[0];
    c.expect_type(c.in[1], "row ids", BASALT_DTYPE_I32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    if (!c.in[1].rows_packed()) c.fail(BASALT_ERR_INVALID_ARGUMENT, "row ids must be packed");
    if (c.out.ne[0] != src.ne[0] || c.out.nrows() != c.in[1].nelements()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + c.out.shape() + " must be [" + std::to_string(src.ne[0]) +
                                                ", " + std::to_string(c.in[1].nelements()) + "]");
    }
}

// TOPK: router logits F32 [n, rows] -> I32 [k, rows], 1 <= k <= n.
template <class C>
void topk(const C& c) {
    c.expect_type(c.in[0], "router logits", BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_I32);
    const int64_t n = c.in[0].ne[0];
    const int32_t k = c.ip(op::topk::k);
    if (k < 1 || k > n) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "k ip[0] = " + std::to_string(k) + " must be in 1.." + std::to_string(n));
    }
    if (c.out.ne[0] != k || c.out.nrows() != c.in[0].nrows()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + c.out.shape() + " must be [" + std::to_string(k) + ", " +
                                                std::to_string(c.in[0].nrows()) + "]");
    }
}

// MOE_ROUTE: router probabilities F32 [n, T] -> [k, T] (ip[0] = k in 1..n): I32 expert ids (ip[3] 0) or status
// (ip[3] 2), F32 weights (ip[3] 1); capacity ip[1] >= 1, overflow ip[2] 0 (drop) or 1 (reroute).
template <class C>
void moe_route(const C& c) {
    c.expect_type(c.in[0], "router probabilities", BASALT_DTYPE_F32);
    const int64_t n = c.in[0].ne[0];
    const int32_t k = c.ip(op::moe_route::k);
    const int32_t capacity = c.ip(op::moe_route::capacity);
    const int32_t overflow = c.ip(op::moe_route::overflow);
    const int32_t output = c.ip(op::moe_route::output);
    if (k < 1 || k > n) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "k ip[0] = " + std::to_string(k) + " must be in 1.." + std::to_string(n));
    }
    if (capacity < 1)
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "capacity ip[1] = " + std::to_string(capacity) + " must be >= 1");
    if (overflow != 0 && overflow != 1) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "overflow ip[2] = " + std::to_string(overflow) + " must be 0 (drop) or 1 (reroute)");
    }
    if (output < 0 || output > 2) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "output ip[3] = " + std::to_string(output) + " must be 0 (ids), 1 (weights) or 2 (status)");
    }
    c.expect_type(c.out, "output", output == 1 ? BASALT_DTYPE_F32 : BASALT_DTYPE_I32);
    if (c.out.ne[0] != k || c.out.nrows() != c.in[0].nrows() || !c.out.rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + c.out.shape() + " must be packed [" + std::to_string(k) + ", " +
                                                std::to_string(c.in[0].nrows()) + "]");
    }
}

// MOE_COMBINE: [N, k, T] and weights [k, T] -> [N, T], all F32.
template <class C>
void moe_combine(const C& c) {
    c.expect_type(c.in[0], "expert outputs", BASALT_DTYPE_F32);
    c.expect_type(c.in[1], "weights", BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    const auto& x = c.in[0];
    if (x.ne[3] != 1 || c.in[1].ne[0] != x.ne[1] || c.in[1].nrows() != x.ne[2] || c.out.ne[0] != x.ne[0] ||
        c.out.nrows() != x.ne[2]) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "expects [N, k, T] " + x.shape() + ", weights [k, T] " + c.in[1].shape() +
                                                " and output [N, T] " + c.out.shape());
    }
}

// GATHER: F32 [n, T] and I32 indices [k, T] -> F32 [k, T].
template <class C>
void gather(const C& c) {
    c.expect_type(c.in[0], "input 0", BASALT_DTYPE_F32);
    c.expect_type(c.in[1], "indices", BASALT_DTYPE_I32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    if (c.in[1].nrows() != c.in[0].nrows()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "indices " + c.in[1].shape() + " and input 0 " + c.in[0].shape() + " differ in T");
    }
    c.expect_same_shape(c.in[1], "indices", c.out, "output");
}

// STEER: F32 rows [n, T], F32 table [n, S], I32 slots [T] -> F32 [n, T].
template <class C>
void steer(const C& c) {
    c.expect_type(c.in[0], "input 0", BASALT_DTYPE_F32);
    c.expect_type(c.in[1], "table", BASALT_DTYPE_F32);
    c.expect_type(c.in[2], "slots", BASALT_DTYPE_I32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    c.expect_same_shape(c.in[0], "input 0", c.out, "output");
    if (c.in[1].ne[0] != c.in[0].ne[0] || c.in[1].ne[2] != 1 || c.in[1].ne[3] != 1) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "table " + c.in[1].shape() + " is not [" + std::to_string(c.in[0].ne[0]) + ", slots]");
    }
    if (c.in[2].nelements() != c.in[0].nrows()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "slots " + c.in[2].shape() + " do not give one slot per row of input 0 " + c.in[0].shape());
    }
}

// SLICE: F32 in0 [n, ...] -> F32 out [m, ...] (same other dims), 0 <= offset, offset + m <= n.
template <class C>
void slice(const C& c) {
    c.expect_type(c.in[0], "input 0", BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    const int32_t off = c.ip(op::slice::offset);
    const bool rows = c.in[0].ne[1] == c.out.ne[1] && c.in[0].ne[2] == c.out.ne[2] && c.in[0].ne[3] == c.out.ne[3];
    if (!rows || off < 0 || off + c.out.ne[0] > c.in[0].ne[0]) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + c.out.shape() + " at offset ip[0] = " + std::to_string(off) +
                                                " is not a slab of input 0 " + c.in[0].shape() + " along dim 0");
    }
}

// The (slot, fresh) table of a recurrent op: packed I32 [2, T].
template <class C, class V>
void state_rows(const C& c, const V& rows, int64_t tokens) {
    c.expect_type(rows, "state rows", BASALT_DTYPE_I32);
    if (rows.ne[0] != 2 || rows.nrows() != tokens || !rows.rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "state rows " + rows.shape() + " must be packed [2, T] with T = " + std::to_string(tokens));
    }
}

// SSM_CONV: x F32 [C, T], weights F32 [K, C] (K >= 2), state F32 [(K-1) C, S], rows I32 [2, T], out F32 [C, T].
template <class C>
void ssm_conv(const C& c) {
    c.expect_type(c.in[0], "x", BASALT_DTYPE_F32);
    c.expect_type(c.in[1], "weights", BASALT_DTYPE_F32);
    c.expect_type(c.in[2], "state", BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    c.expect_same_shape(c.in[0], "x", c.out, "output");
    const int64_t ch = c.in[0].ne[0], k = c.in[1].ne[0];
    if (c.in[0].ne[2] != 1 || c.in[0].ne[3] != 1 || k < 2 || c.in[1].ne[1] != ch || c.in[1].ne[2] != 1 ||
        c.in[2].ne[0] != (k - 1) * ch || c.in[2].ne[2] != 1 || c.in[2].ne[3] != 1) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "x " + c.in[0].shape() + ", weights " + c.in[1].shape() + ", state " +
                                                c.in[2].shape() + " are not [C, T], [K, C], [(K-1) C, slots]");
    }
    state_rows(c, c.in[3], c.in[0].ne[1]);
}

// GATED_DELTA: q, k F32 [dk, nk, T]; v F32 [dv, nv, T] with nv a multiple of nk; log-decay and beta F32 [nv, T];
// state F32 [dv dk nv, S]; rows I32 [2, T]; out F32 [dv, nv, T].
template <class C>
void gated_delta(const C& c) {
    static const char* const kRoles[] = {"q", "k", "v", "log-decay", "beta", "state"};
    for (int i = 0; i < 6; ++i) c.expect_type(c.in[i], kRoles[i], BASALT_DTYPE_F32);
    c.expect_type(c.out, "output", BASALT_DTYPE_F32);
    c.expect_same_shape(c.in[0], "q", c.in[1], "k");
    c.expect_same_shape(c.in[2], "v", c.out, "output");
    c.expect_same_shape(c.in[3], "log-decay", c.in[4], "beta");
    const int64_t dk = c.in[0].ne[0], nk = c.in[0].ne[1], T = c.in[0].ne[2];
    const int64_t dv = c.in[2].ne[0], nv = c.in[2].ne[1];
    if (c.in[0].ne[3] != 1 || c.in[2].ne[2] != T || c.in[2].ne[3] != 1 || nk < 1 || nv % nk != 0 ||
        c.in[3].ne[0] != nv || c.in[3].ne[1] != T || c.in[3].ne[2] != 1 || c.in[5].ne[0] != dv * dk * nv ||
        c.in[5].ne[2] != 1 || c.in[5].ne[3] != 1) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "q " + c.in[0].shape() + ", v " + c.in[2].shape() + ", log-decay " +
                                                c.in[3].shape() + ", state " + c.in[5].shape() +
                                                " are not [dk, nk, T], [dv, nv, T], [nv, T], [dv dk nv, slots]");
    }
    state_rows(c, c.in[6], T);
    if (c.ip(op::gated_delta::chunk) < 0) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "chunk " + std::to_string(c.ip(op::gated_delta::chunk)) + " is negative");
    }
}

// Runs the contract ops.def names for c's op (its return value, where it has one, is dropped); an op the
// declaration does not know fails as unsupported.
template <class C>
void check(const C& c) {
    switch (c.node->op) {
#define BASALT_OP(NAME, id, min_inputs, max_inputs, contract) \
    case BASALT_OP_##NAME:                                    \
        static_cast<void>(contract(c));                       \
        return;
#include <basalt/sdk/ops.def>
        default:
            c.fail(BASALT_ERR_UNSUPPORTED, "op " + std::to_string(c.node->op) + " is not declared");
    }
}

}  // namespace basalt::sdk::contract
