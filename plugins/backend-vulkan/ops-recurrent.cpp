// SLICE and the recurrent ops of hybrid architectures: SSM_CONV (ssm_conv.comp) and GATED_DELTA (gated_delta.comp,
// the recurrent form; gated_delta_chunked.comp, the chunked form for prefill), whose per-sequence state (an input)
// the shaders read and write in place; the barrier after every dispatch (recording.cpp) orders them with the nodes
// that follow.
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "op-helpers.hpp"
#include "ops.hpp"

namespace basalt::vk::ops {

namespace {

// The shaders index these tensors as packed arrays (element offsets from their start).
void need_packed(const NodeCtx& c, std::initializer_list<int> inputs) {
    for (int i : inputs) {
        if (!c.in[i].rows_packed()) {
            c.fail(BASALT_ERR_UNSUPPORTED, "input " + std::to_string(i) + " " + c.in[i].shape() + " is not packed");
        }
    }
    if (!c.out.rows_packed()) c.fail(BASALT_ERR_UNSUPPORTED, "output " + c.out.shape() + " is not packed");
}

// Workgroups of kElemWg invocations for n invocations (one per channel or state row).
uint32_t groups_for(int64_t n) {
    return static_cast<uint32_t>((n + kElemWg - 1) / kElemWg);
}

// GATED_DELTA's forms, on the CPU backend's rule (plugins/backend-cpu/ops-recurrent.cpp), per sequence: chunks for
// a slot with kChunkFrom tokens or more in the node, token by token for the others, so a sequence's floats do not
// depend on what shares its step. The slots are in the (slot, fresh) input, which the host does not read (a kept
// recording replays with new rows), so with the hint 0 and enough tokens both forms are recorded and each shader
// skips the other's slots (a slot never mixes forms: they run one after the other). kChunkMax is the chunked
// shader's CMAX (its shared memory); a larger hint runs chunks of kChunkMax, which the hint's "at most C" allows.
constexpr int64_t kChunkFrom = 16;
constexpr int64_t kChunkMax = 32;
// State rows per workgroup of the chunked shader's two variants (its ROWS: shaders/CMakeLists.txt).
constexpr int64_t kChunkRows128 = 32;
constexpr int64_t kChunkRows256 = 16;

}  // namespace

void record_slice(NodeCtx& c) {
    const Placed a = c.be->place(c.in[0]);
    const Placed o = c.be->place(c.out);
    push::SlicePush pc{};
    pc.n = u32(c.out.ne[0]);
    pc.rows = u32(c.out.nrows());
    pc.offset = u32(c.ip(sdk::op::slice::offset));
    pc.src = tensor_ref(a, c.in[0]);
    pc.dst = tensor_ref(o, c.out);
    run(c, "slice", kElemWg, {a, o}, pc, elem_groups(static_cast<uint64_t>(c.out.nelements())), 1, 1);
}

void check_ssm_conv(const NodeCtx& c) {
    check_contract(c);
    need_packed(c, {0, 1, 3});
    if (c.in[2].ne[0] * 4 != c.in[2].nb[1] || c.in[2].nb[0] != 4) {
        c.fail(BASALT_ERR_UNSUPPORTED, "state " + c.in[2].shape() + " rows are not contiguous");
    }
}

void record_ssm_conv(NodeCtx& c) {
    const Placed x = c.be->place(c.in[0]);
    const Placed w = c.be->place(c.in[1]);
    const Placed s = c.be->place(c.in[2]);
    const Placed r = c.be->place(c.in[3]);
    const Placed o = c.be->place(c.out);
    push::SsmConvPush pc{};
    pc.channels = u32(c.in[0].ne[0]);
    pc.tokens = u32(c.in[0].ne[1]);
    pc.kernel = u32(c.in[1].ne[0]);
    pc.x_offset = x.delta;
    pc.w_offset = w.delta;
    pc.state_offset = s.delta;
    pc.state_nb1 = u32(c.in[2].nb[1]);
    pc.rows_offset = r.delta;
    pc.dst_offset = o.delta;
    run(c, "ssm_conv", kElemWg, {x, w, s, r, o}, pc, groups_for(c.in[0].ne[0]), 1, 1);
}

void check_gated_delta(const NodeCtx& c) {
    check_contract(c);
    need_packed(c, {0, 1, 2, 3, 4, 6});
    if (c.in[5].ne[0] * 4 != c.in[5].nb[1] || c.in[5].nb[0] != 4) {
        c.fail(BASALT_ERR_UNSUPPORTED, "state " + c.in[5].shape() + " rows are not contiguous");
    }
    if (c.in[0].ne[0] > 256) {
        c.fail(BASALT_ERR_UNSUPPORTED, "key head size " + std::to_string(c.in[0].ne[0]) + " is over 256");
    }
}

void record_gated_delta(NodeCtx& c) {
    Placed p[8];
    for (int i = 0; i < 7; ++i) p[i] = c.be->place(c.in[i]);
    p[7] = c.be->place(c.out);
    push::GatedDeltaPush pc{};
    pc.dk = u32(c.in[0].ne[0]);
    pc.nk = u32(c.in[0].ne[1]);
    pc.tokens = u32(c.in[0].ne[2]);
    pc.dv = u32(c.in[2].ne[0]);
    pc.nv = u32(c.in[2].ne[1]);
    pc.q_offset = p[0].delta;
    pc.k_offset = p[1].delta;
    pc.v_offset = p[2].delta;
    pc.g_offset = p[3].delta;
    pc.beta_offset = p[4].delta;
    pc.state_offset = p[5].delta;
    pc.state_nb1 = u32(c.in[5].nb[1]);
    pc.rows_offset = p[6].delta;
    pc.dst_offset = p[7].delta;
    const std::vector<Placed> bound(p, p + 8);
    const int64_t hint = c.ip(sdk::op::gated_delta::chunk);
    // With the hint 0 and kChunkFrom tokens or more the device picks per slot: each form runs its side of kChunkFrom.
    // The chunked shader reads k and q in chunkable: key heads of other sizes take the recurrent form (as every node
    // does with BASALT_VK_DELTA_CHUNKS=0).
    const bool chunkable = c.in[0].ne[0] % 4 == 0 && c.be->delta_chunks();
    const bool pick = hint == 0 && c.in[0].ne[2] >= kChunkFrom && chunkable;
    const bool recurrent = hint == 1 || hint == 0 || !chunkable;
    const bool chunked = (hint > 1 && chunkable) || pick;
    pc.chunk_from = pick ? u32(kChunkFrom) : 0;
    if (recurrent) {
        pc.chunk = 1;
        run(c, "gated_delta", kElemWg, bound, pc, groups_for(c.in[2].ne[0] * c.in[2].ne[1]), 1, 1);
    }
    if (chunked) {
        pc.chunk = u32(hint > 1 ? std::min<int64_t>(hint, kChunkMax) : kChunkMax);
        pc.kq_vec4 = p[0].delta % 16 == 0 && p[1].delta % 16 == 0 ? 1u : 0u;
        const bool wide = c.in[0].ne[0] > 128;
        const int64_t rows = wide ? kChunkRows256 : kChunkRows128;
        run(c, wide ? "gated_delta_chunked_d256" : "gated_delta_chunked", kElemWg, bound, pc, pc.nv,
            u32((c.in[2].ne[0] + rows - 1) / rows), 1);
    }
}

}  // namespace basalt::vk::ops
