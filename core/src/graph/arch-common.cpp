#include <cmath>

#include "graph/arch-table.hpp"
#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

std::string show_shape(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

// Dimensions without trailing 1s: a [64] norm stored as [64, 1] is the same tensor.
std::vector<int64_t> trimmed(std::vector<int64_t> v) {
    while (v.size() > 1 && v.back() == 1) v.pop_back();
    return v;
}

}  // namespace

int32_t ForwardContext::weight(const std::string& name, std::initializer_list<int64_t> want) {
    const int32_t t = weight(name);
    const basalt_tensor& have = g.at(t);
    const std::vector<int64_t> have_ne(have.ne, have.ne + have.n_dims), want_ne(want);
    if (trimmed(have_ne) != trimmed(want_ne)) {
        fail(BASALT_ERR_FORMAT, "{}: tensor '{}' has shape {}, the {} graph needs {}", weights.source(), name,
             show_shape(have_ne), hp.arch, show_shape(want_ne));
    }
    return t;
}

int32_t ForwardContext::weight(const std::string& name) {
    if (auto it = declared_.find(name); it != declared_.end()) return it->second;
    const int32_t t = weight(weights.require(name, hp.arch));
    declared_[name] = t;
    return t;
}

int32_t ForwardContext::weight(const WeightRef& ref) {
    const std::string key = ref.name + "@" + std::to_string(ref.offset) + "/" + std::to_string(ref.ne.back());
    if (auto it = declared_.find(key); it != declared_.end()) return it->second;
    for (int64_t d : ref.ne) {
        if (d <= 0) {
            fail(BASALT_ERR_FORMAT, "{}: tensor '{}' has a zero-sized dimension (shape {}): the {} graph cannot use it",
                 weights.source(), ref.name, show_shape(ref.ne), hp.arch);
        }
    }
    const int32_t t = g.tensor(ref.type, ref.ne, ref.name, ref.buffer, ref.offset);
    declared_[key] = t;
    return t;
}

int32_t rms_norm(ForwardContext& c, int32_t x, const std::string& weight, const std::string& name) {
    const auto& t = c.g.at(x);
    const std::vector<int64_t> shape(t.ne, t.ne + t.n_dims);
    int32_t n = c.g.tensor(BASALT_DTYPE_F32, shape, name + ".norm");
    c.g.node(BASALT_OP_RMS_NORM, name + ".norm", n, {x}, {{op::rms_norm::eps, c.hp.norm_eps}});
    int32_t out = c.g.tensor(BASALT_DTYPE_F32, shape, name);
    c.g.node(BASALT_OP_MUL, name, out, {n, c.weight(weight, {t.ne[0]})});
    return out;
}

namespace {

// Reshape by copy: same elements, new shape (the op set has no aliasing view of intermediates).
int32_t reshape(ForwardContext& c, int32_t x, std::initializer_list<int64_t> ne, const std::string& name) {
    return c.g.op(BASALT_OP_COPY, name, BASALT_DTYPE_F32, ne, {x});
}

int32_t linear(ForwardContext& c, int32_t x, const std::string& w, int64_t n_out, const std::string& name,
               const std::string& bias = {}) {
    const int32_t wt = c.weight(w, {c.g.ne(x, 0), n_out});
    int32_t y = c.g.op(BASALT_OP_MATMUL, name, BASALT_DTYPE_F32, {n_out, c.n_tokens}, {wt, x});
    if (!bias.empty())
        y = c.g.op(BASALT_OP_ADD, name + ".bias", BASALT_DTYPE_F32, {n_out, c.n_tokens}, {y, c.weight(bias, {n_out})});
    return y;
}

}  // namespace

int32_t attention_block(ForwardContext& c, int il, int32_t h, const AttentionOptions& o) {
    const auto& hp = c.hp;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens;
    const int64_t hd_k = hp.head_dim_k, hd_v = hp.head_dim_v;
    const int64_t nq = hp.n_head * hd_k, nk = hp.n_head_kv * hd_k, nv = hp.n_head_kv * hd_v;

    int32_t q = -1, k = -1, v = -1;
    if (o.fused_qkv) {
        // One [n_embd, q | k | v] matrix: three row ranges of it, each its own matmul (no copy of the weight).
        const auto qkv = c.weights.require(p + "attn_qkv.weight", hp.arch);
        ModelWeights::expect_shape(qkv, {hp.n_embd, nq + nk + nv}, c.weights.source());
        auto part = [&](int64_t first, int64_t n, const char* name) {
            return c.g.op(BASALT_OP_MATMUL, p + name, BASALT_DTYPE_F32, {n, T},
                          {c.weight(ModelWeights::rows(qkv, first, n)), h});
        };
        q = part(0, nq, "q");
        k = part(nq, nk, "k");
        v = part(nq + nk, nv, "v");
    } else {
        q = linear(c, h, p + "attn_q.weight", nq, p + "q", o.bias ? p + "attn_q.bias" : "");
        k = linear(c, h, p + "attn_k.weight", nk, p + "k", o.bias ? p + "attn_k.bias" : "");
        v = linear(c, h, p + "attn_v.weight", nv, p + "v", o.bias ? p + "attn_v.bias" : "");
    }
    if (o.qk_norm_full) {
        q = rms_norm(c, q, p + "attn_q_norm.weight", p + "q.normed");
        k = rms_norm(c, k, p + "attn_k_norm.weight", p + "k.normed");
    }
    q = reshape(c, q, {hd_k, hp.n_head, T}, p + "q.heads");
    k = reshape(c, k, {hd_k, hp.n_head_kv, T}, p + "k.heads");
    if (o.qk_norm) {
        q = rms_norm(c, q, p + "attn_q_norm.weight", p + "q.normed");
        k = rms_norm(c, k, p + "attn_k_norm.weight", p + "k.normed");
    }
    if (o.rope) {
        q = rope(c, q, hp.n_head, o.rope_mode, o.rope_base, o.rope_scaled, p + "q.rope");
        k = rope(c, k, hp.n_head_kv, o.rope_mode, o.rope_base, o.rope_scaled, p + "k.rope");
    }
    if (c.attn_temp >= 0) {
        // The attention temperature, after rope and before the scores as llama.cpp applies it: every query row of
        // token t times its factor. MOE_COMBINE over one "expert" is that product (0 + f * q, exact).
        const int32_t rows = reshape(c, q, {nq, 1, T}, p + "q.temp_rows");
        const int32_t scaled =
            c.g.op(BASALT_OP_MOE_COMBINE, p + "q.temp", BASALT_DTYPE_F32, {nq, T}, {rows, c.attn_temp});
        q = reshape(c, scaled, {hd_k, hp.n_head, T}, p + "q.temp_heads");
    }
    const int32_t k_rows = reshape(c, k, {nk, T}, p + "k.rows");
    const float scale = o.scale != 0.f ? o.scale : 1.0f / std::sqrt(static_cast<float>(hd_k));
    if (c.encoder_pass) {
        // An embedding pass of a decoder-family model (docs/embeddings.md): no cache, each input attends over its
        // own K/V rows; causal for decoder embedders (Qwen3-Embedding), both ways for bidirectional ones, whose
        // sliding window is then symmetric (ATTENTION's window with flags bit 0).
        const int32_t att = c.g.op(BASALT_OP_ATTENTION, p + "attention", BASALT_DTYPE_F32, {hp.n_head * hd_v, T},
                                   {q, k_rows, v, c.attn_lists, c.attn_query},
                                   {{op::attention::window, o.window},
                                    {op::attention::flags, hp.embed_causal ? 0 : 1},
                                    {op::attention::scale, scale},
                                    {op::attention::soft_cap, o.soft_cap}});
        return linear(c, att, p + "attn_output.weight", hp.n_embd, p + "attn_out");
    }
    const auto il_u = static_cast<size_t>(il);
    const bool windowed = il_u < c.window_storage.size() && c.window_storage[il_u] != 0;
    const int32_t slots = windowed ? c.kv_slots_window : c.kv_slots;
    const int32_t lists = windowed ? c.attn_lists_window : c.attn_lists;
    write_kv(c, il_u, k_rows, v, slots, p);
    const float freq_scale = o.rope_scaled ? hp.rope_freq_scale : 1.0f;
    const int32_t sinks = o.sink_logits ? c.weight(p + "attn_sinks.weight", {hp.n_head}) : -1;
    if (c.stream_window != 0 && o.sink_logits) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{}: the streaming cache (KV policy 'sinks') does not compose with this model's learned attention-sink "
             "logits",
             c.weights.source());
    }
    if (c.stream_window != 0 && o.rope && hp.rope_scaling.needs_scaled_op()) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{}: the streaming cache (KV policy 'sinks') re-rotates sink keys with plain rope (base and linear "
             "scale only); this model's rope scaling ({}) is not implemented there",
             c.weights.source(), hp.rope_description);
    }
    const int32_t att = c.stream_window != 0
                            ? c.g.op(BASALT_OP_ATTENTION, p + "attention", BASALT_DTYPE_F32, {hp.n_head * hd_v, T},
                                     {q, c.k_cache[il_u], c.v_cache[il_u], lists, c.attn_query},
                                     {{op::attention::window, c.stream_window},
                                      {op::attention::sinks, c.stream_sinks},
                                      {op::attention::cache_positions, o.rope ? 1 : 0},
                                      {op::attention::rope_mode, o.rope_mode},
                                      {op::attention::n_rot, hp.n_rot},
                                      {op::attention::scale, scale},
                                      {op::attention::soft_cap, o.soft_cap},
                                      {op::attention::freq_base, o.rope_base},
                                      {op::attention::freq_scale, freq_scale}})
                            : attend(c, il_u, q, lists, hp.n_head * hd_v, o.window, scale, o.soft_cap, p, sinks);
    return linear(c, att, p + "attn_output.weight", hp.n_embd, p + "attn_out",
                  o.out_bias ? p + "attn_output.bias" : "");
}

int32_t rope(ForwardContext& c, int32_t x, int64_t n_heads, int mode, float base, bool scaled, const std::string& name,
             uint32_t n_rot_layer) {
    const auto& hp = c.hp;
    const RopeScaling& rs = hp.rope_scaling;
    const int64_t hd = c.g.ne(x, 0), T = c.n_tokens;
    const auto n_rot = static_cast<int32_t>(n_rot_layer != 0 ? n_rot_layer : hp.n_rot);
    if (!rs.needs_scaled_op()) {
        return c.g.op(BASALT_OP_ROPE, name, BASALT_DTYPE_F32, {hd, n_heads, T}, {x, c.positions},
                      {{op::rope::mode, mode},
                       {op::rope::n_rot, n_rot},
                       {op::rope::freq_base, base},
                       {op::rope::freq_scale, scaled ? hp.rope_freq_scale : 1.0f}});
    }
    // Frequency factors: Llama 3's rope_freqs, else longrope's long factors when the session's context passes the
    // original one (llama.cpp chooses by context size, not by position), else its short ones.
    int32_t factors = -1;
    if (scaled && !rs.freqs.empty()) {
        factors = c.weight(rs.freqs, {n_rot / 2});
    } else if (scaled && rs.longrope_tensors) {
        factors =
            c.weight(c.n_ctx > rs.n_ctx_orig ? "rope_factors_long.weight" : "rope_factors_short.weight", {n_rot / 2});
    }
    auto emit = [&](std::initializer_list<int32_t> inputs) {
        return c.g.op(BASALT_OP_ROPE, name, BASALT_DTYPE_F32, {hd, n_heads, T}, inputs,
                      {{op::rope::mode, mode},
                       {op::rope::n_rot, n_rot},
                       {op::rope::n_ctx_orig, static_cast<int32_t>(rs.n_ctx_orig)},
                       {op::rope::freq_base, base},
                       {op::rope::freq_scale, scaled ? hp.rope_freq_scale : 1.0f},
                       {op::rope::ext_factor, rs.ext_factor},
                       {op::rope::attn_factor, rs.attn_factor},
                       {op::rope::beta_fast, rs.beta_fast},
                       {op::rope::beta_slow, rs.beta_slow}});
    };
    return factors >= 0 ? emit({x, c.positions, factors}) : emit({x, c.positions});
}

void write_kv(ForwardContext& c, size_t il, int32_t k_rows, int32_t v_rows, int32_t slots, const std::string& p) {
    if (c.kv_residual == 0) {
        c.g.node(BASALT_OP_KV_WRITE, p + "k.cache_write", c.k_cache[il], {k_rows, c.k_cache[il], slots});
        c.g.node(BASALT_OP_KV_WRITE, p + "v.cache_write", c.v_cache[il], {v_rows, c.v_cache[il], slots});
        return;
    }
    c.g.node(BASALT_OP_KV_WRITE, p + "k.cache_write", c.k_cache[il],
             {k_rows, c.k_cache[il], slots, c.k_residual[il], c.kv_residual_rows},
             {{op::kv_write::residual, c.kv_residual}});
    c.g.node(BASALT_OP_KV_WRITE, p + "v.cache_write", c.v_cache[il],
             {v_rows, c.v_cache[il], slots, c.v_residual[il], c.kv_residual_rows},
             {{op::kv_write::residual, c.kv_residual}});
}

int32_t attend(ForwardContext& c, size_t il, int32_t q, int32_t lists, int64_t n_out, int32_t window, float scale,
               float cap, const std::string& p, int32_t sink_logits) {
    if (sink_logits >= 0) {
        // ATTENTION's flags bit 1 (ABI 1.6): the sink logits are the last input; a node has at most 8 inputs, so a
        // residual window (8 already) cannot take them.
        if (c.kv_residual != 0) {
            fail(BASALT_ERR_UNSUPPORTED,
                 "{}: a KV residual window does not compose with this model's learned attention-sink logits",
                 c.weights.source());
        }
        return c.g.op(BASALT_OP_ATTENTION, p + "attention", BASALT_DTYPE_F32, {n_out, c.n_tokens},
                      {q, c.k_cache[il], c.v_cache[il], lists, c.attn_query, sink_logits},
                      {{op::attention::window, window},
                       {op::attention::flags, 2},
                       {op::attention::scale, scale},
                       {op::attention::soft_cap, cap}});
    }
    if (c.kv_residual == 0) {
        return c.g.op(BASALT_OP_ATTENTION, p + "attention", BASALT_DTYPE_F32, {n_out, c.n_tokens},
                      {q, c.k_cache[il], c.v_cache[il], lists, c.attn_query},
                      {{op::attention::window, window}, {op::attention::scale, scale}, {op::attention::soft_cap, cap}});
    }
    return c.g.op(
        BASALT_OP_ATTENTION, p + "attention", BASALT_DTYPE_F32, {n_out, c.n_tokens},
        {q, c.k_cache[il], c.v_cache[il], lists, c.attn_query, c.k_residual[il], c.v_residual[il], c.attn_residual},
        {{op::attention::window, window},
         {op::attention::residual, c.kv_residual},
         {op::attention::scale, scale},
         {op::attention::soft_cap, cap}});
}

int32_t ffn_gated(ForwardContext& c, int il, int32_t h, basalt_op act) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens;
    const int32_t gate = linear(c, h, p + "ffn_gate.weight", c.hp.n_ff, p + "ffn_gate");
    const int32_t up = linear(c, h, p + "ffn_up.weight", c.hp.n_ff, p + "ffn_up");
    const int32_t a = c.g.op(act, p + "ffn_act", BASALT_DTYPE_F32, {c.hp.n_ff, T}, {gate, up});
    return linear(c, a, p + "ffn_down.weight", c.hp.n_embd, p + "ffn_down");
}

int32_t ffn_moe(ForwardContext& c, int il, int32_t h, const MoeOptions& o) {
    const auto& hp = c.hp;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens, E = hp.n_expert, k = hp.n_expert_used, F = hp.n_ff;
    const int32_t router =
        linear(c, h, p + "ffn_gate_inp.weight", E, p + "moe_router", o.biases ? p + "ffn_gate_inp.bias" : "");
    const int32_t probs =
        c.g.op(BASALT_OP_SOFTMAX, p + "moe_probs", BASALT_DTYPE_F32, {E, T}, {router}, {{op::softmax::scale, 1.f}});
    const auto il_u = static_cast<size_t>(il);
    const auto k32 = static_cast<int32_t>(k);
    int32_t ids = -1, w = -1;
    if (c.moe_router.capacity) {
        // Capacity per pass of T rows; a dropped assignment keeps a valid expert id and gets weight 0.
        const int32_t cap = c.moe_router.expert_capacity(T, k, E);
        const int32_t over = c.moe_router.reroute ? 1 : 0;
        ids = c.g.op(BASALT_OP_MOE_ROUTE, p + "moe_route", BASALT_DTYPE_I32, {k, T}, {probs},
                     {{op::moe_route::k, k32},
                      {op::moe_route::capacity, cap},
                      {op::moe_route::overflow, over},
                      {op::moe_route::output, 0}});
        w = c.g.op(BASALT_OP_MOE_ROUTE, p + "moe_weights", BASALT_DTYPE_F32, {k, T}, {probs},
                   {{op::moe_route::k, k32},
                    {op::moe_route::capacity, cap},
                    {op::moe_route::overflow, over},
                    {op::moe_route::output, 1}});
        if (il_u < c.moe_status_out.size() && c.moe_status_out[il_u] >= 0) {
            c.g.node(BASALT_OP_MOE_ROUTE, p + "moe_status", c.moe_status_out[il_u], {probs},
                     {{op::moe_route::k, k32},
                      {op::moe_route::capacity, cap},
                      {op::moe_route::overflow, over},
                      {op::moe_route::output, 2}});
        }
    } else {
        ids = c.g.op(BASALT_OP_TOPK, p + "moe_topk", BASALT_DTYPE_I32, {k, T}, {probs}, {{op::topk::k, k32}});
        w = c.g.op(BASALT_OP_GATHER, p + "moe_weights", BASALT_DTYPE_F32, {k, T}, {probs, ids},
                   {{op::gather::renormalise, 1}});
    }
    if (il_u < c.moe_ids_out.size() && c.moe_ids_out[il_u] >= 0)
        c.g.node(BASALT_OP_COPY, p + "moe_ids_record", c.moe_ids_out[il_u], {ids});
    const int64_t D = hp.n_embd;
    // An expert bias [n, E]: the selected experts' rows (GET_ROWS at the ids) added to the expert outputs [n, k, T].
    auto expert_bias = [&](int32_t y, const std::string& name, int64_t n) {
        if (!o.biases) return y;
        const int32_t rows = c.g.op(BASALT_OP_GET_ROWS, p + name + ".bias_rows", BASALT_DTYPE_F32, {n, k, T},
                                    {c.weight(p + "ffn_" + name + "_exps.bias", {n, E}), ids});
        return c.g.op(BASALT_OP_ADD, p + "moe_" + name + ".bias", BASALT_DTYPE_F32, {n, k, T}, {y, rows});
    };
    const int32_t gate = expert_bias(c.g.op(BASALT_OP_MOE_MATMUL, p + "moe_gate", BASALT_DTYPE_F32, {F, k, T},
                                            {c.weight(p + "ffn_gate_exps.weight", {D, F, E}), h, ids}),
                                     "gate", F);
    const int32_t up = expert_bias(c.g.op(BASALT_OP_MOE_MATMUL, p + "moe_up", BASALT_DTYPE_F32, {F, k, T},
                                          {c.weight(p + "ffn_up_exps.weight", {D, F, E}), h, ids}),
                                   "up", F);
    const int32_t a = o.clamped_swiglu
                          ? c.g.op(BASALT_OP_SWIGLU_OAI, p + "moe_act", BASALT_DTYPE_F32, {F, k, T}, {gate, up},
                                   {{op::swiglu_oai::alpha, o.alpha}, {op::swiglu_oai::limit, o.limit}})
                          : c.g.op(BASALT_OP_SWIGLU, p + "moe_act", BASALT_DTYPE_F32, {F, k, T}, {gate, up});
    const int32_t down = expert_bias(c.g.op(BASALT_OP_MOE_MATMUL, p + "moe_down", BASALT_DTYPE_F32, {hp.n_embd, k, T},
                                            {c.weight(p + "ffn_down_exps.weight", {F, D, E}), a, ids}),
                                     "down", D);
    return c.g.op(BASALT_OP_MOE_COMBINE, p + "moe_out", BASALT_DTYPE_F32, {hp.n_embd, T}, {down, w});
}

int32_t steer_hook(ForwardContext& c, int il, int32_t x) {
    const auto il_u = static_cast<size_t>(il);
    if (c.steer_rows >= 0 && il_u < c.steer_tables.size() && c.steer_tables[il_u] >= 0) {
        x = c.g.op(BASALT_OP_STEER, "blk." + std::to_string(il) + ".steer", BASALT_DTYPE_F32, {c.hp.n_embd, c.n_tokens},
                   {x, c.steer_tables[il_u], c.steer_rows});
    }
    if (il_u < c.observe_out.size() && c.observe_out[il_u] >= 0)
        c.g.node(BASALT_OP_COPY, "blk." + std::to_string(il) + ".observe", c.observe_out[il_u], {x});
    return x;
}

int32_t select_output_rows(ForwardContext& c, int32_t x) {
    return c.g.op(BASALT_OP_GET_ROWS, "output.rows", BASALT_DTYPE_F32, {c.hp.n_embd, c.n_outputs}, {x, c.out_rows});
}

void output_head(ForwardContext& c, int32_t x) {
    const std::string w = c.has_weight("output.weight") ? "output.weight" : "token_embd.weight";
    const int32_t wt = c.weight(w, {c.hp.n_embd, c.hp.n_vocab});
    const float cap = c.hp.final_soft_cap;
    if (cap <= 0.f) {
        c.g.node(BASALT_OP_MATMUL, "output", c.logits, {wt, x});
        return;
    }
    // cap * tanh(logits / cap) in llama.cpp's order of operations: scale by 1/cap, tanh, scale by cap.
    const auto V = static_cast<int64_t>(c.hp.n_vocab);
    int32_t l = c.g.op(BASALT_OP_MATMUL, "output.raw", BASALT_DTYPE_F32, {V, c.n_outputs}, {wt, x});
    l = c.g.op(BASALT_OP_SCALE, "output.cap_in", BASALT_DTYPE_F32, {V, c.n_outputs}, {l},
               {{op::scale::factor, 1.f / cap}});
    l = c.g.op(BASALT_OP_TANH, "output.tanh", BASALT_DTYPE_F32, {V, c.n_outputs}, {l});
    c.g.node(BASALT_OP_SCALE, "output", c.logits, {l}, {{op::scale::factor, cap}});
}

bool embedding_out(ForwardContext& c, int32_t x) {
    if (!c.encoder_pass || c.embd_out < 0) return false;
    const int64_t E = c.hp.n_embd, T = c.n_tokens;
    int32_t y = rms_norm(c, x, "output_norm.weight", "output_norm");
    // Sentence-transformers' dense layers (EmbeddingGemma: dense_2 then dense_3), which llama.cpp applies after
    // pooling. Pooling (a mean, or one row) commutes with these affine maps, so they run on every row here and the
    // host pools the result.
    if (c.has_weight("dense_2.weight")) {
        const auto d2 = c.weights.require("dense_2.weight", c.hp.arch);
        const int64_t mid = d2.ne.size() >= 2 ? d2.ne[1] : 1;
        y = c.g.op(BASALT_OP_MATMUL, "dense_2", BASALT_DTYPE_F32, {mid, T}, {c.weight("dense_2.weight", {E, mid}), y});
        if (c.has_weight("dense_2.bias")) {
            y = c.g.op(BASALT_OP_ADD, "dense_2.bias", BASALT_DTYPE_F32, {mid, T}, {y, c.weight("dense_2.bias", {mid})});
        }
    }
    if (c.has_weight("dense_3.weight")) {
        y = c.g.op(BASALT_OP_MATMUL, "dense_3", BASALT_DTYPE_F32, {E, T},
                   {c.weight("dense_3.weight", {c.g.ne(y, 0), E}), y});
    }
    c.g.node(BASALT_OP_COPY, "embd", c.embd_out, {y});
    return true;
}

void build_forward(ForwardContext& c) {
    arch_builder(c.hp).build(c);
}

}  // namespace basalt
