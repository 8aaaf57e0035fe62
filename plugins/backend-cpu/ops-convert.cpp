// CAST (type conversion through F32, same shape) and COPY (same type and element count, any row strides).
#include <cstring>
#include <vector>

#include <basalt/sdk/op-contracts.hpp>

#include "graph.hpp"

namespace basalt::cpu {

void check_cast(const NodeCtx& c) {
    if (!can_dequantize(c.in[0].type)) {
        c.fail(BASALT_ERR_UNSUPPORTED, "cast from " + type_name(c.in[0].type) + " is not supported");
    }
    if (!can_quantize(c.out.type))
        c.fail(BASALT_ERR_UNSUPPORTED, "cast to " + type_name(c.out.type) + " is not supported");
    sdk::contract::cast(c);
}

void run_cast(NodeCtx& c) {
    const int64_t n = c.out.ne[0];
    const int64_t rows = c.out.nrows();
    const int64_t tasks = chunk_count(rows, c.be->pool->size(), std::max<int64_t>(1, 16384 / n));
    const int64_t per = (rows + tasks - 1) / tasks;
    c.be->pool->parallel_for(tasks, [&](int64_t t, int) {
        std::vector<float> tmp(static_cast<size_t>(n));
        for (int64_t r = t * per; r < std::min(rows, (t + 1) * per); ++r) {
            dequantize_row(c.in[0].type, c.in[0].row(r), tmp.data(), n);
            quantize_row(c.out.type, tmp.data(), c.out.row(r), n);
        }
    });
}

void run_copy(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const TensorView& y = c.out;
    const TypeInfo* ti = type_info(x.type);
    if (x.ne[0] == y.ne[0]) {
        const int64_t bytes = x.ne[0] / ti->block * ti->bytes;
        for (int64_t r = 0; r < x.nrows(); ++r) std::memmove(y.row(r), x.row(r), static_cast<size_t>(bytes));
        return;
    }
    if (x.rows_packed() && y.rows_packed()) {
        std::memmove(y.data, x.data, static_cast<size_t>(x.nelements() / ti->block * ti->bytes));
        return;
    }
    // Element by element in logical order (block size 1 here).
    const int64_t es = ti->bytes;
    for (int64_t i = 0; i < x.nelements(); ++i) {
        std::memmove(y.row(i / y.ne[0]) + (i % y.ne[0]) * es, x.row(i / x.ne[0]) + (i % x.ne[0]) * es,
                     static_cast<size_t>(es));
    }
}

}  // namespace basalt::cpu
