// CAST (type conversion through F32, same shape) and COPY (same type and element count, any row strides).
#include <cstring>
#include <vector>

#include "graph.hpp"

namespace basalt::cpu {

void check_cast(const NodeCtx& c) {
    if (!can_dequantize(c.in[0].type)) {
        c.fail(BASALT_ERR_UNSUPPORTED, "cast from " + type_name(c.in[0].type) + " is not supported");
    }
    if (!can_quantize(c.out.type))
        c.fail(BASALT_ERR_UNSUPPORTED, "cast to " + type_name(c.out.type) + " is not supported");
    c.expect_same_shape(c.in[0], "input 0", c.out, "output");
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

void check_copy(const NodeCtx& c) {
    if (c.in[0].type != c.out.type) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "input type " + type_name(c.in[0].type) + " differs from output type " + type_name(c.out.type));
    }
    if (c.in[0].nelements() != c.out.nelements()) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT,
               "input " + c.in[0].shape() + " and output " + c.out.shape() + " differ in element count");
    }
    const bool same_rows = c.in[0].ne[0] == c.out.ne[0];
    const bool packed = c.in[0].rows_packed() && c.out.rows_packed();
    if (!same_rows && !packed && type_info(c.out.type)->block != 1) {
        c.fail(BASALT_ERR_UNSUPPORTED, "reshaping copy of strided " + type_name(c.out.type) + " tensors");
    }
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
