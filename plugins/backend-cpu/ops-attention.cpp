// ATTENTION over slot lists (ragged, paged, windowed, with sinks, soft-capped, GQA) and KV_WRITE.
// One pass per (query token, head) with an online softmax in F32; caches may be F32, F16, Q8_0, Q4_0 or KIVI
// (rows of the last three dequantized on read), with an optional F32 residual window (ABI 1.4).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include <basalt/blocks/kivi.hpp>
#include <basalt/sdk/op-contracts.hpp>

#include "graph.hpp"

namespace basalt::cpu {
namespace {

bool cache_type_ok(basalt_dtype t) {
    return t == BASALT_DTYPE_F32 || t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_Q8_0 || t == BASALT_DTYPE_Q4_0 ||
           blocks::kivi_bits(t) != 0;
}

constexpr const char* kCacheTypes = "f32, f16, q8_0, q4_0, kivi_t8, kivi_t4, kivi_t2, kivi_c8, kivi_c4, kivi_c2";

// Head kvh's hd values of cache slot `slot` as floats (the dequantize-on-read path of the types without a direct
// kernel). KIVI_C* slots sit in groups of 32 rows, each channel one chunk over the group's slots.
void dequantize_cache_row(const TensorView& cache, int64_t slot, int64_t kvh, int64_t hd, float* dst) {
    if (blocks::kivi_per_channel(cache.type)) {
        const uint8_t* group = cache.data + (slot / 32) * 32 * cache.nb[1];
        blocks::kivi_dequantize_group_row(cache.type, group, static_cast<int>(slot % 32), kvh * hd, dst, hd);
        return;
    }
    const TypeInfo* ti = type_info(cache.type);
    dequantize_row(cache.type, cache.row(slot) + kvh * (hd / ti->block * ti->bytes), dst, hd);
}

// Checks a KIVI_C* cache: one flat matrix of whole groups of 32 slots.
void check_per_channel(const NodeCtx& c, const TensorView& cache, const char* role) {
    if (!blocks::kivi_per_channel(cache.type)) return;
    if (cache.ne[2] != 1 || cache.ne[3] != 1 || cache.nrows() % 32 != 0 || !cache.rows_packed()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               std::string(role) + " " + cache.shape() + " must be one packed matrix of whole groups of 32 slots");
    }
}

float dot_cache(const Kernels& k, basalt_dtype type, int64_t n, const float* q, const uint8_t* kp) {
    switch (type) {
        case BASALT_DTYPE_F32:
            return k.dot_f32(n, q, reinterpret_cast<const float*>(kp));
        case BASALT_DTYPE_F16:
            return k.dot_f16(n, q, reinterpret_cast<const uint16_t*>(kp));
        default: {
            const auto* b = reinterpret_cast<const BlockQ8_0*>(kp);
            float s = 0;
            for (int64_t i = 0; i < n / kQK; ++i) {
                float bs = 0;
                for (int j = 0; j < kQK; ++j) bs += q[i * kQK + j] * static_cast<float>(b[i].qs[j]);
                s += bs * fp16_to_fp32(b[i].d);
            }
            return s;
        }
    }
}

void axpy_cache(const Kernels& k, basalt_dtype type, int64_t n, float a, const uint8_t* vp, float* acc) {
    switch (type) {
        case BASALT_DTYPE_F32:
            return k.axpy_f32(n, a, reinterpret_cast<const float*>(vp), acc);
        case BASALT_DTYPE_F16:
            return k.axpy_f16(n, a, reinterpret_cast<const uint16_t*>(vp), acc);
        default: {
            const auto* b = reinterpret_cast<const BlockQ8_0*>(vp);
            for (int64_t i = 0; i < n / kQK; ++i) {
                const float ad = a * fp16_to_fp32(b[i].d);
                for (int j = 0; j < kQK; ++j) acc[i * kQK + j] += ad * static_cast<float>(b[i].qs[j]);
            }
        }
    }
}

// Query heads of one KV head handled by one task at most (larger GQA groups are split into parts).
constexpr int kMaxSharedHeads = 8;

// Longest visible list (as padded by the session) of a single-token attention run without a parallel region.
constexpr int64_t kInlineVisible = 64;
// K and V rows requested up front when the block kernels request the later ones themselves.
constexpr int64_t kRequestRows = 32;

void prefetch_row(const uint8_t* p, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o);
    __builtin_prefetch(p + bytes - 1);
}

struct AttnShape {
    int64_t hd_k, hd_v, n_head, n_kv, tokens, n_vis, n_lists;
};

AttnShape attn_shape(const NodeCtx& c) {
    AttnShape s{};
    s.hd_k = c.in[0].ne[0];
    s.n_head = c.in[0].ne[1];
    s.tokens = c.in[0].ne[2];
    s.n_kv = c.in[1].ne[0] / s.hd_k;
    s.hd_v = s.n_kv > 0 ? c.in[2].ne[0] / s.n_kv : 0;
    s.n_vis = c.in[3].ne[0] / 2;
    s.n_lists = c.in[3].nrows();
    return s;
}

}  // namespace

void check_attention(const NodeCtx& c) {
    for (int i = 1; i <= 2; ++i) {
        if (!cache_type_ok(c.in[i].type)) {
            c.fail(BASALT_ERR_UNSUPPORTED, std::string(i == 1 ? "K" : "V") + " cache type " + type_name(c.in[i].type) +
                                               " is not supported (" + kCacheTypes + ")");
        }
        check_per_channel(c, c.in[i], i == 1 ? "K cache" : "V cache");
    }
    sdk::contract::attention(c);
    // Since 1.5, flags bit 1: the sink logits in the last input (the contract checked it).
    const bool sink_logits = (c.ip(op::attention::flags) & 2) != 0;
    if (!sink_logits && c.n_in != 5 && c.n_in != 6 && c.n_in != 8) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "has " + std::to_string(c.n_in) + " inputs: 5, 6 with a position bias or 8 with a residual window");
    }
    if (c.n_in == 8) {
        if (c.ip(op::attention::residual) < 1) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT,
                   "residual window ip[6] = " + std::to_string(c.ip(op::attention::residual)));
        }
        for (int i = 5; i <= 6; ++i) {
            c.expect_type(c.in[i], i == 5 ? "K residual" : "V residual", BASALT_DTYPE_F32);
            if (c.in[i].ne[0] != c.in[i - 4].ne[0] || !c.in[i].rows_packed()) {
                c.fail(BASALT_ERR_INVALID_ARGUMENT, std::string(i == 5 ? "K" : "V") + " residual " + c.in[i].shape() +
                                                        " is not packed rows like its cache " + c.in[i - 4].shape());
            }
        }
        c.expect_type(c.in[7], "residual table", BASALT_DTYPE_I32);
        if (c.in[7].ne[0] != 2 || c.in[7].nrows() != c.in[3].nrows() || !c.in[7].rows_packed()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "residual table " + c.in[7].shape() + " must be packed [2, n_lists]");
        }
    }
}

void run_attention(NodeCtx& c) {
    const AttnShape s = attn_shape(c);
    const TensorView& kc = c.in[1];
    const TensorView& vc = c.in[2];
    const auto* lists = reinterpret_cast<const int32_t*>(c.in[3].data);
    const auto* qtab = reinterpret_cast<const int32_t*>(c.in[4].data);
    const int64_t n_slots = kc.nrows();
    for (int64_t i = 0; i < s.n_lists * s.n_vis; ++i) {
        if (lists[2 * i] >= n_slots) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "slot " + std::to_string(lists[2 * i]) + " in list " +
                                                    std::to_string(i / s.n_vis) + " is outside the cache's " +
                                                    std::to_string(n_slots) + " slots");
        }
    }
    for (int64_t t = 0; t < s.tokens; ++t) {
        if (qtab[2 * t] < 0 || qtab[2 * t] >= s.n_lists) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "query " + std::to_string(t) + " names list " +
                                                    std::to_string(qtab[2 * t]) + " of " + std::to_string(s.n_lists));
        }
    }
    // Since 1.5: learned sink logits (one per head, last input), which join each head's softmax without a value.
    const bool sink_logits = (c.ip(op::attention::flags) & 2) != 0;
    const float* sink = sink_logits ? reinterpret_cast<const float*>(c.in[c.n_in - 1].data) : nullptr;
    const int n_extra = c.n_in - (sink_logits ? 1 : 0);  // inputs before the sink logits
    // Residual window: per list (base row, open position); pairs from the open position on read the F32 rows.
    const int64_t R = n_extra == 8 ? c.ip(op::attention::residual) : 0;
    const int32_t* rtab = R > 0 ? reinterpret_cast<const int32_t*>(c.in[7].data) : nullptr;
    for (int64_t g = 0; rtab != nullptr && g < s.n_lists; ++g) {
        const int64_t base = rtab[2 * g];
        if (base < 0 || base + R > c.in[5].nrows() || base + R > c.in[6].nrows()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "residual rows " + std::to_string(base) + " + " + std::to_string(R) +
                                                    " of list " + std::to_string(g) + " are outside the residual's " +
                                                    std::to_string(c.in[5].nrows()) + " rows");
        }
    }
    // Rows read through a float copy: types without a direct kernel, and every quantized type with a residual.
    const auto deq_side = [&](basalt_dtype t) {
        return !(t == BASALT_DTYPE_F32 || ((t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_Q8_0) && R == 0));
    };
    const bool k_deq = deq_side(kc.type), v_deq = deq_side(vc.type);
    const basalt_dtype k_read = k_deq ? BASALT_DTYPE_F32 : kc.type;
    const basalt_dtype v_read = v_deq ? BASALT_DTYPE_F32 : vc.type;
    const bool split = !(c.out.ne[0] == s.hd_v * s.n_head);
    const float scale = c.fp(op::attention::scale);
    const float cap = c.fp(op::attention::soft_cap);
    const int64_t window = c.ip(op::attention::window);
    const int64_t sinks = c.ip(op::attention::sinks);
    const bool causal = (c.ip(op::attention::flags) & 1) == 0;  // bit 0: not causal (encoder-decoder)
    // Relative position bias by distance (T5): [n_head, 2R + 1], or none.
    const float* bias = n_extra == 6 ? reinterpret_cast<const float*>(c.in[5].data) : nullptr;
    const int64_t bias_r = bias != nullptr ? (c.in[5].ne[1] - 1) / 2 : 0;
    const int64_t group = s.n_head / s.n_kv;
    // Since 1.4 (ip[2] == 1): sink keys at cache positions. Their K rows were rotated at their own positions p when
    // written; past the first sinks + window - 1 positions they must score as if rotated at p + d (d = pos - sinks -
    // window + 1). RoPE is a rotation, so dot(q, R(d) k) = dot(R(-d) q, k): the query is rotated back instead, which
    // works for any stored K type.
    const bool cache_positions = c.ip(op::attention::cache_positions) == 1;
    const bool neox = c.ip(op::attention::rope_mode) == 1;
    const int64_t rot_half = c.ip(op::attention::n_rot) / 2;
    const double rot_base = c.fp(op::attention::freq_base);
    const double rot_scale = c.fp(op::attention::freq_scale);
    const Kernels& k = c.be->kernels;
    // Tasks are (token, KV head, part of the query heads sharing it): each K and V row is read once for the
    // heads of the part, whose independent dot products and exps overlap. Every head's arithmetic (its dot
    // products, online-softmax updates and accumulation order) is that of one head alone. Small batches split a
    // KV head's query heads into parts so every thread gets work.
    const int64_t n_pairs = s.tokens * s.n_kv;
    // One decode token over a short list runs on the calling thread: a parallel region costs more than it saves
    // there (and the workers keep reading the next matmul's weights ahead).
    const bool inline_run = s.tokens == 1 && s.n_vis <= kInlineVisible;
    const int64_t threads = inline_run ? 1 : c.be->pool->size();
    int64_t parts = 1;
    if (n_pairs < 2 * threads) parts = std::min(group, (2 * threads + n_pairs - 1) / n_pairs);
    parts = std::max(parts, (group + kMaxSharedHeads - 1) / kMaxSharedHeads);
    const int64_t per_part = (group + parts - 1) / parts;
    // Cache rows by slot: a plain stride when the cache is one 2-D matrix (as every session's is).
    const bool flat_k = kc.ne[2] == 1 && kc.ne[3] == 1;
    const bool flat_v = vc.ne[2] == 1 && vc.ne[3] == 1;
    const TypeInfo* kti = type_info(kc.type);
    const TypeInfo* vti = type_info(vc.type);
    const int64_t k_row_bytes = k_deq ? 4 * s.hd_k : s.hd_k / kti->block * kti->bytes;
    const int64_t v_row_bytes = v_deq ? 4 * s.hd_v : s.hd_v / vti->block * vti->bytes;
    // Block kernels where the ISA has them for the cache types and head sizes (the same floats as the per-row
    // helpers, see Kernels).
    auto scores_fn = k_read == BASALT_DTYPE_F16   ? k.attn_scores_f16
                     : k_read == BASALT_DTYPE_F32 ? k.attn_scores_f32
                                                  : nullptr;
    auto accum_fn = v_read == BASALT_DTYPE_F16   ? k.attn_accum_f16
                    : v_read == BASALT_DTYPE_F32 ? k.attn_accum_f32
                                                 : nullptr;
    if (s.hd_k % 32 != 0) scores_fn = nullptr;
    if (s.hd_v % 16 != 0) accum_fn = nullptr;
    auto run_tasks = [&](int64_t task_begin, int64_t task_end, int thread) {
        // This thread's work space: accumulators, and per visible pair its K and V rows, scores, weights and
        // rescale factors (grown here, never shrunk).
        AttnScratch& w = c.be->attn_scratch[static_cast<size_t>(thread)];
        const auto pairs = static_cast<size_t>(s.n_vis);
        const size_t per_pair = pairs * static_cast<size_t>(per_part);
        if (w.acc.size() < static_cast<size_t>(per_part * s.hd_v)) w.acc.resize(static_cast<size_t>(per_part * s.hd_v));
        if (w.k_rows.size() < pairs) {
            w.k_rows.resize(pairs);
            w.v_rows.resize(pairs);
            w.positions.resize(pairs);
        }
        if (k_deq && w.k_deq.size() < pairs * static_cast<size_t>(s.hd_k)) w.k_deq.resize(pairs * s.hd_k);
        if (v_deq && w.v_deq.size() < pairs * static_cast<size_t>(s.hd_v)) w.v_deq.resize(pairs * s.hd_v);
        if (w.scores.size() < per_pair) {
            w.scores.resize(per_pair);
            w.weights.resize(per_pair);
            w.rescale.resize(per_pair);
        }
        std::vector<float>& acc = w.acc;
        float* scores = w.scores.data();
        float* weights = w.weights.data();
        float* rescale = w.rescale.data();
        const uint8_t** k_rows = w.k_rows.data();
        const uint8_t** v_rows = w.v_rows.data();
        for (int64_t task = task_begin; task < task_end; ++task) {
            const int64_t pair = task / parts;
            const int64_t t = pair / s.n_kv;
            const int64_t kvh = pair % s.n_kv;
            const int64_t h0 = kvh * group + (task % parts) * per_part;
            const int64_t h1 = std::min(h0 + per_part, (kvh + 1) * group);
            if (h0 >= h1) continue;
            const int nh = static_cast<int>(h1 - h0);
            const int32_t* list = lists + 2 * s.n_vis * qtab[2 * t];
            const int64_t pos = qtab[2 * t + 1];
            const int64_t koff = kvh * k_row_bytes;
            const int64_t voff = kvh * v_row_bytes;
            // The visible pairs' rows. Their K rows are requested at once (a decode step finds the cache in DRAM,
            // behind the weights it read, and the scores do not depend on each other), a long list's first ones
            // only when the block kernels request the rest as they go.
            const int64_t k_ahead = scores_fn != nullptr ? kRequestRows : s.n_vis;
            const int64_t shift = cache_positions ? pos - (sinks + window - 1) : 0;
            w.sink_pairs.clear();
            const int64_t open = rtab != nullptr ? rtab[2 * qtab[2 * t] + 1] : INT64_MAX;
            const int64_t rbase = rtab != nullptr ? rtab[2 * qtab[2 * t]] : 0;
            int64_t n = 0;
            for (int64_t i = 0; i < s.n_vis; ++i) {
                const int64_t slot = list[2 * i];
                const int64_t p = list[2 * i + 1];
                if (slot < 0 || (causal && p > pos)) continue;
                if (window != 0 && !(p > pos - window || p < sinks)) continue;
                if (window != 0 && !causal && p >= pos + window) continue;  // not causal: the window is symmetric
                if (shift > 0 && p < sinks) w.sink_pairs.push_back(n);
                if (bias != nullptr) w.positions[static_cast<size_t>(n)] = static_cast<int32_t>(p);
                const auto ni = static_cast<size_t>(n);
                if (p >= open) {  // in the residual window: F32 rows
                    const int64_t rr = rbase + p % R;
                    k_rows[ni] = c.in[5].row(rr) + 4 * kvh * s.hd_k;
                    v_rows[ni] = c.in[6].row(rr) + 4 * kvh * s.hd_v;
                    ++n;
                    continue;
                }
                const uint8_t* kr;
                if (k_deq) {
                    float* d = w.k_deq.data() + ni * static_cast<size_t>(s.hd_k);
                    dequantize_cache_row(kc, slot, kvh, s.hd_k, d);  // never F32: deq_side
                    kr = reinterpret_cast<const uint8_t*>(d);
                } else {
                    kr = (flat_k ? kc.data + slot * kc.nb[1] : kc.row(slot)) + koff;
                    if (n < k_ahead) prefetch_row(kr, k_row_bytes);
                }
                k_rows[ni] = kr;
                if (v_deq) {
                    float* d = w.v_deq.data() + ni * static_cast<size_t>(s.hd_v);
                    dequantize_cache_row(vc, slot, kvh, s.hd_v, d);  // never F32: deq_side
                    v_rows[ni] = reinterpret_cast<const uint8_t*>(d);
                } else {
                    v_rows[ni] = (flat_v ? vc.data + slot * vc.nb[1] : vc.row(slot)) + voff;
                }
                ++n;
            }
            // Scores: scale x q.k, soft-capped.
            const float* q[kMaxSharedHeads];
            for (int j = 0; j < nh; ++j) q[j] = reinterpret_cast<const float*>(c.in[0].at(0, h0 + j, t));
            if (scores_fn != nullptr) {
                scores_fn(s.hd_k, q, nh, scale, k_rows, n, scores);
            } else {
                for (int j = 0; j < nh; ++j) {
                    for (int64_t i = 0; i < n; ++i) {
                        scores[i * nh + j] = scale * dot_cache(k, k_read, s.hd_k, q[j], k_rows[static_cast<size_t>(i)]);
                    }
                }
            }
            if (!w.sink_pairs.empty()) {  // the sinks' scores at their cache positions (see cache_positions)
                w.q_shifted.resize(static_cast<size_t>(nh * s.hd_k));
                // One angle per rotated pair, shared by every head of the task (same floats as per head).
                for (int64_t i = 0; i < rot_half; ++i) {
                    const double theta =
                        static_cast<double>(shift) * rot_scale * std::pow(rot_base, -2.0 * i / (2.0 * rot_half));
                    const auto co = static_cast<float>(std::cos(theta));
                    const auto si = static_cast<float>(std::sin(theta));
                    const int64_t a = neox ? i : 2 * i;
                    const int64_t b = neox ? i + rot_half : 2 * i + 1;
                    for (int j = 0; j < nh; ++j) {
                        float* qs = w.q_shifted.data() + j * s.hd_k;
                        const float* x = q[j];
                        qs[a] = x[a] * co + x[b] * si;
                        qs[b] = x[b] * co - x[a] * si;
                    }
                }
                for (int j = 0; j < nh; ++j) {
                    float* qs = w.q_shifted.data() + j * s.hd_k;
                    for (int64_t d = 2 * rot_half; d < s.hd_k; ++d) qs[d] = q[j][d];
                }
                for (const int64_t i : w.sink_pairs) {
                    for (int j = 0; j < nh; ++j) {
                        scores[i * nh + j] = scale * dot_cache(k, k_read, s.hd_k, w.q_shifted.data() + j * s.hd_k,
                                                               k_rows[static_cast<size_t>(i)]);
                    }
                }
            }
            if (bias != nullptr) {
                for (int64_t i = 0; i < n; ++i) {
                    const int64_t d = std::clamp<int64_t>(w.positions[static_cast<size_t>(i)] - pos, -bias_r, bias_r);
                    const float* b = bias + (d + bias_r) * s.n_head + h0;
                    for (int j = 0; j < nh; ++j) scores[i * nh + j] += b[j];
                }
            }
            if (cap > 0.0f) {
                for (int64_t i = 0; i < n * nh; ++i) scores[i] = cap * std::tanh(scores[i] / cap);
            }
            // The online softmax, pair by pair in list order: each pair's weight exp(score - running max) and the
            // factor rescaling what came before when the max rises (1: none). The V rows come in meanwhile.
            float m[kMaxSharedHeads];
            float l[kMaxSharedHeads];
            for (int j = 0; j < nh; ++j) {
                m[j] = -INFINITY;
                l[j] = 0;
            }
            const int64_t v_ahead = accum_fn != nullptr ? kRequestRows : n;
            for (int64_t i = 0; i < n; ++i) {
                if (i < v_ahead) prefetch_row(v_rows[static_cast<size_t>(i)], v_row_bytes);
                for (int j = 0; j < nh; ++j) {
                    const float sc = scores[static_cast<size_t>(i * nh + j)];
                    float r = 1.0f;
                    if (sc > m[j]) {
                        r = std::exp(m[j] - sc);  // 0 on the first visible pair
                        l[j] *= r;
                        m[j] = sc;
                    }
                    const float e = std::exp(sc - m[j]);
                    l[j] += e;
                    weights[static_cast<size_t>(i * nh + j)] = e;
                    rescale[static_cast<size_t>(i * nh + j)] = r;
                }
            }
            // acc_j = sum of weight x V row, rescaled where the max rose: every head's arithmetic is that of one
            // head alone with the softmax and accumulation interleaved pair by pair.
            std::fill(acc.begin(), acc.begin() + nh * s.hd_v, 0.0f);
            if (accum_fn != nullptr) {
                accum_fn(s.hd_v, nh, v_rows, n, weights, rescale, nh, acc.data());
            } else {
                for (int64_t i = 0; i < n; ++i) {
                    for (int j = 0; j < nh; ++j) {
                        float* a = acc.data() + j * s.hd_v;
                        const float r = rescale[static_cast<size_t>(i * nh + j)];
                        if (r != 1.0f) {
                            for (int64_t d = 0; d < s.hd_v; ++d) a[d] *= r;
                        }
                        axpy_cache(k, v_read, s.hd_v, weights[static_cast<size_t>(i * nh + j)],
                                   v_rows[static_cast<size_t>(i)], a);
                    }
                }
            }
            for (int j = 0; j < nh; ++j) {
                const int64_t h = h0 + j;
                float* y = split ? reinterpret_cast<float*>(c.out.at(0, h, t))
                                 : reinterpret_cast<float*>(c.out.row(t)) + h * s.hd_v;
                float inv = l[j] > 0.0f ? 1.0f / l[j] : 0.0f;
                if (sink != nullptr && l[j] > 0.0f) {
                    // The sink's term in the denominator, every weight rescaled to the larger of the two maxima.
                    const float sk = sink[h];
                    const float mx = std::max(m[j], sk);
                    const float f = std::exp(m[j] - mx);
                    inv = f / (l[j] * f + std::exp(sk - mx));
                }
                const float* a = acc.data() + j * s.hd_v;
                for (int64_t d = 0; d < s.hd_v; ++d) y[d] = a[d] * inv;
            }
        }
    };
    if (c.be->attn_scratch.size() < static_cast<size_t>(c.be->pool->size())) {
        c.be->attn_scratch.resize(static_cast<size_t>(c.be->pool->size()));
    }
    if (inline_run) {
        run_tasks(0, n_pairs * parts, 0);
    } else {  // spans of tasks per thread: claims stay on each thread's own cache line until it steals
        c.be->pool->parallel_spans(n_pairs * parts, 1, 1, run_tasks);
    }
}

void check_kv_write(const NodeCtx& c) {
    if (!cache_type_ok(c.in[1].type)) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "cache type " + type_name(c.in[1].type) + " is not supported (" + kCacheTypes + ")");
    }
    sdk::contract::kv_write(c);
    check_per_channel(c, c.in[1], "cache");
    if (c.n_in == 4) c.fail(BASALT_ERR_INVALID_ARGUMENT, "has 4 inputs: 3, or 5 with a residual window");
    if (c.n_in == 3 && blocks::kivi_per_channel(c.in[1].type)) {
        c.fail(BASALT_ERR_UNSUPPORTED, "cache type " + type_name(c.in[1].type) +
                                           " is quantized per channel over 32 slots: it needs a residual window");
    }
    if (c.n_in == 5) {
        if (c.ip(op::kv_write::residual) < 1 ||
            (blocks::kivi_per_channel(c.in[1].type) && c.ip(op::kv_write::residual) % 32 != 0)) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT,
                   "residual window ip[0] = " + std::to_string(c.ip(op::kv_write::residual)) +
                       (blocks::kivi_per_channel(c.in[1].type) ? " (a multiple of 32)" : ""));
        }
        c.expect_type(c.in[3], "residual", BASALT_DTYPE_F32);
        c.expect_type(c.in[4], "residual rows", BASALT_DTYPE_I32);
        if (c.in[3].ne[0] != c.in[1].ne[0] || !c.in[3].rows_packed()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT,
                   "residual " + c.in[3].shape() + " is not packed rows like the cache " + c.in[1].shape());
        }
        if (c.in[4].nelements() != c.in[0].nrows() || !c.in[4].rows_packed()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "residual rows " + c.in[4].shape() + " must be one per row of input 0");
        }
    }
}

namespace {

void write_cache_row(NodeCtx& c, const TensorView& cache, const float* x, int64_t slot) {
    if (cache.type == BASALT_DTYPE_F16) {
        c.be->kernels.to_f16(cache.ne[0], x, reinterpret_cast<uint16_t*>(cache.row(slot)));
    } else {
        quantize_row(cache.type, x, cache.row(slot), cache.ne[0]);
    }
}

}  // namespace

void run_kv_write(NodeCtx& c) {
    const TensorView& cache = c.out;
    const auto* slots = reinterpret_cast<const int32_t*>(c.in[2].data);
    const int64_t rows = c.in[0].nrows();
    const int64_t n_slots = cache.nrows();
    for (int64_t i = 0; i < rows; ++i) {
        if (slots[i] < 0 || slots[i] >= n_slots) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "slot " + std::to_string(slots[i]) + " of row " + std::to_string(i) +
                                                    " is outside the cache's " + std::to_string(n_slots) + " slots");
        }
    }
    if (c.n_in == 5) {
        // Residual window: every row goes to its F32 residual row; a unit's last row seals the unit into the cache.
        const int64_t R = c.ip(op::kv_write::residual);
        const TensorView& res = c.in[3];
        const auto* rrows = reinterpret_cast<const int32_t*>(c.in[4].data);
        const int64_t n_res = res.nrows();
        const int64_t n = cache.ne[0];
        for (int64_t i = 0; i < rows; ++i) {
            const int64_t rr = rrows[i];
            if (rr < 0 || rr - rr % R + R > n_res) {
                c.fail(BASALT_ERR_INVALID_ARGUMENT, "residual row " + std::to_string(rr) + " of row " +
                                                        std::to_string(i) + " is outside the residual's " +
                                                        std::to_string(n_res) + " rows (units of " + std::to_string(R) +
                                                        ")");
            }
            std::memcpy(res.row(rr), c.in[0].frow(i), static_cast<size_t>(4 * n));
            if (rr % R != R - 1) continue;
            const int64_t slot0 = slots[i] - (R - 1);
            const int64_t base = rr - (R - 1);
            if (slot0 < 0 || (blocks::kivi_per_channel(cache.type) && slot0 % 32 != 0)) {
                c.fail(BASALT_ERR_INVALID_ARGUMENT, "the unit ending at slot " + std::to_string(slots[i]) +
                                                        " does not start at a slot aligned to 32");
            }
            if (blocks::kivi_per_channel(cache.type)) {
                for (int64_t g = 0; g < R; g += 32) {
                    blocks::kivi_quantize_group(cache.type, reinterpret_cast<const float*>(res.row(base + g)),
                                                res.nb[1] / 4, cache.data + (slot0 + g) * cache.nb[1], n);
                }
            } else {
                for (int64_t j = 0; j < R; ++j) {
                    write_cache_row(c, cache, reinterpret_cast<const float*>(res.row(base + j)), slot0 + j);
                }
            }
        }
        return;
    }
    // In order, so a slot written twice keeps the later row (as a sequential write would).
    for (int64_t i = 0; i < rows; ++i) write_cache_row(c, cache, c.in[0].frow(i), slots[i]);
}

}  // namespace basalt::cpu
