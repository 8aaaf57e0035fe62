// The ops of plugin_backend.h on Vulkan: per op a check (types, shapes, limits; unsupported cases fail with
// BASALT_ERR_UNSUPPORTED naming the node) and a record function (push constants, bindings, dispatch sizes).
// Push-constant layouts are documented at the top of each shader.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <basalt/sdk/op-contracts.hpp>

#include "backend.hpp"

namespace basalt::vk {
namespace {

constexpr uint32_t kElemWg = 128;  // element-wise shaders (Vulkan guarantees 128 invocations per workgroup)

uint32_t u32(int64_t v) {
    return static_cast<uint32_t>(v);
}

uint32_t fbits(float f) {
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    return u;
}

// A tensor that the shader reads or writes in one binding must fit maxStorageBufferRange.
void need_fit(const NodeCtx& c, const TensorView& v, const char* role) {
    if (v.extent + 256 > c.be->max_range()) {
        c.fail(BASALT_ERR_UNSUPPORTED, std::string(role) + " " + v.shape() + " spans " + std::to_string(v.extent) +
                                           " bytes, more than the device's maxStorageBufferRange of " +
                                           std::to_string(c.be->max_range()));
    }
}

void need_fit_all(const NodeCtx& c) {
    static const char* const kRoles[] = {"input 0", "input 1", "input 2", "input 3", "input 4", "input 5"};
    for (int i = 0; i < c.n_in; ++i) need_fit(c, c.in[i], kRoles[i]);
    need_fit(c, c.out, "output");
}

// Appends (offset, ne1, ne2, nb1, nb2, nb3) of a placed tensor.
void push_tensor(std::vector<uint32_t>& pc, const Placed& p, const TensorView& v) {
    pc.insert(pc.end(), {p.delta, u32(v.ne[1]), u32(v.ne[2]), u32(v.nb[1]), u32(v.nb[2]), u32(v.nb[3])});
}

uint32_t elem_groups(uint64_t total) {
    return static_cast<uint32_t>(std::clamp<uint64_t>((total + kElemWg - 1) / kElemWg, 1, 65535));
}

void run(NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Placed>& ps, const std::vector<uint32_t>& pc,
         uint32_t gx, uint32_t gy, uint32_t gz) {
    std::vector<Binding> b;
    for (const auto& p : ps) b.push_back(p.bind);
    c.be->dispatch(c, shader, wg, b, pc.data(), pc.size(), gx, gy, gz);
}

// ---------------------------------------------------------------------------------------------------------

void check_get_rows(const NodeCtx& c) {
    const TensorView& src = c.in[0];
    if (!type_readable(src.type))
        c.fail(BASALT_ERR_UNSUPPORTED, "source type " + type_name(src.type) + " is not supported");
    sdk::contract::get_rows(c);
    need_fit(c, c.in[1], "row ids");
    need_fit(c, c.out, "output");
    if (src.extent + 256 > c.be->max_range() &&
        (src.ne[2] != 1 || src.ne[3] != 1 || static_cast<uint64_t>(src.nb[1]) + 256 > c.be->max_range())) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "source " + src.shape() + " exceeds maxStorageBufferRange and is not a 2-D table");
    }
}

void record_get_rows(NodeCtx& c) {
    const TensorView& src = c.in[0];
    const int64_t rows = src.nrows();
    const uint64_t room = c.be->max_range() - 256;
    const int64_t per = src.extent <= room
                            ? rows
                            : std::max<int64_t>(1, static_cast<int64_t>((room - src.row_bytes()) / src.nb[1]) + 1);
    const Placed ids = c.be->place(c.in[1]);
    const Placed out = c.be->place(c.out);
    uint32_t gx = 0;
    uint32_t gz = 0;
    Backend::split_groups(static_cast<uint64_t>(c.in[1].nelements()), gx, gz);
    for (int64_t lo = 0; lo < rows; lo += per) {
        const int64_t hi = std::min(rows, lo + per);
        const uint64_t begin = static_cast<uint64_t>(lo * src.nb[1]);
        const uint64_t bytes = static_cast<uint64_t>((hi - lo - 1) * src.nb[1] + src.row_bytes());
        const Placed s = per == rows ? c.be->place(src) : c.be->place(src, begin, bytes);
        std::vector<uint32_t> pc = {u32(src.ne[0]),
                                    u32(c.in[1].nelements()),
                                    u32(src.type),
                                    s.delta,
                                    u32(src.nb[1]),
                                    u32(src.ne[1]),
                                    u32(src.ne[2]),
                                    u32(src.nb[2]),
                                    u32(src.nb[3]),
                                    ids.delta,
                                    out.delta,
                                    u32(c.out.ne[1]),
                                    u32(c.out.ne[2]),
                                    u32(c.out.nb[1]),
                                    u32(c.out.nb[2]),
                                    u32(c.out.nb[3]),
                                    u32(lo),
                                    u32(hi),
                                    hi == rows ? 1u : 0u,
                                    u32(rows)};
        run(c, "get_rows", c.be->row_wg(), {s, ids, out}, pc, gx, 1, gz);
    }
}

// ---------------------------------------------------------------------------------------------------------

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

// The registry name of a matmul/matvec variant: "_sg" when a workgroup is one subgroup (no barrier).
std::string reduce_variant(const NodeCtx& c, const char* base) {
    return c.be->one_subgroup() ? std::string(base) + "_sg" : std::string(base);
}

void check_weights(const NodeCtx& c, const TensorView& w) {
    if (matmul_shader(w.type) == nullptr) {
        c.fail(BASALT_ERR_UNSUPPORTED, "weight type " + type_name(w.type) + " is not supported");
    }
}

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
        std::vector<uint32_t> pc = {u32(w.ne[0]), u32(hi - lo), u32(m), wp.delta, u32(w.nb[1])};
        push_tensor(pc, xp, x);
        push_tensor(pc, op, c.out);
        pc.insert(pc.end(), {u32(lo), 0u, 0u, 0u, 0u, 0u, 0u, kTile, x_vec4(xp, x) ? 1u : 0u});
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
    std::vector<uint32_t> pc = {u32(w.ne[0]), u32(w.ne[1]), u32(k * tokens), wp.delta, u32(w.nb[1])};
    push_tensor(pc, xp, x);
    push_tensor(pc, op, c.out);
    pc.insert(pc.end(),
              {0u, 1u, ip.delta, u32(k), u32(w.nb[2]), shared ? 1u : 0u, u32(w.ne[2]), 1u, x_vec4(xp, x) ? 1u : 0u});
    uint32_t gx = 0;
    uint32_t gz = 0;
    Backend::split_groups(static_cast<uint64_t>(w.ne[1] + kMatmulRows - 1) / kMatmulRows, gx, gz);
    run(c, reduce_variant(c, matmul_shader(w.type)).c_str(), c.be->row_wg(), {wp, xp, op, ip}, pc, gx, u32(k * tokens),
        gz);
}

// ---------------------------------------------------------------------------------------------------------

void check_binary(const NodeCtx& c) {
    sdk::contract::binary(c);
    need_fit_all(c);
}

void record_binary(NodeCtx& c) {
    uint32_t op = 0;
    switch (c.node->op) {
        case BASALT_OP_ADD:
            op = 0;
            break;
        case BASALT_OP_MUL:
            op = 1;
            break;
        case BASALT_OP_SWIGLU:
            op = 2;
            break;
        default:
            op = 3;
    }
    const Placed a = c.be->place(c.in[0]);
    const Placed b = c.be->place(c.in[1]);
    const Placed o = c.be->place(c.out);
    const bool bcast = c.in[1].nrows() == 1 && c.in[0].nrows() != 1;
    std::vector<uint32_t> pc = {op, u32(c.out.ne[0]), u32(c.out.nrows()), bcast ? 1u : 0u};
    push_tensor(pc, a, c.in[0]);
    push_tensor(pc, b, c.in[1]);
    push_tensor(pc, o, c.out);
    run(c, "binary", kElemWg, {a, b, o}, pc, elem_groups(static_cast<uint64_t>(c.out.nelements())), 1, 1);
}

void check_unary(const NodeCtx& c) {
    sdk::contract::unary(c);
    need_fit_all(c);
}

void record_unary(NodeCtx& c) {
    const Placed a = c.be->place(c.in[0]);
    const Placed o = c.be->place(c.out);
    const basalt_op op = c.node->op;
    const bool norm = op == BASALT_OP_RMS_NORM || op == BASALT_OP_LAYER_NORM || op == BASALT_OP_SOFTMAX;
    uint32_t code = 0;
    switch (op) {
        case BASALT_OP_SCALE:
        case BASALT_OP_RMS_NORM:
            code = 0;
            break;
        case BASALT_OP_SILU:
        case BASALT_OP_LAYER_NORM:
            code = 1;
            break;
        case BASALT_OP_GELU:
        case BASALT_OP_SOFTMAX:
            code = 2;
            break;
        default:
            code = 3;
    }
    std::vector<uint32_t> pc = {code, u32(c.out.ne[0]), u32(c.out.nrows()), fbits(c.fp(0))};
    push_tensor(pc, a, c.in[0]);
    push_tensor(pc, o, c.out);
    if (norm) {
        uint32_t gx = 0;
        uint32_t gz = 0;
        Backend::split_groups(static_cast<uint64_t>(c.out.nrows()), gx, gz);
        if (c.fused_mul != nullptr) {
            // RMS_NORM -> MUL by a weight row: written straight to the MUL's output.
            const Placed w = c.be->place(c.fused_mul->in[1]);
            const Placed mo = c.be->place(c.fused_mul->out);
            pc.resize(10);
            push_tensor(pc, mo, c.fused_mul->out);
            pc.insert(pc.end(), {1u, w.delta});
            run(c, reduce_variant(c, "norm").c_str(), c.be->row_wg(), {a, mo, w}, pc, gx, 1, gz);
            return;
        }
        run(c, reduce_variant(c, "norm").c_str(), c.be->row_wg(), {a, o}, pc, gx, 1, gz);
    } else {
        run(c, "unary", kElemWg, {a, o}, pc, elem_groups(static_cast<uint64_t>(c.out.nelements())), 1, 1);
    }
}

// ---------------------------------------------------------------------------------------------------------

void check_rope(const NodeCtx& c) {
    sdk::contract::rope(c);
    need_fit_all(c);
}

void record_rope(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const Placed xp = c.be->place(x);
    const Placed pp = c.be->place(c.in[1]);
    const Placed op = c.be->place(c.out);
    const int64_t tokens = x.ne[2] * x.ne[3];
    const auto step = static_cast<float>(-2.0 * std::log2(static_cast<double>(c.fp(0))) / c.ip(1));
    std::vector<uint32_t> pc = {u32(x.ne[0]),     u32(x.ne[1]),   u32(tokens), u32(c.ip(0)),     u32(c.ip(1)),
                                fbits(step),      fbits(c.fp(1)), xp.delta,    u32(x.nb[1]),     u32(x.nb[2]),
                                u32(x.nb[3]),     u32(x.ne[2]),   op.delta,    u32(c.out.nb[1]), u32(c.out.nb[2]),
                                u32(c.out.nb[3]), pp.delta};
    const uint64_t per = static_cast<uint64_t>(c.ip(1) / 2 + (x.ne[0] - c.ip(1)));
    run(c, "rope", kElemWg, {xp, pp, op}, pc, elem_groups(per * static_cast<uint64_t>(x.ne[1] * tokens)), 1, 1);
}

// ---------------------------------------------------------------------------------------------------------

bool cache_type_ok(basalt_dtype t) {
    return t == BASALT_DTYPE_F32 || t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_Q8_0 || t == BASALT_DTYPE_Q4_0;
}

void check_attention(const NodeCtx& c) {
    for (int i = 1; i <= 2; ++i) {
        if (!cache_type_ok(c.in[i].type)) {
            c.fail(BASALT_ERR_UNSUPPORTED, std::string(i == 1 ? "K" : "V") + " cache type " + type_name(c.in[i].type) +
                                               " is not supported (f32, f16, q8_0, q4_0)");
        }
    }
    // The residual window of quantized K/V (ABI 1.4: 8 inputs) has no shader yet (6 inputs: T5's position bias).
    if (c.n_in != 5 && c.n_in != 6) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "a KV residual window (" + std::to_string(c.n_in) + " inputs) is not supported (CPU backend only)");
    }
    const sdk::contract::AttentionShape s = sdk::contract::attention(c);
    for (int i = 1; i <= 2; ++i) {
        if (c.in[i].ne[2] != 1 || c.in[i].ne[3] != 1) {
            c.fail(BASALT_ERR_UNSUPPORTED, std::string(i == 1 ? "K" : "V") + " cache must be 2-D");
        }
    }
    const auto limit = 32 * static_cast<int64_t>(c.be->row_wg());
    if (s.hd_k > limit || s.hd_v > limit) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "head sizes above " + std::to_string(limit) + " are not supported on this device");
    }
    need_fit_all(c);
}

void record_attention(NodeCtx& c) {
    const TensorView& q = c.in[0];
    const TensorView& k = c.in[1];
    const TensorView& v = c.in[2];
    const int64_t hd_k = q.ne[0];
    const int64_t n_head = q.ne[1];
    const int64_t tokens = q.ne[2];
    const int64_t n_kv = k.ne[0] / hd_k;
    const int64_t hd_v = v.ne[0] / n_kv;
    const bool flat = c.out.ne[0] == hd_v * n_head;
    const Placed qp = c.be->place(q);
    const Placed kp = c.be->place(k);
    const Placed vp = c.be->place(v);
    const Placed lp = c.be->place(c.in[3]);
    const Placed tp = c.be->place(c.in[4]);
    const Placed op = c.be->place(c.out);
    std::vector<uint32_t> pc = {u32(hd_k),
                                u32(hd_v),
                                u32(n_head),
                                u32(n_head / n_kv),
                                u32(c.in[3].ne[0] / 2),
                                u32(k.type),
                                u32(v.type),
                                qp.delta,
                                u32(q.nb[1]),
                                u32(q.nb[2]),
                                kp.delta,
                                u32(k.nb[1]),
                                vp.delta,
                                u32(v.nb[1]),
                                lp.delta,
                                tp.delta,
                                op.delta,
                                flat ? u32(hd_v * 4) : u32(c.out.nb[1]),
                                flat ? u32(c.out.nb[1]) : u32(c.out.nb[2]),
                                u32(c.ip(0)),
                                u32(c.ip(1)),
                                fbits(c.fp(0)),
                                fbits(c.fp(1)),
                                u32(k.nrows()),
                                u32(c.in[3].nrows()),
                                u32(hd_k / k.block * k.block_bytes),
                                u32(hd_v / v.block * v.block_bytes)};
    // Since 1.4 two features take push constants from P(27) on (the block holds 32 words), never both in one node
    // (a streaming cache needs rotary positions, which encoder-decoder models do not have):
    // sink keys at cache positions (ip[2]): the rope parameters, as rope.comp takes them (the "_cp" variants);
    // encoder-decoder attention: not causal (ip[5] bit 0), relative position bias by distance (input 5).
    const bool cache_positions = c.ip(2) == 1;
    const bool biased = c.n_in == 6;
    const Placed bp = biased ? c.be->place(c.in[5]) : Placed{};
    if (cache_positions) {
        if (biased || (c.ip(5) & 1) != 0) {
            c.fail(BASALT_ERR_UNSUPPORTED,
                   "sink keys at cache positions (ip[2]) with a position bias or without causal masking");
        }
        const auto step = static_cast<float>(-2.0 * std::log2(static_cast<double>(c.fp(2))) / c.ip(4));
        pc.insert(pc.end(), {u32(1 | (c.ip(3) == 1 ? 2 : 0)), u32(c.ip(4)), fbits(step), fbits(c.fp(3))});
    } else {
        pc.insert(pc.end(), {u32((c.ip(5) & 1) | (biased ? 2 : 0)), biased ? u32((c.in[5].ne[1] - 1) / 2) : 0u,
                             biased ? bp.delta : 0u});
    }
    // Lanes over keys (attention_keys.comp) where the head dims allow; else lanes over dims (attention.comp).
    const int64_t hd = std::max(hd_k, hd_v);
    const bool keys = hd_k % 4 == 0 && hd_v % 4 == 0 && hd <= 256 && c.be->attention_keys();
    const std::string shader = keys ? "attention_keys_d" + std::to_string(hd <= 64    ? 64
                                                                          : hd <= 128 ? 128
                                                                                      : 256)
                                    : std::string("attention");
    const std::string variant = cache_positions ? shader + "_cp" : shader;
    run(c, reduce_variant(c, variant.c_str()).c_str(), c.be->row_wg(), {qp, kp, vp, lp, tp, op, bp}, pc, u32(n_head),
        u32(tokens), 1);
}

void check_kv_write(const NodeCtx& c) {
    if (!cache_type_ok(c.in[1].type)) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "cache type " + type_name(c.in[1].type) + " is not supported (f32, f16, q8_0, q4_0)");
    }
    if (c.n_in != 3) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "a KV residual window (" + std::to_string(c.n_in) + " inputs) is not supported (CPU backend only)");
    }
    sdk::contract::kv_write(c);
    need_fit_all(c);
}

void record_kv_write(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const TensorView& cache = c.out;
    const Placed xp = c.be->place(x);
    const Placed cp = c.be->place(cache);
    const Placed sp = c.be->place(c.in[2]);
    std::vector<uint32_t> pc = {u32(x.ne[0]), u32(x.nrows()), u32(x.type), u32(cache.type)};
    push_tensor(pc, xp, x);
    push_tensor(pc, cp, cache);
    pc.insert(pc.end(), {sp.delta, u32(cache.nrows())});
    uint32_t gx = 0;
    uint32_t gz = 0;
    Backend::split_groups(static_cast<uint64_t>(x.nrows()), gx, gz);  // one workgroup per row
    run(c, reduce_variant(c, "kv_write").c_str(), c.be->row_wg(), {xp, cp, sp}, pc, gx, 1, gz);
}

// ---------------------------------------------------------------------------------------------------------

void check_topk(const NodeCtx& c) {
    sdk::contract::topk(c);
    need_fit_all(c);
}

void check_gather(const NodeCtx& c) {
    sdk::contract::gather(c);
    need_fit_all(c);
}

void check_moe_combine(const NodeCtx& c) {
    sdk::contract::moe_combine(c);
    need_fit_all(c);
}

void record_routing(NodeCtx& c) {
    const basalt_op op = c.node->op;
    const TensorView& a = c.in[0];
    const Placed ap = c.be->place(a);
    const Placed op_ = c.be->place(c.out);
    std::vector<uint32_t> pc;
    std::vector<Placed> ps;
    uint64_t threads = 0;
    const char* shader = nullptr;
    if (op == BASALT_OP_TOPK) {
        pc = {u32(a.ne[0]), u32(a.nrows()), u32(c.ip(0))};
        push_tensor(pc, ap, a);
        push_tensor(pc, op_, c.out);
        ps = {ap, Placed{}, op_};
        threads = static_cast<uint64_t>(a.nrows());
        shader = "topk";
    } else {
        const TensorView& b = c.in[1];
        const Placed bp = c.be->place(b);
        if (op == BASALT_OP_GATHER) {
            pc = {u32(a.ne[0]), u32(a.nrows()), u32(b.ne[0])};
            threads = static_cast<uint64_t>(a.nrows());
            shader = "gather";
        } else {
            // x rows are (j, t) pairs: view it as rows of N with ne1 = k, ne2 = T.
            pc = {u32(a.ne[0]), u32(a.ne[2]), u32(a.ne[1])};
            threads = static_cast<uint64_t>(a.ne[0] * a.ne[2]);
            shader = "moe_combine";
        }
        push_tensor(pc, ap, a);
        push_tensor(pc, op_, c.out);
        push_tensor(pc, bp, b);
        pc.push_back(u32(c.ip(0)));
        ps = {ap, bp, op_};
    }
    run(c, shader, 64, ps, pc, static_cast<uint32_t>(std::clamp<uint64_t>((threads + 63) / 64, 1, 65535)), 1, 1);
}

void check_moe_route(const NodeCtx& c) {
    sdk::contract::moe_route(c);
    // The shader packs expert ids in 12 bits and keeps the loads in shared memory.
    if (c.in[0].ne[0] > 1024) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "routing over " + std::to_string(c.in[0].ne[0]) + " experts (this backend routes at most 1024)");
    }
    need_fit_all(c);
}

void record_moe_route(NodeCtx& c) {
    const TensorView& a = c.in[0];
    const Placed ap = c.be->place(a);
    const Placed op = c.be->place(c.out);
    std::vector<uint32_t> pc = {u32(a.ne[0]), u32(a.nrows()), u32(c.ip(0))};
    push_tensor(pc, ap, a);
    push_tensor(pc, op, c.out);
    pc.insert(pc.end(), {u32(c.ip(1)), u32(c.ip(2)), u32(c.ip(3))});
    // One workgroup: the assignments claim capacity in one order across all tokens.
    run(c, "moe_route", 64, {ap, Placed{}, op}, pc, 1, 1, 1);
}

void check_steer(const NodeCtx& c) {
    sdk::contract::steer(c);
    if (c.in[2].nb[0] != 4) c.fail(BASALT_ERR_UNSUPPORTED, "slots " + c.in[2].shape() + " are not contiguous");
    need_fit_all(c);
}

void record_steer(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const TensorView& table = c.in[1];
    const Placed xp = c.be->place(x);
    const Placed tp = c.be->place(table);
    const Placed sp = c.be->place(c.in[2]);
    const Placed op = c.be->place(c.out);
    std::vector<uint32_t> pc = {u32(x.ne[0]), u32(x.nrows()), u32(table.ne[1])};
    push_tensor(pc, xp, x);
    push_tensor(pc, tp, table);
    pc.push_back(sp.delta);
    push_tensor(pc, op, c.out);
    run(c, "steer", kElemWg, {xp, tp, sp, op}, pc, elem_groups(static_cast<uint64_t>(x.nelements())), 1, 1);
}

// ---------------------------------------------------------------------------------------------------------

bool cast_target_ok(basalt_dtype t) {
    return t == BASALT_DTYPE_F32 || t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_BF16 || t == BASALT_DTYPE_Q8_0;
}

void check_cast(const NodeCtx& c) {
    if (!type_readable(c.in[0].type)) {
        c.fail(BASALT_ERR_UNSUPPORTED, "cast from " + type_name(c.in[0].type) + " is not supported");
    }
    if (!cast_target_ok(c.out.type))
        c.fail(BASALT_ERR_UNSUPPORTED, "cast to " + type_name(c.out.type) + " is not supported");
    sdk::contract::cast(c);
    need_fit_all(c);
}

void record_cast(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const Placed xp = c.be->place(x);
    const Placed op = c.be->place(c.out);
    std::vector<uint32_t> pc = {u32(x.ne[0]), u32(x.nrows()), u32(x.type), u32(c.out.type)};
    push_tensor(pc, xp, x);
    push_tensor(pc, op, c.out);
    const uint64_t units = static_cast<uint64_t>(c.out.type == BASALT_DTYPE_Q8_0 ? x.ne[0] / 32 : x.ne[0]);
    run(c, "cast", kElemWg, {xp, op}, pc, elem_groups(units * static_cast<uint64_t>(x.nrows())), 1, 1);
}

void check_copy(const NodeCtx& c) {
    sdk::contract::copy(c);
    need_fit_all(c);
}

void record_copy(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const TensorView& y = c.out;
    const Placed xp = c.be->place(x);
    const Placed yp = c.be->place(y);
    uint32_t es = 0;
    uint64_t total = 0;
    int64_t xr = 0;
    int64_t yr = 0;
    if (x.block == 1) {
        es = static_cast<uint32_t>(x.block_bytes);
        total = static_cast<uint64_t>(x.nelements());
        xr = x.ne[0];
        yr = y.ne[0];
    } else {
        es = 1;
        total = static_cast<uint64_t>(x.row_bytes() * x.nrows());
        xr = x.row_bytes();
        yr = y.row_bytes();
    }
    std::vector<uint32_t> pc = {u32(static_cast<int64_t>(total)), es, u32(xr), u32(yr)};
    push_tensor(pc, xp, x);
    push_tensor(pc, yp, y);
    run(c, "copy", kElemWg, {xp, yp}, pc, elem_groups(total), 1, 1);
}

const OpImpl kOps[BASALT_OP_COUNT] = {
    {"NONE", 0, 0, nullptr, nullptr},
    {"GET_ROWS", 2, 2, check_get_rows, record_get_rows},
    {"MATMUL", 2, 2, check_matmul, record_matmul},
    {"ADD", 2, 2, check_binary, record_binary},
    {"MUL", 2, 2, check_binary, record_binary},
    {"SCALE", 1, 1, check_unary, record_unary},
    {"RMS_NORM", 1, 1, check_unary, record_unary},
    {"LAYER_NORM", 1, 1, check_unary, record_unary},
    {"ROPE", 2, 2, check_rope, record_rope},
    {"SOFTMAX", 1, 1, check_unary, record_unary},
    {"SILU", 1, 1, check_unary, record_unary},
    {"GELU", 1, 1, check_unary, record_unary},
    {"GELU_ERF", 1, 1, check_unary, record_unary},
    {"SWIGLU", 2, 2, check_binary, record_binary},
    {"GEGLU", 2, 2, check_binary, record_binary},
    {"ATTENTION", 5, 8, check_attention, record_attention},
    {"KV_WRITE", 3, 5, check_kv_write, record_kv_write},
    {"TOPK", 1, 1, check_topk, record_routing},
    {"MOE_MATMUL", 3, 3, check_moe_matmul, record_moe_matmul},
    {"MOE_COMBINE", 2, 2, check_moe_combine, record_routing},
    {"GATHER", 2, 2, check_gather, record_routing},
    {"CAST", 1, 1, check_cast, record_cast},
    {"COPY", 1, 1, check_copy, record_copy},
    {"STEER", 3, 3, check_steer, record_steer},
    {"MOE_ROUTE", 1, 1, check_moe_route, record_moe_route},
};

}  // namespace

const OpImpl* op_impl(basalt_op op) noexcept {
    if (op <= BASALT_OP_NONE || op >= BASALT_OP_COUNT) return nullptr;
    return &kOps[op];
}

}  // namespace basalt::vk
