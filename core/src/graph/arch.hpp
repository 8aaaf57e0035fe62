// Architecture graph builders: each turns a model and a ragged batch into an op graph (they emit ops only;
// they never compute). arch-common.cpp holds the pieces families share (norms, attention, FFN, output head).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph-builder.hpp"
#include "graph/moe-router.hpp"
#include "model/model-hparams.hpp"
#include "model/model-weights.hpp"

namespace basalt {

// Everything a builder needs for one forward pass. Input and output tensors live in the session's IO buffer
// and are declared by the session before the builder runs.
struct ForwardContext {
    ForwardContext(GraphBuilder& graph, const ModelHparams& hparams, const ModelWeights& w)
        : g(graph), hp(hparams), weights(w) {}
    GraphBuilder& g;
    const ModelHparams& hp;
    const ModelWeights& weights;
    int64_t n_tokens = 0;          // T
    uint32_t n_ctx = 0;            // the session's context (longrope: long factors past the original context)
    int64_t n_outputs = 0;         // rows with logits
    int32_t tokens = -1;           // I32 [T]
    int32_t positions = -1;        // I32 [T]
    int32_t attn_temp = -1;        // F32 [1, T]: each row's query factor (attention temperature); -1: none
    int32_t kv_slots = -1;         // I32 [T]: cache slot of each token
    int32_t attn_lists = -1;       // I32 [2 * n_vis, n_lists]: (slot, position) pairs per sequence
    int32_t attn_query = -1;       // I32 [2, T]: (list, position) per token
    int32_t out_rows = -1;         // I32 [n_outputs]: batch rows whose logits are produced
    int32_t logits = -1;           // F32 [n_vocab, n_outputs]
    std::vector<int32_t> k_cache;  // per layer: [n_embd_k_gqa, n_slots] (window storage: [.., n_window_slots])
    std::vector<int32_t> v_cache;  // per layer: [n_embd_v_gqa, n_slots]
    // Sliding-window layers with their own (capped) K/V storage: their slots and visible lists.
    int32_t kv_slots_window = -1;         // I32 [T]
    int32_t attn_lists_window = -1;       // I32 [2 * n_vis_window, n_lists]
    std::vector<uint8_t> window_storage;  // per layer (empty: none): non-zero when the layer uses the two above
    // Streaming cache (attention sinks): every layer's attention masks to stream_sinks + stream_window and gives the
    // kept keys cache positions (ATTENTION ip[2]); 0: off.
    int32_t stream_sinks = 0;
    int32_t stream_window = 0;
    // Residual window of quantized K/V (kv_residual R > 0): each token's F32 residual row, per list (base row,
    // open position), and per layer the F32 residual storage of K and V [n_embd_{k,v}_gqa, n_seq_max * R].
    int32_t kv_residual = 0;
    int32_t kv_residual_rows = -1;    // I32 [T]
    int32_t attn_residual = -1;       // I32 [2, n_lists]
    std::vector<int32_t> k_residual;  // per layer
    std::vector<int32_t> v_residual;  // per layer
    // Activation steering (absent when no row of the step is steered): each row's slot, and per layer the table of
    // slot vectors [n_embd, n_slots] added after that layer's output (-1: the layer is not steered).
    int32_t steer_rows = -1;            // I32 [T]
    std::vector<int32_t> steer_tables;  // per layer
    std::vector<int32_t> observe_out;   // per layer: F32 [n_embd, T] host-visible copy of the layer's output, or -1
    // MoE routing (docs/moe.md): dropless or under expert capacity, and per layer the host-visible routing record
    // (I32 [k, T] expert ids; status as MOE_ROUTE's ip[3] = 2 in capacity mode) when statistics are collected.
    MoeRouter moe_router;
    std::vector<int32_t> moe_ids_out;     // per layer, or empty / -1: not recorded
    std::vector<int32_t> moe_status_out;  // per layer (capacity mode), or empty / -1
    // Encoder-decoder models (t5). The encoder pass (encoder_pass) attends over its own K/V rows: attn_lists pairs
    // are (batch row, position) and no cache is written but the cross storage. The decoder pass reads it.
    bool encoder_pass = false;
    int32_t rel_index = -1;        // I32 [2R + 1]: position-bias bucket of each distance -R..R (clamped)
    int32_t cross_slots = -1;      // encoder pass: I32 [T], the cross-storage row of each token's K/V
    int32_t cross_lists = -1;      // decoder pass: I32 [2 * n_vis_cross, n_lists], (row, position) pairs
    std::vector<int32_t> cross_k;  // per decoder layer: [n_embd_k_gqa, n_cross_rows]
    std::vector<int32_t> cross_v;  // per decoder layer: [n_embd_v_gqa, n_cross_rows]
    // Embeddings (docs/embeddings.md): the final hidden rows F32 [n_embd, T] (encoder-only models write every row
    // here), and with a rank head the rows it reads (I32 [n_lists]: one per sequence) and its scores F32
    // [n_cls_out, n_lists]; -1: not asked for.
    int32_t embd_out = -1;
    int32_t pool_rows = -1;
    int32_t rank_out = -1;
    // Hybrid recurrent models: each token's (state slot, fresh) I32 [2, T], and per layer the per-sequence state
    // (-1: an attention layer): conv F32 [conv_state_floats, n_seq_max], delta-rule F32 [delta_state_floats, ...].
    int32_t state_rows = -1;
    std::vector<int32_t> conv_state;
    std::vector<int32_t> delta_state;

    // A graph tensor for a weight (declared once per graph). Throws Error(FORMAT) naming the file and the tensor when
    // it is missing or has a zero-sized dimension, or, given `want`, when its shape is another (trailing 1s aside).
    int32_t weight(const std::string& name);
    int32_t weight(const std::string& name, std::initializer_list<int64_t> want);
    int32_t weight(const WeightRef& ref);
    bool has_weight(const std::string& name) const { return weights.find(name).has_value(); }

  private:
    std::unordered_map<std::string, int32_t> declared_;
};

// KV_WRITE of layer il's K and V rows into its cache (through the residual window when the session has one).
void write_kv(ForwardContext& c, size_t il, int32_t k_rows, int32_t v_rows, int32_t slots, const std::string& p);
// ATTENTION of layer il over its cache: out F32 [n_out, T]; adds the residual inputs when the session has them, and
// learned sink logits F32 [n_head] when `sink_logits` >= 0 (gpt-oss; refused with a residual window).
int32_t attend(ForwardContext& c, size_t il, int32_t q, int32_t lists, int64_t n_out, int32_t window, float scale,
               float cap, const std::string& p, int32_t sink_logits = -1);

// Options of the shared attention block.
struct AttentionOptions {
    int rope_mode = 0;  // 0 pairs, 1 neox
    float rope_base = 10000.f;
    int32_t window = 0;    // sliding window (0: none)
    bool qk_norm = false;  // gemma3: RMS norm of q and k per head
    bool bias = false;     // qwen2: q/k/v biases
    bool rope = true;
    bool fused_qkv = false;     // phi3: one attn_qkv.weight [n_embd, q | k | v] (sliced, not copied)
    bool rope_scaled = true;    // apply the model's rope scaling (false: gemma3's sliding-window layers)
    float scale = 0.f;          // score = scale * dot(q, k); 0: 1/sqrt(head_dim)
    float soft_cap = 0.f;       // gemma2: score = soft_cap * tanh(score / soft_cap); 0: none
    bool qk_norm_full = false;  // olmo2: RMS norm of the whole q and k projections (all heads at once)
    bool out_bias = false;      // gpt-oss: attn_output.bias
    bool sink_logits = false;   // gpt-oss: attn_sinks.weight, one learned logit per head joining its softmax
};

// ROPE of x [head_dim, n_heads, T] at the batch's positions with the model's rope scaling (hp.rope_scaling: freq_scale,
// frequency factors, YaRN) when `scaled`, else plain rope at `base` (sliding-window layers of gemma3). n_rot: the
// layer's rotated dims (0: hp.n_rot).
int32_t rope(ForwardContext& c, int32_t x, int64_t n_heads, int mode, float base, bool scaled, const std::string& name,
             uint32_t n_rot = 0);

// x [n_embd, T] -> rms_norm(x) * weight.
int32_t rms_norm(ForwardContext& c, int32_t x, const std::string& weight, const std::string& name);
// Self-attention of layer il on h [n_embd, T]: projections, rope, cache write, attention, output projection.
int32_t attention_block(ForwardContext& c, int il, int32_t h, const AttentionOptions& o);
// Gated FFN: down(act(gate(h)) * up(h)); act is BASALT_OP_SWIGLU or BASALT_OP_GEGLU.
int32_t ffn_gated(ForwardContext& c, int il, int32_t h, basalt_op act);
// What distinguishes an architecture's experts from Mixtral's.
struct MoeOptions {
    // gpt-oss: the router's bias (ffn_gate_inp.bias) and each expert's gate, up and down biases
    // (ffn_{gate,up,down}_exps.bias [n, n_expert], added to the rows of the selected experts).
    bool biases = false;
    // gpt-oss: SWIGLU_OAI (x = min(gate, limit), out = x sigmoid(alpha x) (clamp(up, +-limit) + 1)) instead of SWIGLU.
    bool clamped_swiglu = false;
    float alpha = 1.702f;
    float limit = 7.0f;
};
// Mixture of experts FFN (softmax routing, top-k, renormalised weights), dropless or under capacity (c.moe_router).
// Renormalised softmax probabilities of the top k are the softmax over the k selected logits, so gpt-oss's routing
// (softmax of the selected biased logits) is this too.
int32_t ffn_moe(ForwardContext& c, int il, int32_t h, const MoeOptions& o = {});
// The hook point at the output of layer il (after its feed-forward residual add, where llama.cpp applies control
// vectors): a STEER node adding each row's slot vector when the step steers layer il; x itself otherwise.
int32_t steer_hook(ForwardContext& c, int il, int32_t x);
// The end of an embedding pass of a decoder-family model (c.encoder_pass with c.embd_out): every row of x through
// output_norm (and the file's dense_2/dense_3 projections) into c.embd_out; returns false (nothing emitted) otherwise.
bool embedding_out(ForwardContext& c, int32_t x);
// Writes the logits of the selected, normed rows: the output matrix (token_embd when the file has no output.weight),
// then the final-logit soft-cap cap * tanh(logits / cap) when hp.final_soft_cap > 0 (gemma2).
void output_head(ForwardContext& c, int32_t x_rows_selected);
// GET_ROWS of x [n_embd, T] at out_rows -> [n_embd, n_outputs].
int32_t select_output_rows(ForwardContext& c, int32_t x);

// What distinguishes the members of the llama family.
struct LlamaVariant {
    int rope_mode = 0;          // 0 pairs (llama), 1 neox (qwen2)
    bool qkv_bias = false;      // qwen2
    bool experts = false;       // llama-MoE
    bool qk_norm = false;       // qwen3: RMS norm of q and k per head, before rope
    uint32_t no_rope_step = 0;  // smollm3: layers il with (il + 1) % step == 0 have no rope (0: every layer has it)
};
void build_llama_family(ForwardContext& c, const LlamaVariant& variant);

// What distinguishes the members of the gemma family (embeddings scaled by sqrt(n_embd), post-norms, GeGLU).
struct GemmaVariant {
    bool qk_norm = false;           // gemma3: RMS norm of q and k per head
    float local_rope_base = 0.f;    // rope base of the sliding-window layers (0: the model's base)
    bool local_unscaled = false;    // gemma3: sliding-window layers rotate without the model's rope scaling
    float attn_scale = 0.f;         // 0: 1/sqrt(head_dim)
    bool symmetric_window = false;  // gemma-embedding: sliding layers see n_swa / 2 positions each side
};
void build_gemma_family(ForwardContext& c, const GemmaVariant& variant);

void build_llama(ForwardContext& c);
void build_qwen2(ForwardContext& c);
void build_moe(ForwardContext& c);
void build_gemma3(ForwardContext& c);
void build_gemma2(ForwardContext& c);
void build_qwen3(ForwardContext& c);
void build_qwen3moe(ForwardContext& c);
void build_smollm3(ForwardContext& c);
void build_gpt2(ForwardContext& c);
void build_phi3(ForwardContext& c);
// bert: an encoder-only pass (c.encoder_pass lists) writing its hidden rows to c.embd_out and, with c.rank_out, the
// classifier head's scores of c.pool_rows.
void build_bert(ForwardContext& c);
// nomic-bert: bert's encoder pass with neox rope instead of learned positions, fused (or separate) q/k/v, SwiGLU.
void build_nomic_bert(ForwardContext& c);
// gemma-embedding: gemma3's block as a bidirectional embedding pass (symmetric sliding window), output_norm and the
// dense layers into c.embd_out.
void build_gemma_embedding(ForwardContext& c);
// The rank (classifier) head of llama.cpp's files on pooled rows x [n_embd, n]: cls.weight/bias then tanh when the
// file has them, then cls.output.weight/bias (scores [n_cls_out, n]); writes c.rank_out.
void rank_head(ForwardContext& c, int32_t x);
// qwen35: Gated DeltaNet layers (SSM_CONV, GATED_DELTA over the session's recurrent state) and gated attention.
void build_qwen35(ForwardContext& c);
// gpt-oss: biased attention with learned sink logits, alternating sliding window, YaRN, biased experts with a clamped
// SwiGLU (arch-gpt-oss.cpp).
void build_gpt_oss(ForwardContext& c);
void build_granite(ForwardContext& c);
void build_olmo2(ForwardContext& c);
// gemma4 (dense): per-layer head sizes and counts, V = weightless RMS norm of V (or of K where a layer has no attn_v),
// attention scale 1, proportional rope on full layers, layer_output_scale.
void build_gemma4(ForwardContext& c);
// t5: the encoder pass or the decoder pass, as c.encoder_pass says.
void build_t5(ForwardContext& c);
// T5's relative position bucket of distance (key position - query position), as in the T5 reference code.
int32_t t5_bucket(int32_t distance, uint32_t n_buckets, bool bidirectional, uint32_t max_distance);
// The bucket of every distance -R..R (R = hp.rel_max_distance; farther distances share the end buckets).
std::vector<int32_t> t5_bucket_table(const ModelHparams& hp, bool bidirectional);

// Runs the builder the architecture table (arch-table.hpp) gives the model; throws Error(UNSUPPORTED) naming the
// architecture when there is none.
void build_forward(ForwardContext& c);

// Builds the forward graph of a one-token batch against the file's tensors with nothing placed or allocated (no
// backend): throws Error(UNSUPPORTED) for an architecture without a builder, Error(FORMAT) naming the file and the
// tensor for one the builder needs that is missing, has a zero-sized dimension or a shape the graph cannot use.
// Sessions run it before they allocate anything; basalt_model_check_runnable reports it.
void check_runnable(const gguf::File& file, const ModelHparams& hp);

}  // namespace basalt
