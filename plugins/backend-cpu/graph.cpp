#include "graph.hpp"

#include <basalt/sdk/arena-plan.hpp>
#include <basalt/sdk/graph-key.hpp>
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <utility>

namespace basalt::cpu {

namespace {

// One row per op of ops.def, in value order (op_impl indexes it by value - 1).
constexpr OpImpl kOps[] = {
#define BASALT_OP(NAME, id, min_inputs, max_inputs, contract) \
    {BASALT_OP_##NAME, min_inputs, max_inputs, check_##id, run_##id},
#include <basalt/sdk/ops.def>
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == BASALT_OP_COUNT - 1, "the CPU op table covers every declared op");

std::string node_name(const basalt_graph_node* n, size_t index) {
    if (n != nullptr && n->name != nullptr) return n->name;
    return "#" + std::to_string(index);
}

std::string tensor_name(const basalt_tensor* t, int32_t index) {
    // append() rather than operator+ on literals: GCC 12 reports a bogus -Wrestrict for the latter.
    std::string s;
    if (t != nullptr && t->name != nullptr) {
        s.append("'").append(t->name).append("'");
    } else {
        s.append("#").append(std::to_string(index));
    }
    return s;
}

[[noreturn]] void fail_node(const basalt_graph_node* n, size_t index, basalt_status st, const std::string& what) {
    std::string op = n != nullptr ? op_name(n->op) : "?";
    throw sdk::error(st, "backend 'cpu': node '" + node_name(n, index) + "' (" + op + "): " + what);
}

__extension__ typedef __int128 i128;

// Byte extent of a tensor from its start: (ne[i]-1)*nb[i] summed, plus one row's bytes; -1 when absurd.
int64_t tensor_extent(const TensorView& v) {
    const TypeInfo* ti = type_info(v.type);
    i128 ext = static_cast<i128>(v.ne[0] / ti->block) * ti->bytes;
    for (int i = 1; i < 4; ++i) ext += static_cast<i128>(v.ne[i] - 1) * v.nb[i];
    if (ext > (static_cast<i128>(1) << 50)) return -1;
    return static_cast<int64_t>(ext);
}

// Fills the view from the tensor and checks what every op needs; fails naming the node and the tensor.
TensorView make_view(const Backend* be, const basalt_graph* g, const basalt_graph_node* n, size_t ni, int32_t index,
                     const char* role) {
    if (index < 0 || static_cast<size_t>(index) >= g->n_tensors) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  std::string(role) + " tensor index " + std::to_string(index) + " is outside the graph's " +
                      std::to_string(g->n_tensors) + " tensors");
    }
    const basalt_tensor* t = g->tensors[index];
    // Built only on failure (a decode step checks thousands of views).
    auto who = [&] { return std::string(role) + " " + tensor_name(t, index); };
    if (t == nullptr || t->struct_size < sizeof(basalt_tensor)) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who() + " is NULL or has a too small struct_size");
    }
    TensorView v;
    v.t = t;
    v.type = t->dtype;
    const TypeInfo* ti = type_info(t->dtype);
    if (ti == nullptr) fail_node(n, ni, BASALT_ERR_UNSUPPORTED, who() + " has unsupported type " + type_name(t->dtype));
    if (t->n_dims < 1 || t->n_dims > 4) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who() + " has n_dims " + std::to_string(t->n_dims) + " (1..4)");
    }
    for (int i = 0; i < t->n_dims; ++i) {
        if (t->ne[i] < 1 || t->ne[i] > (int64_t{1} << 40)) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who() + " has ne[" + std::to_string(i) + "] = " + std::to_string(t->ne[i]));
        }
        if (t->nb[i] < 0 || t->nb[i] % ti->align != 0) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who() + " has nb[" + std::to_string(i) + "] = " + std::to_string(t->nb[i]) +
                          " (must be >= 0 and a multiple of " + std::to_string(ti->align) + ")");
        }
        v.ne[i] = t->ne[i];
        v.nb[i] = t->nb[i];
    }
    for (int i = t->n_dims; i < 4; ++i) v.nb[i] = v.nb[i - 1] * v.ne[i - 1];
    if (v.ne[0] % ti->block != 0) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  who() + " has ne[0] = " + std::to_string(v.ne[0]) + ", not a multiple of " + ti->name +
                      "'s block of " + std::to_string(ti->block));
    }
    if (v.nb[0] != ti->bytes) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED,
                  who() + " has nb[0] = " + std::to_string(v.nb[0]) + "; rows must be contiguous (" +
                      std::to_string(ti->bytes) + " bytes per " + (ti->block > 1 ? "block" : "element") + ")");
    }
    if (static_cast<i128>(v.ne[0]) * v.ne[1] * v.ne[2] * v.ne[3] > (static_cast<i128>(1) << 40)) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who() + " has too many elements");
    }
    const int64_t ext = tensor_extent(v);
    if (ext < 0) fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who() + " spans an absurd number of bytes");
    if (t->buffer != nullptr && be != nullptr) {
        if (be->buffers.count(t->buffer) == 0) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who() + " refers to a buffer this backend does not own");
        }
        if (t->offset % static_cast<uint64_t>(ti->align) != 0) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who() + " has offset " + std::to_string(t->offset) + ", not a multiple of " +
                          std::to_string(ti->align));
        }
        if (t->offset > t->buffer->size || static_cast<uint64_t>(ext) > t->buffer->size - t->offset) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who() + " (offset " + std::to_string(t->offset) + ", " + std::to_string(ext) +
                          " bytes) exceeds its buffer of " + std::to_string(t->buffer->size) + " bytes");
        }
        v.data = t->buffer->data + t->offset;
    }
    return v;
}

// Output rows must not overlap each other (inputs may broadcast with zero strides).
void check_output_layout(const NodeCtx& c) {
    const TensorView& o = c.out;
    const TypeInfo* ti = type_info(o.type);
    const int64_t row = o.ne[0] / ti->block * ti->bytes;
    if ((o.ne[1] > 1 && o.nb[1] < row) || (o.ne[2] > 1 && o.nb[2] < o.nb[1] * o.ne[1]) ||
        (o.ne[3] > 1 && o.nb[3] < o.nb[2] * o.ne[2])) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + o.shape() + " has overlapping rows (strides " +
                                                std::to_string(o.nb[1]) + ", " + std::to_string(o.nb[2]) + ", " +
                                                std::to_string(o.nb[3]) + ")");
    }
    if (o.t->buffer != nullptr && o.t->buffer->read_only) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output is in a read-only (wrapped host) buffer");
    }
}

// Builds the node's context (views without arena placement) and runs the generic + op-specific checks.
NodeCtx check_node(Backend* be, const basalt_graph* g, size_t ni) {
    const basalt_graph_node* n = g->nodes[ni];
    if (n == nullptr || n->struct_size < sizeof(basalt_graph_node)) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, "node is NULL or has a too small struct_size");
    }
    const OpImpl* impl = op_impl(n->op);
    if (impl == nullptr)
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED, "op " + std::to_string(n->op) + " is not implemented");
    if (n->n_inputs < impl->min_inputs || n->n_inputs > impl->max_inputs) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  "has " + std::to_string(n->n_inputs) + " inputs, expected " + std::to_string(impl->min_inputs));
    }
    NodeCtx c;
    c.backend = "backend 'cpu'";
    c.be = be;
    c.node = n;
    c.index = ni;
    c.n_in = n->n_inputs;
    static const char* const kRoles[] = {"input 0", "input 1", "input 2", "input 3",
                                         "input 4", "input 5", "input 6", "input 7"};
    for (int i = 0; i < n->n_inputs; ++i) c.in[i] = make_view(be, g, n, ni, n->inputs[i], kRoles[i]);
    c.out = make_view(be, g, n, ni, n->output, "output");
    check_output_layout(c);
    impl->check(c);
    return c;
}

void check_graph_header(const basalt_graph* g) {
    if (g == nullptr || g->struct_size < sizeof(basalt_graph)) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': graph is NULL or has a too small struct_size");
    }
    if ((g->n_tensors > 0 && g->tensors == nullptr) || (g->n_nodes > 0 && g->nodes == nullptr)) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': graph has NULL tensor or node arrays");
    }
}

}  // namespace

const OpImpl* op_impl(basalt_op op) noexcept {
    if (op <= BASALT_OP_NONE || op >= BASALT_OP_COUNT) return nullptr;
    return &kOps[op - 1];
}

void check_contract(const NodeCtx& c) {
    sdk::contract::check(c);
}

int64_t chunk_count(int64_t n, int threads, int64_t min_chunk) noexcept {
    if (n <= 0) return 0;
    if (min_chunk < 1) min_chunk = 1;
    const int64_t by_size = (n + min_chunk - 1) / min_chunk;
    const int64_t by_threads = static_cast<int64_t>(threads) * 4;
    return std::max<int64_t>(1, std::min(by_size, by_threads));
}

bool graph_supports_node(Backend& be, const basalt_graph* graph, size_t node, std::string* why) {
    check_graph_header(graph);
    if (node >= graph->n_nodes) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': node index " + std::to_string(node) +
                                                          " is outside the graph's " + std::to_string(graph->n_nodes) +
                                                          " nodes");
    }
    try {
        check_node(&be, graph, node);
    } catch (const sdk::error& e) {
        if (e.status() != BASALT_ERR_UNSUPPORTED) throw;
        if (why != nullptr) *why = e.what();
        return false;
    }
    return true;
}

namespace {

// Checks every node and plans the graph: matmul groups, reshapes, arena placement, written buffers.
void plan_graph(Backend& be, const basalt_graph* graph, GraphPlan& plan) {
    const size_t nn = graph->n_nodes;
    std::vector<NodeCtx>& ctx = plan.ctx;
    ctx.clear();
    ctx.reserve(nn);
    for (size_t i = 0; i < nn; ++i) ctx.push_back(check_node(&be, graph, i));

    // Consecutive MATMULs of one input with weights of one type (Q, K, V; gate, up) run as one parallel region
    // that converts the input once. group_end[i] > i + 1 starts such a group; the planner keeps everything the
    // group reads alive until its last node (its outputs are written together).
    std::vector<size_t>& group_end = plan.group_end;
    group_end.assign(nn, 0);
    for (size_t i = 0; i < nn;) {
        size_t j = i + 1;
        const basalt_graph_node* a = graph->nodes[i];
        if (a->op == BASALT_OP_MATMUL) {
            while (j < nn && graph->nodes[j]->op == BASALT_OP_MATMUL && graph->nodes[j]->inputs[1] == a->inputs[1] &&
                   ctx[j].in[0].type == ctx[i].in[0].type && ctx[j].in[0].ne[0] == ctx[i].in[0].ne[0] &&
                   graph->nodes[j]->output != a->inputs[1]) {
                ++j;
            }
        }
        group_end[i] = j;
        i = j;
    }
    std::vector<bool> in_group(nn, false);  // node i runs with node i + 1
    for (size_t i = 0; i < nn; ++i) {
        for (size_t j = i; group_end[i] > i + 1 && j + 1 < group_end[i]; ++j) in_group[j] = true;
    }
    // COPY nodes that only reshape an intermediate do not run: the output takes the input's memory.
    std::vector<bool>& reshaped = plan.reshaped;
    reshaped.assign(nn, false);
    for (size_t i = 0; i < nn; ++i) {
        reshaped[i] = sdk::contract::is_reshape(ctx[i]) && tensor_extent(ctx[i].in[0]) == tensor_extent(ctx[i].out);
    }
    // Intermediates: written before read, placed in the arena, released after their last use.
    const auto placed = sdk::plan_intermediates(
        graph, kAlign, [&](size_t i) { return static_cast<uint64_t>(tensor_extent(ctx[i].out)); },
        [&](size_t i) { return static_cast<bool>(in_group[i]); },
        [&](size_t i) { return reshaped[i] ? int64_t{graph->nodes[i]->inputs[0]} : int64_t{-1}; });
    if (placed.bad_node >= 0) {
        const basalt_graph_node* n = graph->nodes[placed.bad_node];
        const int32_t in = n->inputs[placed.bad_input];
        fail_node(
            n, static_cast<size_t>(placed.bad_node), BASALT_ERR_INVALID_ARGUMENT,
            "reads intermediate " + tensor_name(graph->tensors[in], in) + " (no buffer) before any node writes it");
    }
    plan.peak = placed.peak;
    plan.arena_views.clear();
    for (size_t i = 0; i < nn; ++i) {
        const basalt_graph_node* n = graph->nodes[i];
        for (int k = 0; k < n->n_inputs; ++k) {
            if (ctx[i].in[k].data == nullptr) {
                plan.arena_views.push_back({i, k, placed.offset[static_cast<size_t>(n->inputs[k])]});
            }
        }
        if (ctx[i].out.data == nullptr)
            plan.arena_views.push_back({i, -1, placed.offset[static_cast<size_t>(n->output)]});
    }
    plan.base = nullptr;
    // Buffers this graph writes hold no packed weights.
    plan.written.clear();
    for (size_t i = 0; i < nn; ++i) {
        const basalt_buffer* b = ctx[i].out.t->buffer;
        if (b != nullptr && std::find(plan.written.begin(), plan.written.end(), b) == plan.written.end()) {
            plan.written.push_back(b);
        }
    }
    // After each node, idle workers may read ahead into the next matmul's weights while this thread runs the
    // small ops before it.
    std::vector<size_t>& next_matmul = plan.next_matmul;
    next_matmul.assign(nn + 1, nn);
    for (size_t i = nn; i-- > 0;) {
        next_matmul[i] =
            graph->nodes[i]->op == BASALT_OP_MATMUL && (i == 0 || !in_group[i - 1]) ? i : next_matmul[i + 1];
    }
}

// The graph's nodes and tensors may be new structs of the same shape: point the kept views at them.
void refresh_views(const basalt_graph* graph, GraphPlan& plan) {
    for (size_t i = 0; i < plan.ctx.size(); ++i) {
        NodeCtx& c = plan.ctx[i];
        const basalt_graph_node* n = graph->nodes[i];
        c.node = n;
        for (int k = 0; k < n->n_inputs; ++k) c.in[k].t = graph->tensors[n->inputs[k]];
        c.out.t = graph->tensors[n->output];
    }
}

}  // namespace

void graph_compute(Backend& be, const basalt_graph* graph) {
    Profile::Clock::time_point t_start = be.profile ? Profile::Clock::now() : Profile::Clock::time_point{};
    check_graph_header(graph);
    GraphPlan& plan = be.plan;
    // A graph of the last one's shape, over the same buffers, reuses its checked and planned nodes (a decode
    // step's ~700 nodes differ from the last step's only in the data of the input buffer).
    if (plan.valid && plan.buffers_epoch == be.buffers_epoch && sdk::graph_key_matches(graph, plan.key)) {
        refresh_views(graph, plan);
    } else {
        plan.valid = false;
        plan_graph(be, graph, plan);
        const bool keyed = sdk::graph_key_words(graph, plan.key);
        plan.buffers_epoch = be.buffers_epoch;
        plan.valid = keyed;
        for (const basalt_buffer* b : plan.written) be.packs->drop(b);
    }
    const size_t nn = graph->n_nodes;
    std::vector<NodeCtx>& ctx = plan.ctx;
    const std::vector<size_t>& group_end = plan.group_end;
    const std::vector<size_t>& next_matmul = plan.next_matmul;
    if (uint8_t* base = plan.peak > 0 ? be.arena->reserve(plan.peak) : nullptr; base != plan.base) {
        for (const ArenaView& v : plan.arena_views) {
            (v.input < 0 ? ctx[v.node].out : ctx[v.node].in[v.input]).data = base + v.offset;
        }
        plan.base = base;
    }
    // The read-ahead ends (cancel_warm) before this call returns, so no buffer can vanish under it.
    struct WarmGuard {
        ThreadPool& pool;
        ~WarmGuard() { pool.cancel_warm(); }
    } guard{*be.pool};
    const bool warm = be.repack && be.pool->size() > 1;
    if (be.profile) {
        const auto t = Profile::Clock::now();
        be.prof.add("checks+plan", std::chrono::duration<double>(t - t_start).count());
        t_start = t;
    }
    // Packed weights of every matmul group, resolved once (packing on first use): the run and the read-ahead
    // both need them.
    std::vector<PackedWeight>& packs = be.packs_scratch;
    packs.assign(nn, PackedWeight{});
    std::vector<bool>& packed = be.packed_scratch;
    packed.assign(nn, false);
    for (size_t i = 0; i < nn;) {
        const size_t end = group_end[i] > i + 1 ? group_end[i] : i + 1;
        if (graph->nodes[i]->op == BASALT_OP_MATMUL) packed[i] = packed_group(&ctx[i], end - i, &packs[i]);
        i = end;
    }
    Profile::Clock::time_point t0 = t_start;
    if (be.profile) {
        const auto t = Profile::Clock::now();
        be.prof.add("packing", std::chrono::duration<double>(t - t0).count());
        t0 = t;
    }
    for (size_t i = 0; i < nn;) {
        const size_t end = group_end[i] > i + 1 ? group_end[i] : i + 1;
        if (graph->nodes[i]->op == BASALT_OP_MATMUL) {
            run_matmul_group(&ctx[i], end - i, packed[i] ? &packs[i] : nullptr);
        } else if (!plan.reshaped[i]) {
            op_impl(graph->nodes[i]->op)->run(ctx[i]);
        }
        if (const size_t j = next_matmul[end]; warm && j < nn && j > end && (i == 0 || next_matmul[i] == i)) {
            warm_matmul_group(&ctx[j], group_end[j] - j, packed[j] ? &packs[j] : nullptr);
        }
        if (be.profile) {
            const auto t = Profile::Clock::now();
            be.prof.add(plan.reshaped[i] ? "(reshape)" : op_name(graph->nodes[i]->op),
                        std::chrono::duration<double>(t - t0).count());
            t0 = t;
        }
        i = end;
    }
    if (be.profile) be.prof.graph_done();
}

}  // namespace basalt::cpu
