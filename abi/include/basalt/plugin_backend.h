/*
 * Basalt plugin ABI: the compute backend component kind.
 *
 * A backend enumerates devices, owns device buffers, and executes op graphs:
 * a plain C description of nodes (op, dtype, shape, strides, inputs, params).
 * The core builds graphs; the backend never sees a model. A backend says which
 * node it supports; a graph with an unsupported node fails naming the node.
 *
 * Arrays of ABI structs are arrays of pointers, so every element carries its
 * own struct_size.
 */
#ifndef BASALT_PLUGIN_BACKEND_H
#define BASALT_PLUGIN_BACKEND_H

#include "basalt/plugin.h"

BASALT_BEGIN_DECLS

/*
 * Graph operations. Shapes are written [ne0, ne1, ...] with ne0 contiguous; "rows" are the ne0-runs of a
 * tensor (ne1*ne2*ne3 of them). Activations are F32 unless stated; weights may be any type the backend
 * reports for the op. ip = iparams, fp = fparams, inN = inputs[N]. Every backend computes exactly this
 * (docs/ops.md has the formulas); accumulation is at least F32. C++ code reads the parameters by name: the SDK's
 * basalt/sdk/ops.def declares each op's arity and parameters once (sdk::op::rope::n_rot is ROPE's ip[1]).
 */
typedef int32_t basalt_op;
enum {
    BASALT_OP_NONE = 0,
    /* out[:, i] = dequant(in0[:, in1[i]]). in0 [n, rows] any type; in1 I32 [m]; out F32 [n, m]. */
    BASALT_OP_GET_ROWS = 1,
    /* out[j, i] = sum_k in0[k, j] * in1[k, i]. in0 weights [K, N] any type; in1 F32 [K, M]; out F32 [N, M]. */
    BASALT_OP_MATMUL = 2,
    /* out = in0 + in1; in1 [n] or [n, 1] broadcasts over in0's rows, or has in0's shape. */
    BASALT_OP_ADD = 3,
    /* out = in0 * in1; broadcasting as ADD. */
    BASALT_OP_MUL = 4,
    /* out = in0 * fp[0]. */
    BASALT_OP_SCALE = 5,
    /* per row: out = x / sqrt(mean(x^2) + fp[0]). */
    BASALT_OP_RMS_NORM = 6,
    /* per row: out = (x - mean(x)) / sqrt(var(x) + fp[0]) (population variance). */
    BASALT_OP_LAYER_NORM = 7,
    /* in0 [head_dim, n_head, T]; in1 I32 positions [T]. ip[0] mode: 0 = pairs (x[2i], x[2i+1]), 1 = neox halves
     * (x[i], x[i + n_rot/2]); ip[1] n_rot (even, <= head_dim; dims >= n_rot pass through). fp[0] freq_base,
     * fp[1] freq_scale: theta_i = pos * fp[1] * fp[0]^(-2i/n_rot).
     * Since 1.4 (scaled rope): an optional in2 F32 frequency factors [>= n_rot/2] divide theta_i; fp[2] ext_factor
     * != 0 (YaRN, with ip[2] n_ctx_orig, fp[4] beta_fast, fp[5] beta_slow) mixes scaled and unscaled angles by
     * ggml's ramp and multiplies cos/sin by 1 + 0.1 ln(1/fp[1]); fp[3] attn_factor (0 = 1) multiplies cos/sin. */
    BASALT_OP_ROPE = 8,
    /* per row: out = softmax(x * fp[0]). */
    BASALT_OP_SOFTMAX = 9,
    BASALT_OP_SILU = 10,     /* x * sigmoid(x) */
    BASALT_OP_GELU = 11,     /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    BASALT_OP_GELU_ERF = 12, /* 0.5 x (1 + erf(x / sqrt(2))) */
    BASALT_OP_SWIGLU = 13,   /* out = silu(in0) * in1 (same shapes) */
    BASALT_OP_GEGLU = 14,    /* out = gelu(in0) * in1 (tanh gelu, same shapes) */
    /*
     * Attention through slot lists, ragged over sequences. in0 q [hd_k, n_head, T]; in1 K cache
     * [hd_k * n_kv_head, n_slots]; in2 V cache [hd_v * n_kv_head, n_slots] (cache types: F32, F16, or any
     * type the backend reports); in3 I32 [2 * n_vis, n_lists]: per list, (slot, position) pairs, unused
     * pairs have slot -1; in4 I32 [2, T]: per query token (list index, query position).
     * Query t in list g sees pair (s, p) when s >= 0, p <= pos_t and (ip[0] == 0 or p > pos_t - ip[0] or
     * p < ip[1]): ip[0] sliding window (0 none), ip[1] attention sinks (first positions always visible).
     * score = fp[0] * dot(q, k); fp[1] > 0 soft-caps: score = fp[1] * tanh(score / fp[1]).
     * Head h reads kv head h / (n_head / n_kv_head). out [hd_v * n_head, T]. No visible pair: zeros.
     * Since 1.4, ip[2] == 1 (with ip[0] != 0) gives the kept keys cache positions (StreamingLLM): with
     * d = pos_t - (ip[1] + ip[0] - 1) > 0, a visible pair with p < ip[1] (a sink) scores as if its K row, rotated by
     * ROPE at p when written, had been rotated at p + d: score = fp[0] * dot(q, rope(k, d)) with ip[3] the rope mode,
     * ip[4] n_rot, fp[2] freq_base, fp[3] freq_scale (as ROPE's). Window keys keep their positions: RoPE depends on
     * the distance only, which equals the cache distance for them. ip[2] == 0: no rotation.
     * since 1.4 (encoder-decoder models): ip[5] flags, bit 0 = not causal (every pair with s >= 0 is visible
     * whatever its position: encoder self-attention, cross-attention); in5 (optional, 6 inputs) F32 [n_head, 2R + 1]
     * relative position bias by distance: score += in5[h, clamp(p - pos_t, -R, R) + R] (after the scale,
     * before the soft-cap; T5's bucketed bias tabulated by the host).
     * Since 1.4, with a residual window (8 inputs, ip[6] = R > 0; never with the position bias): in5 K residual F32
     * [hd_k * n_kv_head, rows], in6 V residual F32 [hd_v * n_kv_head, rows], in7 I32 [2, n_lists]: per list (base row,
     * open position): a pair with p >= open position is read from residual row base + p % R (both K and V), others from
     * the cache.
     * Since 1.5 (gpt-oss), ip[5] bit 1: learned attention-sink logits in the LAST input, F32 [n_head] (6 inputs, or
     * 7 after the position bias; never with the residual window): head h's softmax also runs over logit in[h], which
     * has no value row: out = sum_i e^(s_i - M) v_i / (sum_i e^(s_i - M) + e^(sink_h - M)), M = max(max_i s_i,
     * sink_h) (the sink is not scaled or soft-capped). No visible pair: zeros. A 1.4 backend refuses the flag.
     */
    BASALT_OP_ATTENTION = 15,
    /* Writes rows: cache[:, in2[i]] = convert(in0[:, i]). in0 F32 [n, T]; in1 cache [n, n_slots] (also the
     * node's output: the write is in place); in2 I32 slots [T].
     * Since 1.4, with a residual window (5 inputs, ip[0] = R > 0): in3 residual F32 [n, rows] (written in place too),
     * in4 I32 residual rows [T]; in row order, residual[:, in4[i]] = in0[:, i], and when in4[i] % R == R - 1 the
     * unit ends: residual rows in4[i]-R+1 .. in4[i] are quantized into cache slots in2[i]-R+1 .. in2[i] (KIVI_C*:
     * per channel over each 32 of them). Rows of an unfinished unit are not written to the cache. */
    BASALT_OP_KV_WRITE = 16,
    /* in0 router logits [n_expert, T] -> out I32 [ip[0], T]: indices of the ip[0] largest, descending
     * (ties: lower index first). */
    BASALT_OP_TOPK = 17,
    /* Expert matmul: in0 experts [K, N, n_expert] any type; in1 F32 [K, T] (shared by the selected experts)
     * or [K, k, T] (one input per selected expert); in2 I32 ids [k, T]. out [N, k, T]:
     * out[:, j, t] = in0[:, :, in2[j, t]]^T x in1[:, (j,) t]. */
    BASALT_OP_MOE_MATMUL = 18,
    /* out[:, t] = sum_j in1[j, t] * in0[:, j, t]. in0 [N, k, T]; in1 weights [k, T]; out [N, T]. */
    BASALT_OP_MOE_COMBINE = 19,
    /* out[j, t] = in0[in1[j, t], t]: gather along rows. in0 F32 [n, T]; in1 I32 [k, T]; out F32 [k, T].
     * ip[0] != 0: each column of out is then divided by its sum (renormalised routing weights). */
    BASALT_OP_GATHER = 20,
    BASALT_OP_CAST = 21, /* out = in0 converted to out's type (same shape) */
    BASALT_OP_COPY = 22, /* out = in0 (same type and element count; strides may differ) */
    /* since 1.3. Activation steering: out[:, t] = in0[:, t] + in1[:, in2[t]] where 0 <= in2[t] < S, else
     * out[:, t] = in0[:, t] exactly. in0 F32 [n, T] (residual rows); in1 F32 [n, S] (one vector per steering
     * slot); in2 I32 [T] (each row's slot, -1: none); out F32 [n, T]. */
    BASALT_OP_STEER = 23,
    /* since 1.4. MoE routing under expert capacity (docs/moe.md). in0 router probabilities F32 [n_expert, T];
     * each row's experts are ranked as TOPK ranks them, and assignment (j, t) is token t's rank-j expert,
     * j < ip[0] = k. ip[1] capacity (>= 1): the most assignments one expert takes. Assignments claim capacity
     * rank by rank (every token's rank 0, then every rank 1, ...), tokens in row order within a rank; one that
     * finds its expert full overflows. ip[2] overflow: 0 drop; 1 reroute: once every assignment has claimed,
     * the overflowed ones (in the same order) take the token's best-ranked expert outside its top k, not yet
     * taken by it, with room (none: dropped). ip[3] what out holds: 0 expert ids I32 [k, T] (a dropped
     * assignment keeps its rank-j expert); 1 weights F32 [k, T]: p[expert] / (sum of the token's top-k p, as
     * GATHER with ip[0] != 0 sums them), 0 when dropped; 2 status I32 [k, T]: 0 kept, 1 dropped, 2 + e
     * rerouted away from expert e. */
    BASALT_OP_MOE_ROUTE = 24,
    /* since 1.4. Element-wise F32 activations, out shaped as in0 (recurrent and gated architectures). A backend
     * built before them reports the node unsupported. */
    BASALT_OP_TANH = 25,    /* tanh(x) */
    BASALT_OP_SIGMOID = 26, /* 1 / (1 + exp(-x)) */
    /* since 1.4. ln(1 + exp(x)) element-wise (x itself past 20, as ggml), out shaped as in0. */
    BASALT_OP_SOFTPLUS = 27,
    /* since 1.4. A slab along dim 0: out[i, r] = in0[ip[0] + i, r] for i < out.ne[0]; in0 F32 [n, ...] with
     * ip[0] + out.ne[0] <= n, out F32 with in0's other dims (a fused projection split into its parts). */
    BASALT_OP_SLICE = 28,
    /* since 1.4. Short causal depthwise convolution with a rolling per-sequence state (Gated DeltaNet, Mamba).
     * in0 x F32 [C, T]; in1 weights F32 [K, C] (tap j of channel c at j + K c); in2 state F32 [(K-1) C, S], one
     * row per state slot holding the slot's last K-1 inputs (input t-K+1+j of channel c at j C + c), READ AND
     * UPDATED IN PLACE; in3 I32 [2, T]: each token's (state slot, fresh), fresh != 0 starting the slot from zeros.
     * Tokens of one slot run in row order: out[c, t] = sum_j w[j, c] * window[j] with window = the slot's K-1
     * previous inputs then x[c, t]; the slot's state then holds the last K-1 of them. out F32 [C, T]. */
    BASALT_OP_SSM_CONV = 29,
    /* since 1.4. The gated delta rule (Gated DeltaNet), recurrent form. in0 q F32 [dk, nk, T]; in1 k F32
     * [dk, nk, T]; in2 v F32 [dv, nv, T] (nv a multiple of nk; value head h uses key head h % nk); in3 log-decay
     * F32 [nv, T]; in4 beta F32 [nv, T]; in5 state F32 [dv dk nv, S] (per slot and value head a dv x dk matrix,
     * row i at (h dv + i) dk), READ AND UPDATED IN PLACE; in6 I32 [2, T] (slot, fresh) as SSM_CONV. Per token in
     * row order: S = exp(g) S; S += beta (v - S k) k^T; out = S q. out F32 [dv, nv, T]. Since 1.6 ip[0] chunk, a
     * hint (a backend may ignore it; 0 in older hosts): 0 the backend's choice, 1 the recurrent form token by
     * token, C > 1 the chunked (WY / UT-transform) form over chunks of at most C tokens of one slot, equal to the
     * recurrent form up to float rounding. */
    BASALT_OP_GATED_DELTA = 30,
    /* since 1.6. The clamped SwiGLU of gpt-oss's experts: x = min(in0, fp[1]), y = clamp(in1, -fp[1], fp[1]),
     * out = x * sigmoid(fp[0] x) * (y + 1); fp[0] alpha (gpt-oss 1.702), fp[1] limit > 0 (gpt-oss 7). All F32,
     * in0, in1 and out of one shape. */
    BASALT_OP_SWIGLU_OAI = 31,
    BASALT_OP_COUNT = 32 /* number of op values (not an op) */
};

/* Opaque device buffer, created and destroyed by the backend that owns it. */
typedef struct basalt_buffer basalt_buffer;

/* A tensor of a graph: up to 4 dims, ne[0] contiguous (GGUF order), byte strides nb. */
typedef struct basalt_tensor {
    uint32_t struct_size;
    basalt_dtype dtype;
    int32_t n_dims;
    int32_t reserved0;
    int64_t ne[4];
    int64_t nb[4];
    basalt_buffer* buffer; /* NULL: an intermediate the backend places itself */
    uint64_t offset;       /* byte offset into buffer */
    const char* name;      /* borrowed, for error messages and profiles */
} basalt_tensor;

#define BASALT_MAX_NODE_INPUTS 8
#define BASALT_MAX_NODE_PARAMS 8

/* One node: op(inputs) -> output, tensors referenced by index into the graph's tensor array. */
typedef struct basalt_graph_node {
    uint32_t struct_size;
    basalt_op op;
    const char* name; /* borrowed, e.g. "blk.3.attn_q"; named in unsupported-node errors */
    int32_t output;
    int32_t n_inputs;
    int32_t inputs[BASALT_MAX_NODE_INPUTS];
    int32_t iparams[BASALT_MAX_NODE_PARAMS];
    float fparams[BASALT_MAX_NODE_PARAMS];
} basalt_graph_node;

/* A graph: nodes in execution order. All arrays borrowed for the call they are passed to. */
typedef struct basalt_graph {
    uint32_t struct_size;
    uint32_t reserved0;
    size_t n_tensors;
    const basalt_tensor* const* tensors;
    size_t n_nodes;
    const basalt_graph_node* const* nodes;
} basalt_graph;

/* Device types. */
typedef int32_t basalt_device_type;
enum {
    BASALT_DEVICE_CPU = 0,
    BASALT_DEVICE_GPU_INTEGRATED = 1,
    BASALT_DEVICE_GPU_DISCRETE = 2,
    BASALT_DEVICE_GPU_VIRTUAL = 3,
    BASALT_DEVICE_SOFTWARE = 4, /* e.g. Mesa lavapipe */
    BASALT_DEVICE_OTHER = 5
};

/* Filled by device_info; the caller sets struct_size and the backend writes only what fits. */
typedef struct basalt_device_info {
    uint32_t struct_size;
    basalt_device_type type;
    const char* name;        /* owned by the backend, valid until the plugin shuts down */
    uint64_t memory_total;   /* bytes, 0 when unknown */
    uint64_t memory_free;    /* bytes, 0 when unknown */
    uint64_t max_allocation; /* largest single buffer, 0 when unlimited */
} basalt_device_info;

/* Buffer usage hints for buffer_alloc. */
enum {
    BASALT_BUFFER_WEIGHTS = 1u << 0, /* written once, read by every graph */
    BASALT_BUFFER_KV = 1u << 1,      /* the KV cache */
    BASALT_BUFFER_IO = 1u << 2       /* inputs/outputs read and written by the host each step */
};

/*
 * Interface table of a backend component. Device enumeration is thread-safe.
 * A backend instance (from create) is used by one thread at a time.
 */
typedef struct basalt_backend_iface {
    uint32_t struct_size;
    uint32_t reserved0;

    /* Sets *out_count to the number of usable devices (0 is not an error). Thread-safe. */
    basalt_status (*device_count)(const basalt_host* host, size_t* out_count);
    /* Describes device `index` into *out (caller sets out->struct_size). Thread-safe. */
    basalt_status (*device_info)(size_t index, basalt_device_info* out);
    /* Creates an instance on device `index` configured by params (e.g. "threads"); caller owns it. */
    basalt_status (*create)(const basalt_host* host, size_t device, const basalt_params* params, void** out_backend);
    /* Destroys an instance and every buffer it still owns; NULL is ignored. */
    void (*destroy)(void* backend);
    /* Allocates a device buffer of `size` bytes; owned by the backend instance, freed with buffer_free. */
    basalt_status (*buffer_alloc)(void* backend, uint64_t size, uint32_t usage, basalt_buffer** out_buffer);
    /* Frees a buffer; NULL is ignored. */
    void (*buffer_free)(void* backend, basalt_buffer* buffer);
    /* Copies `size` host bytes from src (borrowed) into the buffer at offset. */
    basalt_status (*buffer_write)(void* backend, basalt_buffer* buffer, uint64_t offset, const void* src,
                                  uint64_t size);
    /* Copies `size` bytes from the buffer at offset into dst (borrowed). */
    basalt_status (*buffer_read)(void* backend, basalt_buffer* buffer, uint64_t offset, void* dst, uint64_t size);
    /* Sets *out_supported to non-zero when the node (with its tensors' dtypes and shapes) can run here. */
    basalt_status (*supports_node)(void* backend, const basalt_graph* graph, size_t node, int32_t* out_supported);
    /* Executes every node of the graph in order; fails naming the first unsupported or failing node. */
    basalt_status (*graph_compute)(void* backend, const basalt_graph* graph);
    /* Optional (NULL: the host allocates a buffer and writes into it). Wraps `size` bytes of host memory at ptr
     * (borrowed: must outlive the buffer; read-only use) as a buffer without copying, e.g. memory-mapped
     * weights on a backend that computes on host memory. */
    basalt_status (*buffer_wrap_host)(void* backend, const void* ptr, uint64_t size, basalt_buffer** out_buffer);
    /* since 1.1 */
    /* Optional (NULL: the host uses buffer_wrap_host). As buffer_wrap_host, for memory that is a read-only private
     * mapping of a file (the host's memory-mapped model): the backend may also drop the pages it no longer reads
     * from this process's resident memory (madvise MADV_DONTNEED, e.g. weights it repacked into its own copy);
     * they read back unchanged if it ever reads them again. */
    basalt_status (*buffer_wrap_file)(void* backend, const void* ptr, uint64_t size, basalt_buffer** out_buffer);
} basalt_backend_iface;

#define BASALT_BACKEND_IFACE_MIN_SIZE (offsetof(basalt_backend_iface, graph_compute) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_BACKEND_H */
