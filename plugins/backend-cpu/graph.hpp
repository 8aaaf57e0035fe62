// Graph validation and execution: resolves tensors to memory (buffers, or the arena for intermediates),
// checks every node against its op's contract before anything runs, then executes nodes in order.
#pragma once

#include <basalt/plugin_backend.h>
#include <basalt/sdk/node-view.hpp>
#include <basalt/sdk/plugin.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "buffers.hpp"
#include "kernels.hpp"
#include "packed.hpp"
#include "profile.hpp"
#include "thread-pool.hpp"

namespace basalt::cpu {

// cos/sin of the ROPE angles by position, kept across graphs: every layer, and Q and K, of a step share them.
struct RopeTable {
    double base = 0;
    double fscale = 0;
    int half = 0;
    int64_t rows = 0;       // positions 0..rows-1 are filled
    std::vector<float> cs;  // position p: cos, sin of pair i at cs[(p * half + i) * 2 + 0/1]
    // Scaled rope (since 1.4): frequency factors (empty: none), YaRN's parameters and the cos/sin magnitude.
    std::vector<float> factors;
    float ext_factor = 0;
    float attn_factor = 0;
    float beta_fast = 0;
    float beta_slow = 0;
    int32_t n_ctx_orig = 0;
};

struct Backend;

// A tensor as an op sees it: dims beyond n_dims are 1, data resolved (nullptr while only validating).
struct TensorView : sdk::TensorLayout {
    uint8_t* data = nullptr;

    // Row r of the ne1*ne2*ne3 rows, in (i1 fastest) order.
    uint8_t* row(int64_t r) const noexcept {
        const int64_t i1 = r % ne[1];
        const int64_t i23 = r / ne[1];
        return data + i1 * nb[1] + (i23 % ne[2]) * nb[2] + (i23 / ne[2]) * nb[3];
    }
    uint8_t* at(int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const noexcept {
        return data + i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
    }
    float* frow(int64_t r) const noexcept { return reinterpret_cast<float*>(row(r)); }
};

// What an op's check and run functions see (label, fail, expect_type, expect_same_shape, ip, fp: the SDK's).
struct NodeCtx : sdk::NodeView<TensorView> {
    Backend* be = nullptr;
};

// A view placed in the arena: node, input index (-1: the output), byte offset from the arena's base.
struct ArenaView {
    size_t node;
    int input;
    uint64_t offset;
};

// What graph_compute keeps of the last graph it planned, for the next graph of the same key.
struct GraphPlan {
    bool valid = false;
    std::vector<uint64_t> key;        // sdk::graph_key_words of the planned graph
    uint64_t buffers_epoch = 0;       // Backend::buffers_epoch when planned (buffers it checked against)
    std::vector<NodeCtx> ctx;         // checked nodes; arena views resolved against `base`
    std::vector<size_t> group_end;    // > i + 1: node i starts a matmul group ending there
    std::vector<size_t> next_matmul;  // first matmul group at or after each node
    std::vector<bool> reshaped;       // COPY nodes that only reshape (not run)
    std::vector<ArenaView> arena_views;
    uint64_t peak = 0;                          // arena bytes
    uint8_t* base = nullptr;                    // arena base the views point into
    std::vector<const basalt_buffer*> written;  // buffers the graph writes (their weights are not packed)
};

// One thread's attention work space (ops-attention.cpp), kept between calls so a decode step allocates nothing.
struct AttnScratch {
    std::vector<float> acc, scores, weights, rescale;
    std::vector<float> k_deq, v_deq;  // K / V rows dequantized on read (q4_0, KIVI, or any type with a residual)
    std::vector<const uint8_t*> k_rows, v_rows;
    std::vector<float> q_shifted;     // ATTENTION ip[2]: the query heads rotated back by the sinks' shift
    std::vector<int64_t> sink_pairs;  // indices of the visible sink pairs of the current query
    std::vector<int32_t> positions;   // of the visible pairs (relative position bias)
};

// One backend instance (create/destroy).
struct Backend {
    const basalt_host* host = nullptr;
    Kernels kernels;
    std::unique_ptr<ThreadPool> pool;
    std::unordered_set<basalt_buffer*> buffers;
    std::unique_ptr<Arena> arena;
    std::vector<uint8_t> scratch;       // converted activations of the current matmul (reused)
    std::vector<float*> packed_out;     // output rows of the current packed matmul group (reused)
    std::vector<int64_t> packed_first;  // first 16-row group of each node of that group (reused)
    // Q8_0 matmul weights repacked for the ISA's packed kernel (param "repack", on by default where the ISA has
    // one): weights in wrapped or BASALT_BUFFER_WEIGHTS buffers, packed on first use.
    bool repack = false;
    std::unique_ptr<PackCache> packs;
    std::vector<AttnScratch> attn_scratch;  // one per pool thread (grown before a parallel region, never inside)
    std::vector<RopeTable> rope;            // one per (base, scale, dims) seen: gemma3's local and global layers differ
    // Bumped whenever a buffer is created or freed: plans checked against the old set are stale.
    uint64_t buffers_epoch = 0;
    GraphPlan plan;
    std::vector<PackedWeight> packs_scratch;
    std::vector<bool> packed_scratch;
    // Param "profile" (or $BASALT_CPU_PROFILE=1): wall time per op, printed when the backend is destroyed.
    bool profile = false;
    Profile prof;
};

// A row of the op table (graph.cpp), generated from the SDK's ops.def: an op's arity, its check and its run.
struct OpImpl {
    basalt_op op;
    int min_inputs;
    int max_inputs;
    void (*check)(const NodeCtx& c);  // shapes/types only (data may be nullptr); throws sdk::error
    void (*run)(NodeCtx& c);          // may still fail on data (e.g. an index out of range)
};

// Returns nullptr for an op this backend does not implement.
const OpImpl* op_impl(basalt_op op) noexcept;
using sdk::op_name;
namespace op = sdk::op;  // named parameters: c.ip(op::rope::n_rot)

// Per-op checks and runs (ops-*.cpp). The table takes check_<id> and run_<id> for every op of ops.def, so a
// declared op without them fails to compile. Ops whose CPU check is only their contract share check_contract.
void check_contract(const NodeCtx&);  // sdk::contract::check: the contract ops.def names
void check_get_rows(const NodeCtx&);
void run_get_rows(NodeCtx&);
void check_matmul(const NodeCtx&);
void run_matmul(NodeCtx&);
// Copies the packed weights of n MATMUL nodes into out[0..n) (packing them on first use); false when any of
// them takes the row kernels (not Q8_0, not in a weights buffer, repack off).
bool packed_group(NodeCtx* ctx, size_t n, PackedWeight* out);
// Runs n checked MATMUL nodes (ctx[0..n)) that share their input and their weight type and K as one parallel
// region, converting the input once; packs: their packed weights (packed_group), or nullptr.
void run_matmul_group(NodeCtx* ctx, size_t n, const PackedWeight* packs);
// Asks the idle workers to read the start of their share of a MATMUL group's packed weights into their caches
// (no-op for unpacked weights or one thread). Cancelled by ThreadPool::cancel_warm.
void warm_matmul_group(NodeCtx* ctx, size_t n, const PackedWeight* packs);
void check_moe_matmul(const NodeCtx&);
void run_moe_matmul(NodeCtx&);
inline constexpr auto check_add = &check_contract;
void run_add(NodeCtx&);
inline constexpr auto check_mul = &check_contract;
void run_mul(NodeCtx&);
inline constexpr auto check_scale = &check_contract;
void run_scale(NodeCtx&);
inline constexpr auto check_rms_norm = &check_contract;
void run_rms_norm(NodeCtx&);
inline constexpr auto check_layer_norm = &check_contract;
void run_layer_norm(NodeCtx&);
inline constexpr auto check_softmax = &check_contract;
void run_softmax(NodeCtx&);
inline constexpr auto check_silu = &check_contract;
void run_silu(NodeCtx&);
inline constexpr auto check_gelu = &check_contract;
void run_gelu(NodeCtx&);
inline constexpr auto check_gelu_erf = &check_contract;
void run_gelu_erf(NodeCtx&);
inline constexpr auto check_tanh = &check_contract;
void run_tanh(NodeCtx&);
inline constexpr auto check_sigmoid = &check_contract;
void run_sigmoid(NodeCtx&);
inline constexpr auto check_swiglu = &check_contract;
void run_swiglu(NodeCtx&);
inline constexpr auto check_geglu = &check_contract;
void run_geglu(NodeCtx&);
inline constexpr auto check_rope = &check_contract;
void run_rope(NodeCtx&);
void check_attention(const NodeCtx&);
void run_attention(NodeCtx&);
void check_kv_write(const NodeCtx&);
void run_kv_write(NodeCtx&);
inline constexpr auto check_topk = &check_contract;
void run_topk(NodeCtx&);
inline constexpr auto check_moe_route = &check_contract;
void run_moe_route(NodeCtx&);
inline constexpr auto check_moe_combine = &check_contract;
void run_moe_combine(NodeCtx&);
inline constexpr auto check_gather = &check_contract;
void run_gather(NodeCtx&);
void check_cast(const NodeCtx&);
void run_cast(NodeCtx&);
inline constexpr auto check_copy = &check_contract;
void run_copy(NodeCtx&);
inline constexpr auto check_steer = &check_contract;
void run_steer(NodeCtx&);
inline constexpr auto check_softplus = &check_contract;
void run_softplus(NodeCtx&);
// ops-recurrent.cpp: SLICE and the recurrent ops (their state is read and written in place).
inline constexpr auto check_slice = &check_contract;
void run_slice(NodeCtx&);
inline constexpr auto check_ssm_conv = &check_contract;
void run_ssm_conv(NodeCtx&);
inline constexpr auto check_gated_delta = &check_contract;
void run_gated_delta(NodeCtx&);
// GATED_DELTA's chunked form over chunks of at most C tokens of one slot (ops-gated-delta-chunked.cpp); rows are
// the checked (slot, fresh) pairs; only the tokens of slots s with chunked[s] != 0 (the others' outputs and state
// are left alone).
void run_gated_delta_chunked(NodeCtx& c, const int32_t* rows, int64_t C, const uint8_t* chunked);
// ops-elementwise.cpp: gpt-oss's clamped SwiGLU (since 1.6).
inline constexpr auto check_swiglu_oai = &check_contract;
void run_swiglu_oai(NodeCtx&);

// Entry points used by backend.cpp. Both throw sdk::error naming the node.
void graph_compute(Backend& be, const basalt_graph* graph);
// Returns false (with the reason in *why) when the node cannot run here; throws on a malformed graph.
bool graph_supports_node(Backend& be, const basalt_graph* graph, size_t node, std::string* why);

// Splits [0, n) into chunks for `threads` workers (at least min_chunk per task, a few tasks per thread).
int64_t chunk_count(int64_t n, int threads, int64_t min_chunk) noexcept;

}  // namespace basalt::cpu
