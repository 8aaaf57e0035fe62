// Tensor placement: each node's tensors checked and viewed (type, shape, strides, extent, buffer range),
// the node checked against its op, intermediates placed in the arena, and a tensor's bytes resolved to the
// chunk and aligned range a shader binds.
#include <basalt/blocks/dtype.hpp>
#include <basalt/sdk/arena-plan.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "backend.hpp"
#include "common.hpp"

namespace basalt::vk {
namespace {

constexpr uint64_t kArenaAlign = 256;

// The alignment of a tensor's offset and strides: a plain type's element size; 2 for block types with f16 fields
// (even block sizes); 1 for MXFP4's 17-byte blocks (bytes only: the shaders read them at any byte offset).
int64_t stride_align(const TensorView& v) {
    if (v.block == 1) return v.block_bytes;
    return v.block_bytes % 2 == 0 ? 2 : 1;
}

// Copies the tensor's dimensions and strides into v and checks them (v.block and v.block_bytes set): positive
// sizes, aligned strides, whole blocks, contiguous rows, an extent that 32-bit shader indexing reaches.
void fill_geometry(TensorView& v, const basalt_tensor* t, const basalt_graph_node* n, size_t ni,
                   const std::string& who) {
    if (t->n_dims < 1 || t->n_dims > 4) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who + " has n_dims " + std::to_string(t->n_dims) + " (1..4)");
    }
    const int64_t align = stride_align(v);
    for (int i = 0; i < t->n_dims; ++i) {
        if (t->ne[i] < 1 || t->ne[i] > (int64_t{1} << 32)) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who + " has ne[" + std::to_string(i) + "] = " + std::to_string(t->ne[i]));
        }
        if (t->nb[i] < 0 || t->nb[i] % align != 0) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who + " has nb[" + std::to_string(i) + "] = " + std::to_string(t->nb[i]) +
                          " (must be >= 0 and a multiple of " + std::to_string(align) + ")");
        }
        v.ne[i] = t->ne[i];
        v.nb[i] = t->nb[i];
    }
    for (int i = t->n_dims; i < 4; ++i) v.nb[i] = v.nb[i - 1] * v.ne[i - 1];
    if (v.ne[0] % v.block != 0) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  who + " has ne[0] = " + std::to_string(v.ne[0]) + ", not a multiple of " + type_name(v.type) +
                      "'s block of " + std::to_string(v.block));
    }
    if (v.nb[0] != v.block_bytes) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED,
                  who + " has nb[0] = " + std::to_string(v.nb[0]) + "; rows must be contiguous");
    }
    __extension__ typedef __int128 i128;
    i128 ext = v.row_bytes();
    for (int i = 1; i < 4; ++i) ext += static_cast<i128>(v.ne[i] - 1) * v.nb[i];
    if (ext >= (static_cast<i128>(1) << 32) * 4 || static_cast<i128>(v.nelements()) >= (static_cast<i128>(1) << 32)) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED, who + " " + v.shape() + " is too large for 32-bit shader indexing");
    }
    v.extent = static_cast<uint64_t>(ext);
}

}  // namespace

TensorView Backend::make_view(const basalt_graph* g, const basalt_graph_node* n, size_t ni, int32_t index,
                              const char* role) const {
    if (index < 0 || static_cast<size_t>(index) >= g->n_tensors) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  std::string(role) + " tensor index " + std::to_string(index) + " is outside the graph's " +
                      std::to_string(g->n_tensors) + " tensors");
    }
    const basalt_tensor* t = g->tensors[index];
    std::string who = role;
    who.append(" ");
    if (t != nullptr && t->name != nullptr) {
        who.append("'").append(t->name).append("'");
    } else {
        who.append("#").append(std::to_string(index));
    }
    if (t == nullptr || t->struct_size < sizeof(basalt_tensor)) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who + " is NULL or has a too small struct_size");
    }
    TensorView v;
    v.t = t;
    v.index = index;
    v.type = t->dtype;
    const blocks::DtypeTraits* tr = blocks::dtype_traits(t->dtype);
    if (tr == nullptr || !(type_readable(t->dtype) || t->dtype == BASALT_DTYPE_I32)) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED, who + " has unsupported type " + type_name(t->dtype));
    }
    v.block = tr->block_size;
    v.block_bytes = static_cast<int64_t>(tr->type_size);
    fill_geometry(v, t, n, ni, who);
    const int64_t align = stride_align(v);
    if (t->buffer != nullptr) {
        if (!owns(t->buffer)) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who + " refers to a buffer this backend does not own");
        }
        if (t->offset % static_cast<uint64_t>(align) != 0) {
            fail_node(
                n, ni, BASALT_ERR_INVALID_ARGUMENT,
                who + " has offset " + std::to_string(t->offset) + ", not a multiple of " + std::to_string(align));
        }
        if (t->offset > t->buffer->size || v.extent > t->buffer->size - t->offset) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who + " (offset " + std::to_string(t->offset) + ", " + std::to_string(v.extent) +
                          " bytes) exceeds its buffer of " + std::to_string(t->buffer->size) + " bytes");
        }
    }
    return v;
}

bool Backend::placeable(const TensorView& v, std::string* why) const {
    if (v.t->buffer == nullptr) return true;
    const basalt_buffer* b = v.t->buffer;
    for (const auto& c : b->chunks) {
        if (v.t->offset >= c.begin && v.t->offset + v.extent <= c.begin + c.size) return true;
    }
    if (why != nullptr) {
        *why = "tensor '" + std::string(v.t->name != nullptr ? v.t->name : "?") + "' (" + std::to_string(v.extent) +
               " bytes at offset " + std::to_string(v.t->offset) + ") straddles two device memory chunks";
    }
    return false;
}

Placed Backend::place(const TensorView& v, uint64_t begin, uint64_t bytes) const {
    if (bytes == UINT64_MAX) bytes = v.extent - begin;
    Placed p;
    if (v.t->buffer == nullptr) {
        const uint64_t start = inter_offset_[static_cast<size_t>(v.index)] + begin;
        const uint64_t aligned = start / offset_align_ * offset_align_;
        // Ranges end on 16 bytes (chunks do too), so shaders may read whole 16-byte vectors.
        p.bind =
            Binding{arena_.buf, aligned, std::min(arena_.size - aligned, (start - aligned + bytes + 15) / 16 * 16)};
        p.delta = static_cast<uint32_t>(start - aligned);
        return p;
    }
    const basalt_buffer* b = v.t->buffer;
    const uint64_t start = v.t->offset + begin;
    for (const auto& c : b->chunks) {
        if (start >= c.begin && start + bytes <= c.begin + c.size) {
            const uint64_t local = start - c.begin;
            const uint64_t aligned = local / offset_align_ * offset_align_;
            p.bind = Binding{c.buf, aligned, std::min(c.size - aligned, (local - aligned + bytes + 15) / 16 * 16)};
            p.delta = static_cast<uint32_t>(local - aligned);
            return p;
        }
    }
    throw sdk::error(BASALT_ERR_UNSUPPORTED, std::string(kLabel) + ": a tensor straddles two memory chunks");
}

NodeCtx Backend::check_node(const basalt_graph* g, size_t ni) {
    const basalt_graph_node* n = g->nodes[ni];
    if (n == nullptr || n->struct_size < sizeof(basalt_graph_node)) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, "node is NULL or has a too small struct_size");
    }
    const OpImpl* impl = op_impl(n->op);
    if (impl == nullptr) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED, "op " + std::to_string(n->op) + " is not implemented");
    }
    if (n->n_inputs < impl->min_inputs || n->n_inputs > impl->max_inputs) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  "has " + std::to_string(n->n_inputs) + " inputs, expected " + std::to_string(impl->min_inputs));
    }
    NodeCtx c;
    c.backend = kLabel;
    c.be = this;
    c.graph = g;
    c.node = n;
    c.index = ni;
    c.n_in = n->n_inputs;
    static const char* const kRoles[] = {"input 0", "input 1", "input 2", "input 3",
                                         "input 4", "input 5", "input 6", "input 7"};
    for (int i = 0; i < n->n_inputs; ++i) c.in[i] = make_view(g, n, ni, n->inputs[i], kRoles[i]);
    c.out = make_view(g, n, ni, n->output, "output");
    const TensorView& o = c.out;
    if ((o.ne[1] > 1 && o.nb[1] < o.row_bytes()) || (o.ne[2] > 1 && o.nb[2] < o.nb[1] * o.ne[1]) ||
        (o.ne[3] > 1 && o.nb[3] < o.nb[2] * o.ne[2])) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + o.shape() + " has overlapping rows");
    }
    if (o.t->buffer != nullptr && o.t->buffer->chunks.size() > 1) {
        c.fail(BASALT_ERR_UNSUPPORTED, "output is in a buffer split into " +
                                           std::to_string(o.t->buffer->chunks.size()) +
                                           " chunks (only weights may be that large)");
    }
    impl->check(c);
    std::string why;
    for (int i = 0; i < n->n_inputs; ++i) {
        // (a GET_ROWS table is read in windows that each lie in one chunk: check_get_rows)
        if (n->op == BASALT_OP_GET_ROWS && i == 0) continue;
        if (!placeable(c.in[i], &why)) c.fail(BASALT_ERR_UNSUPPORTED, why);
    }
    if (!placeable(c.out, &why)) c.fail(BASALT_ERR_UNSUPPORTED, why);
    return c;
}

bool Backend::supports(const basalt_graph* g, size_t node, std::string* why) {
    if (g == nullptr || g->struct_size < sizeof(basalt_graph) || node >= g->n_nodes || g->nodes == nullptr ||
        g->tensors == nullptr) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": supports_node: bad graph or node index");
    }
    try {
        check_node(g, node);
    } catch (const sdk::error& e) {
        if (e.status() != BASALT_ERR_UNSUPPORTED) throw;
        if (why != nullptr) *why = e.what();
        return false;
    }
    return true;
}

// Intermediates: written before read, placed in the arena, released after their last reader.
void Backend::place_intermediates(const basalt_graph* g, const std::vector<NodeCtx>& ctx,
                                  const std::vector<bool>& reshaped) {
    const auto plan = sdk::plan_intermediates(
        g, kArenaAlign, [&](size_t i) { return ctx[i].out.extent; },
        [&](size_t i) { return ctx[i].fused_mul != nullptr; },
        [&](size_t i) { return reshaped[i] ? int64_t{g->nodes[i]->inputs[0]} : int64_t{-1}; });
    if (plan.bad_node >= 0) {
        const basalt_graph_node* n = g->nodes[plan.bad_node];
        const basalt_tensor* t = g->tensors[n->inputs[plan.bad_input]];
        fail_node(
            n, static_cast<size_t>(plan.bad_node), BASALT_ERR_INVALID_ARGUMENT,
            "reads intermediate '" + std::string(t->name ? t->name : "?") + "' (no buffer) before any node writes it");
    }
    inter_offset_ = plan.offset;
    if (plan.peak > 0) ensure_arena(plan.peak);
}

}  // namespace basalt::vk
