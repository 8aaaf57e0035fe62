// Data movement: GET_ROWS (any readable type; row windows for tables larger than one binding), CAST and COPY.
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op-helpers.hpp"
#include "ops.hpp"

namespace basalt::vk::ops {

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
    // A table across the chunks of a buffer larger than one allocation (gemma4's per-layer embeddings: 8960 x 262144
    // values) is read in windows of chunk_window() bytes, each within one chunk.
    std::string why;
    if (!c.be->placeable(src, &why) &&
        (src.ne[2] != 1 || src.ne[3] != 1 || static_cast<uint64_t>(src.nb[1]) + 256 > c.be->chunk_window())) {
        c.fail(BASALT_ERR_UNSUPPORTED, why + ", and its rows cannot be read in windows within one chunk");
    }
}

void record_get_rows(NodeCtx& c) {
    const TensorView& src = c.in[0];
    const int64_t rows = src.nrows();
    // Windows within one binding, and within one chunk when the table spans several.
    const uint64_t room = c.be->placeable(src, nullptr) ? c.be->max_range() - 256
                                                        : std::min(c.be->max_range(), c.be->chunk_window()) - 256;
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
        push::GetRowsPush pc{};
        pc.n = u32(src.ne[0]);
        pc.n_ids = u32(c.in[1].nelements());
        pc.src_type = u32(src.type);
        pc.src = tensor_ref(s, src);
        pc.ids_offset = ids.delta;
        pc.dst = tensor_ref(out, c.out);
        pc.first_row = u32(lo);
        pc.end_row = u32(hi);
        pc.last_window = hi == rows ? 1u : 0u;
        pc.table_rows = u32(rows);
        run(c, "get_rows", c.be->row_wg(), {s, ids, out}, pc, gx, 1, gz);
    }
}

namespace {

bool cast_target_ok(basalt_dtype t) {
    return t == BASALT_DTYPE_F32 || t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_BF16 || t == BASALT_DTYPE_Q8_0;
}

}  // namespace

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
    push::ConvertPush pc{};
    pc.n = u32(x.ne[0]);
    pc.rows = u32(x.nrows());
    pc.src_type = u32(x.type);
    pc.dst_type = u32(c.out.type);
    pc.src = tensor_ref(xp, x);
    pc.dst = tensor_ref(op, c.out);
    const uint64_t units = static_cast<uint64_t>(c.out.type == BASALT_DTYPE_Q8_0 ? x.ne[0] / 32 : x.ne[0]);
    run(c, "cast", kElemWg, {xp, op}, pc, elem_groups(units * static_cast<uint64_t>(x.nrows())), 1, 1);
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
    push::CopyPush pc{};
    pc.total = u32(static_cast<int64_t>(total));
    pc.unit_bytes = es;
    pc.src_row_units = u32(xr);
    pc.dst_row_units = u32(yr);
    pc.src = tensor_ref(xp, x);
    pc.dst = tensor_ref(yp, y);
    run(c, "copy", kElemWg, {xp, yp}, pc, elem_groups(total), 1, 1);
}

}  // namespace basalt::vk::ops
