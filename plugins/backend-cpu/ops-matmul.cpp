// MATMUL, MOE_MATMUL and GET_ROWS. Matmuls convert the activations once to the weight type's ActFormat
// (Q8_0 / Q8_1 / Q8_K / F16 / F32) and run the ISA's dot product on the weight blocks directly; threads
// split the output rows (weight rows), and each task walks tokens in tiles so a weight row stays in cache. With
// more than one activation row, the ISA's several-columns kernel (vec_dot_multi) computes a few tokens per weight
// row pass, and where the ISA has one, a register-blocked kernel (vec_dot_block) a few weight rows x a few tokens
// per call; both are bit-identical to the single-column dot product. Repacked Q8_0 / Q4_0 / MXFP4 weights
// (packed.hpp; MOE_MATMUL's experts too) take the packed kernels: one 16-row group against up to 16 columns per
// call, K in slices kept in L1.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include <basalt/sdk/op-contracts.hpp>

#include "graph.hpp"

namespace basalt::cpu {
namespace {

// One weight matrix applied to a list of activation rows: out[col][n] = dot(W row n, act[col]).
struct MatJob {
    const uint8_t* w = nullptr;  // row n at w + n * w_stride
    int64_t w_stride = 0;
    int64_t n_rows = 0;
    std::vector<const void*> act;  // converted activation rows
    std::vector<float*> out;       // output row per activation (element n at out[col][n])
};

constexpr int64_t kTokenTile = 16;
// Bytes of the next matmul's weights a worker reads ahead while the caller runs small ops (within L2).
constexpr int64_t kWarmBytes = 512 * 1024;
constexpr int64_t kRowsOwn = 32;           // weight rows an owner takes from its span at once (row kernels)
constexpr int64_t kRowsSteal = 16;         // rows a thief takes from another's span at once
constexpr int64_t kPackedOwnGroups = 4;    // groups an owner takes from its span at once (4 x 16 rows)
constexpr int64_t kPackedStealGroups = 2;  // groups a thief takes from another's span at once
constexpr int64_t kTileBytes = 16384;
constexpr int64_t kBlockTileBytes = 512 * 1024;
constexpr int64_t kBlockRowBytes = 128 * 1024;
constexpr int64_t kSliceFootprint = 24 * 1024;  // packed several-columns kernel: L1 bytes of one K slice

// Items [g0, g1) of several nodes laid end to end (node m holds [first[m], first[m + 1])): f(m, lo, hi) for each
// node's part, with lo and hi counted within the node.
template <typename F>
void for_node_slices(const std::vector<int64_t>& first, int64_t g0, int64_t g1, F&& f) {
    size_t m = 0;
    for (int64_t g = g0; g < g1;) {
        while (first[m + 1] <= g) ++m;
        const int64_t end = std::min(g1, first[m + 1]);
        f(m, g - first[m], end - first[m]);
        g = end;
    }
}

// Converts rows of F32 activations into the ActFormat (F32: used in place), laid out as `layout` says.
std::vector<const void*> convert_rows(NodeCtx& c, ActFormat f, const TensorView& x,
                                      MultiAct layout = MultiAct::Native) {
    const int64_t rows = x.nrows();
    const int64_t k = x.ne[0];
    std::vector<const void*> ptr(static_cast<size_t>(rows));
    if ((layout == MultiAct::F32Rounded && f == ActFormat::F16) ||
        (layout == MultiAct::Q8Split && f == ActFormat::Q8_0)) {
        const int64_t rb = layout == MultiAct::F32Rounded ? k * static_cast<int64_t>(sizeof(float)) : 2 * k;
        c.be->scratch.resize(static_cast<size_t>(rb * rows));
        uint8_t* base = c.be->scratch.data();
        const int64_t tasks = chunk_count(rows, c.be->pool->size(), std::max<int64_t>(1, 8192 / k));
        const int64_t per = (rows + tasks - 1) / tasks;
        c.be->pool->parallel_for(tasks, [&](int64_t t, int) {
            std::vector<BlockQ8_0> blocks(layout == MultiAct::Q8Split ? static_cast<size_t>(k / kQK) : 0);
            for (int64_t r = t * per; r < std::min(rows, (t + 1) * per); ++r) {
                const float* src = x.frow(r);
                uint8_t* row = base + r * rb;
                if (layout == MultiAct::F32Rounded) {
                    c.be->kernels.round_f16(k, src, reinterpret_cast<float*>(row));
                    continue;
                }
                quantize_row_q8_0(src, blocks.data(), k);
                auto* scales = reinterpret_cast<float*>(row + k);
                for (int64_t b = 0; b < k / kQK; ++b) {
                    std::memcpy(row + b * kQK, blocks[static_cast<size_t>(b)].qs, kQK);
                    const float d = fp16_to_fp32(blocks[static_cast<size_t>(b)].d);
                    for (int l = 0; l < 8; ++l) scales[b * 8 + l] = d;
                }
            }
        });
        for (int64_t r = 0; r < rows; ++r) ptr[static_cast<size_t>(r)] = base + r * rb;
        return ptr;
    }
    if (f == ActFormat::F32) {
        for (int64_t r = 0; r < rows; ++r) ptr[static_cast<size_t>(r)] = x.row(r);
        return ptr;
    }
    const int64_t rb = act_row_bytes(f, k);
    c.be->scratch.resize(static_cast<size_t>(rb * rows));
    uint8_t* base = c.be->scratch.data();
    const int64_t tasks = chunk_count(rows, c.be->pool->size(), std::max<int64_t>(1, 8192 / k));
    const int64_t per = (rows + tasks - 1) / tasks;
    c.be->pool->parallel_for(tasks, [&](int64_t t, int) {
        for (int64_t r = t * per; r < std::min(rows, (t + 1) * per); ++r) {
            convert_activations(f, x.frow(r), base + r * rb, k);
        }
    });
    for (int64_t r = 0; r < rows; ++r) ptr[static_cast<size_t>(r)] = base + r * rb;
    return ptr;
}

// Whether this matmul takes the several-columns kernel (only with more than one activation row, so decode keeps
// the single-column kernel and its activation format).
bool use_multi(const NodeCtx& c, basalt_dtype wtype, int64_t act_rows) {
    return act_rows > 1 && c.be->kernels.vec_dot_multi[wtype] != nullptr && c.be->kernels.multi_cols[wtype] > 1;
}

void run_jobs(NodeCtx& c, basalt_dtype wtype, int64_t k, const std::vector<MatJob>& jobs, bool multi) {
    const VecDotFn dot = c.be->kernels.vec_dot[wtype];
    const VecDotMultiFn dot_multi = multi ? c.be->kernels.vec_dot_multi[wtype] : nullptr;
    const int64_t mcols = multi ? c.be->kernels.multi_cols[wtype] : 1;
    // Several-columns kernel: a token tile of about kTileBytes of activations, so it stays in L1 while the
    // weight rows stream past it.
    int64_t tile = kTokenTile;
    // Bytes of one converted activation row in the several-columns layout.
    const MultiAct layout = c.be->kernels.multi_act[wtype];
    const int64_t rb = layout == MultiAct::Q8Split      ? 2 * k
                       : layout == MultiAct::F32Rounded ? 4 * k
                                                        : act_row_bytes(act_format(wtype), k);
    if (multi) {
        tile = std::clamp<int64_t>(kTileBytes / std::max<int64_t>(1, rb) / mcols * mcols, mcols, kTokenTile);
    }
    // Register blocks (several weight rows x several columns per call). A task walks its rows in tiles of about
    // kBlockRowBytes of weights (L2) and its tokens in tiles of about kBlockTileBytes of activations (L2); inside,
    // one column block (in L1) meets every row block of the row tile in turn.
    const VecDotBlockFn dot_block = multi ? c.be->kernels.vec_dot_block[wtype] : nullptr;
    const int64_t brows = dot_block != nullptr ? c.be->kernels.block_rows[wtype] : 1;
    const int64_t bcols = dot_block != nullptr ? c.be->kernels.block_cols[wtype] : 1;
    int64_t btile = 0;
    int64_t rtile = 0;
    if (dot_block != nullptr) {
        btile = std::max<int64_t>(bcols, kBlockTileBytes / std::max<int64_t>(1, rb) / bcols * bcols);
        const int64_t wb = jobs.empty() ? 1 : std::max<int64_t>(1, jobs[0].w_stride);
        rtile = std::max<int64_t>(brows, kBlockRowBytes / wb / brows * brows);
    }
    const int threads = c.be->pool->size();
    if (dot_multi == nullptr) {
        // Rows one at a time (every decode matvec here): the jobs' rows as one index space, split in spans
        // (ThreadPool::parallel_spans).
        std::vector<int64_t> first(jobs.size() + 1, 0);
        for (size_t j = 0; j < jobs.size(); ++j) first[j + 1] = first[j] + (jobs[j].act.empty() ? 0 : jobs[j].n_rows);
        const int64_t total = first.back();
        auto run_rows = [&](int64_t g0, int64_t g1) {
            for_node_slices(first, g0, g1, [&](size_t j, int64_t r0, int64_t r1) {
                const MatJob& job = jobs[j];
                const auto cols = static_cast<int64_t>(job.act.size());
                for (int64_t c0 = 0; c0 < cols; c0 += kTokenTile) {
                    const int64_t c1 = std::min(cols, c0 + kTokenTile);
                    for (int64_t n = r0; n < r1; ++n) {
                        const uint8_t* wr = job.w + n * job.w_stride;
                        for (int64_t col = c0; col < c1; ++col) {
                            job.out[static_cast<size_t>(col)][n] = dot(k, wr, job.act[static_cast<size_t>(col)]);
                        }
                    }
                }
            });
        };
        c.be->pool->parallel_spans(total, kRowsOwn, kRowsSteal, [&](int64_t g0, int64_t g1, int) { run_rows(g0, g1); });
        return;
    }
    // Tasks: (job, row chunk). Aim for a few chunks per thread over all jobs together; with register blocks a
    // chunk is a whole number of row blocks.
    int64_t total_rows = 0;
    for (const MatJob& j : jobs) total_rows += j.n_rows;
    int64_t chunk = std::max<int64_t>(4, total_rows / (static_cast<int64_t>(threads) * 4) + 1);
    chunk = (chunk + brows - 1) / brows * brows;
    struct Task {
        size_t job;
        int64_t r0;
        int64_t r1;
    };
    std::vector<Task> tasks;
    for (size_t j = 0; j < jobs.size(); ++j) {
        if (jobs[j].act.empty()) continue;
        for (int64_t r = 0; r < jobs[j].n_rows; r += chunk)
            tasks.push_back({j, r, std::min(jobs[j].n_rows, r + chunk)});
    }
    c.be->pool->parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t ti, int) {
        const Task& t = tasks[static_cast<size_t>(ti)];
        const MatJob& job = jobs[t.job];
        const auto cols = static_cast<int64_t>(job.act.size());
        float res[kTokenTile];
        int64_t n0 = t.r0;
        if (dot_block != nullptr) {
            const int64_t nb_end = t.r0 + (t.r1 - t.r0) / brows * brows;
            for (int64_t ra = t.r0; ra < nb_end; ra += rtile) {
                const int64_t re = std::min(nb_end, ra + rtile);
                for (int64_t c0 = 0; c0 < cols; c0 += btile) {
                    const int64_t c1 = std::min(cols, c0 + btile);
                    for (int64_t col = c0; col < c1; col += bcols) {
                        const int nc = static_cast<int>(std::min(bcols, c1 - col));
                        for (int64_t n = ra; n < re; n += brows) {
                            dot_block(k, job.w + n * job.w_stride, job.w_stride, job.act.data() + col, nc,
                                      job.out.data() + col, n);
                        }
                    }
                }
            }
            n0 = nb_end;
        }
        for (int64_t c0 = 0; c0 < cols; c0 += tile) {
            const int64_t c1 = std::min(cols, c0 + tile);
            for (int64_t n = n0; n < t.r1; ++n) {
                const uint8_t* wr = job.w + n * job.w_stride;
                for (int64_t col = c0; col < c1; col += mcols) {
                    const int nc = static_cast<int>(std::min(mcols, c1 - col));
                    dot_multi(k, wr, job.act.data() + col, nc, res);
                    for (int j = 0; j < nc; ++j) job.out[static_cast<size_t>(col + j)][n] = res[j];
                }
            }
        }
    });
}

void check_weights(const NodeCtx& c, const TensorView& w) {
    if (w.type < 0 || w.type >= kMaxDtype || !matmul_weight_supported(w.type) ||
        c.be->kernels.vec_dot[w.type] == nullptr) {
        c.fail(BASALT_ERR_UNSUPPORTED, "weight type " + type_name(w.type) + " is not supported");
    }
}

// Whether weights of `type` are repacked by this backend (Q8_0 always when repack is on; Q4_0 and MXFP4 where
// the ISA has their packed kernels).
bool packable(const Backend& be, basalt_dtype type) {
    return be.repack &&
           (type == BASALT_DTYPE_Q8_0 || (type == BASALT_DTYPE_Q4_0 && be.kernels.packed_q4_0_cols != nullptr) ||
            (type == BASALT_DTYPE_MXFP4 && be.kernels.packed_mxfp4_cols != nullptr));
}

// The packed copy of a MATMUL node's weights (one 2-D matrix) or of a MOE_MATMUL node's (`experts`: every
// expert's matrix), or nullptr when the node takes the row-at-a-time kernels: only Q8_0 / Q4_0 / MXFP4 weights
// held in a weights buffer (wrapped host memory or BASALT_BUFFER_WEIGHTS) that this graph does not write.
const PackedWeight* packed_weights(const NodeCtx& c, bool experts = false) {
    const TensorView& w = c.in[0];
    const basalt_buffer* buf = w.t->buffer;
    Backend& be = *c.be;
    if (!packable(be, w.type) || buf == nullptr) return nullptr;
    if (!buf->read_only && (buf->usage & BASALT_BUFFER_WEIGHTS) == 0) return nullptr;
    if ((!experts && w.ne[2] != 1) || w.ne[3] != 1 || w.nb[0] != type_info(w.type)->bytes) return nullptr;
    const std::vector<const basalt_buffer*>& written = be.plan.written;
    if (std::find(written.begin(), written.end(), buf) != written.end()) return nullptr;
    return be.packs->get(*be.pool, buf, w.data, w.ne[1], w.ne[0], w.nb[1], w.type, experts ? w.ne[2] : 1,
                         experts ? w.nb[2] : 0);
}

// The packed kernels for weights of `type` and `cols` activation rows: a one-row kernel (dot) or a several-rows
// one (dot_cols, which then takes every group).
struct PackedKernels {
    PackedDotFn dot = nullptr;
    PackedColsFn dot_cols = nullptr;
};
PackedKernels packed_kernels(const Kernels& ks, basalt_dtype type, int64_t cols) {
    if (type == BASALT_DTYPE_MXFP4)
        return cols == 1 ? PackedKernels{ks.packed_mxfp4_stream, nullptr}
                         : PackedKernels{nullptr, ks.packed_mxfp4_cols};
    // Q4_0 groups take their several-columns kernel for several rows, and for one row (decode) when the ISA has
    // no direct one-row kernel.
    if (type == BASALT_DTYPE_Q4_0)
        return cols == 1 && ks.packed_q4_0_stream != nullptr ? PackedKernels{ks.packed_q4_0_stream, nullptr}
                                                             : PackedKernels{nullptr, ks.packed_q4_0_cols};
    if (cols > 1 && ks.packed_q8_0_cols != nullptr) return {nullptr, ks.packed_q8_0_cols};
    return {cols == 1 && ks.packed_q8_0_stream != nullptr ? ks.packed_q8_0_stream : ks.packed_q8_0, nullptr};
}

// A K slice of the several-columns kernel: about kSliceFootprint bytes of L1 for its weights (512 a block, as
// expanded) and every column's activations (68 a block).
int64_t slice_for(int nc) {
    return std::clamp<int64_t>(kSliceFootprint / (512 + 68 * nc) / 2 * 2, 2, kPackedMaxSlice);
}

// One packed group (valid rows) against `cols` activation rows (row j at a + j * rb) written to out[j] + off,
// through pk; the lines of `next` (the following group, or nullptr) are requested meanwhile by the several-columns
// kernel, a share of them per call.
void packed_group_cols(const PackedKernels& pk, int64_t k, const uint8_t* group, int64_t gb, const uint8_t* a,
                       int64_t rb, int64_t cols, float* const* out, int64_t off, int valid, const uint8_t* next) {
    if (pk.dot_cols == nullptr) {
        for (int64_t col = 0; col < cols; ++col) pk.dot(k, group, a + col * rb, out[col] + off, valid);
        return;
    }
    const int64_t calls = (cols + kPackedCols - 1) / kPackedCols;
    const int64_t share = (gb / 64 + calls - 1) / calls * 64;
    for (int64_t c0 = 0; c0 < cols; c0 += kPackedCols) {
        const int nc = static_cast<int>(std::min<int64_t>(kPackedCols, cols - c0));
        const int64_t at = c0 / kPackedCols * share;
        pk.dot_cols(k, group, a + c0 * rb, rb, nc, out + c0, off, valid,
                    next != nullptr && at < gb ? next + at : nullptr, std::min<int64_t>(share, gb - at), slice_for(nc));
    }
}

// The groups of n packed nodes in one index space: node m holds global groups [first[m], first[m + 1]).
void packed_first(const PackedWeight* packs, size_t n, std::vector<int64_t>& first) {
    first.assign(n + 1, 0);
    for (size_t m = 0; m < n; ++m) first[m + 1] = first[m] + (packs[m].rows + kPackRows - 1) / kPackRows;
}

// Where worker w (1..threads-1) reads ahead for a group of `total` packed groups: its even share's start.
int64_t warm_start(int64_t total, int w, int threads) {
    return ThreadPool::span_begin(total, w, threads);
}

// One packed activation row: the ISA's quantizer where it has one (same bytes), else the scalar one.
void quantize_act(const Backend& be, const float* x, uint8_t* y, int64_t k) {
    if (be.kernels.quantize_packed_act == nullptr || !be.kernels.quantize_packed_act(x, y, k))
        quantize_row_packed_act(x, y, k);
}

// MATMULs of one input through packed weights: activations quantized once into the packed layout, then tasks
// of whole 16-row groups; each group meets every column in turn while its weights are in L1.
void run_packed(NodeCtx* ctx, size_t n, const PackedWeight* packs) {
    NodeCtx& c = ctx[0];
    Backend& be = *c.be;
    const TensorView& x = c.in[1];
    const int64_t k = x.ne[0];
    const int64_t cols = x.nrows();
    const int64_t rb = (packed_act_bytes(k) + 63) / 64 * 64;
    be.scratch.resize(static_cast<size_t>(rb * cols));
    uint8_t* base = be.scratch.data();
    const int threads = be.pool->size();
    if (cols == 1) {
        quantize_act(be, x.frow(0), base, k);
    } else {
        const int64_t tasks = chunk_count(cols, threads, std::max<int64_t>(1, 8192 / k));
        const int64_t per = (cols + tasks - 1) / tasks;
        be.pool->parallel_for(tasks, [&](int64_t t, int) {
            for (int64_t r = t * per; r < std::min(cols, (t + 1) * per); ++r)
                quantize_act(be, x.frow(r), base + r * rb, k);
        });
    }
    // Output rows (node m, column col at m * cols + col) and each node's first group, in vectors the backend
    // keeps: no allocation per matvec on the calling thread's path.
    std::vector<float*>& out = be.packed_out;
    out.resize(n * static_cast<size_t>(cols));
    for (size_t m = 0; m < n; ++m) {
        for (int64_t r = 0; r < cols; ++r)
            out[m * static_cast<size_t>(cols) + static_cast<size_t>(r)] = ctx[m].out.frow(r);
    }
    std::vector<int64_t>& first = be.packed_first;
    packed_first(packs, n, first);
    const int64_t total = first.back();
    // Thread t owns the span [warm_start(t), warm_start(t + 1)) of groups (parallel_spans and warm_start both
    // split by ThreadPool::span_begin): a worker's read-ahead is the start of its span.
    const basalt_dtype type = packs[0].type;
    const int64_t gb = packed_group_bytes(type, k / kQK);
    const PackedKernels pk = packed_kernels(be.kernels, type, cols);
    auto run_groups = [&](int64_t g0, int64_t g1) {
        for_node_slices(first, g0, g1, [&](size_t m, int64_t lo, int64_t hi) {
            const PackedWeight& p = packs[m];
            for (int64_t g = lo; g < hi; ++g) {
                const int valid = static_cast<int>(std::min<int64_t>(kPackRows, p.rows - g * kPackRows));
                packed_group_cols(pk, k, p.data + g * gb, gb, base, rb, cols,
                                  out.data() + m * static_cast<size_t>(cols), g * kPackRows, valid,
                                  g + 1 < hi ? p.data + (g + 1) * gb : nullptr);
            }
        });
    };
    // Profiling a decode matvec on 2+ threads: how late the first worker starts its share, and how long the
    // caller waits after its last chunk for the region to end (both are cross-core latency, not work).
    const bool timed = be.profile && cols == 1 && threads > 1;
    std::atomic<int64_t> worker_start{0};
    int64_t caller_end = 0;
    const auto since = [t0 = Profile::Clock::now()] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(Profile::Clock::now() - t0).count() + 1;
    };
    be.pool->parallel_spans(total, kPackedOwnGroups, kPackedStealGroups, [&](int64_t g0, int64_t g1, int thread) {
        if (timed && thread == 1 && worker_start.load(std::memory_order_relaxed) == 0) {
            worker_start.store(since(), std::memory_order_relaxed);
        }
        run_groups(g0, g1);
        if (timed && thread == 0) caller_end = since();
    });
    if (timed) {
        const int64_t end = since();
        if (const int64_t w = worker_start.load(std::memory_order_relaxed); w != 0) {
            be.prof.add_detail("matvec: worker starts after", static_cast<double>(w) * 1e-9);
        }
        if (caller_end != 0)
            be.prof.add_detail("matvec: caller waits at end", static_cast<double>(end - caller_end) * 1e-9);
    }
}

// MOE_MATMUL through packed expert weights: the (token, slot) pairs sorted by expert, each pair's activation row
// quantized into the packed layout at its place in that order (so an expert's columns lie one after the other),
// then tasks of whole 16-row groups of the selected experts only, as run_packed's; each group meets all of its
// expert's columns while its weights are in L1. The kernels give the row kernels' floats, so the outputs equal
// run_jobs' bit for bit.
void run_moe_packed(NodeCtx& c, const PackedWeight& p, const int32_t* id, int64_t k, int64_t tokens, bool shared) {
    Backend& be = *c.be;
    const TensorView& x = c.in[1];
    const int64_t kin = p.k;
    const int64_t pairs = k * tokens;
    const int64_t rb = (packed_act_bytes(kin) + 63) / 64 * 64;
    // Counting sort by expert: expert e's columns at [start[e], start[e + 1]).
    std::vector<int64_t> start(static_cast<size_t>(p.experts + 1), 0);
    for (int64_t i = 0; i < pairs; ++i) ++start[static_cast<size_t>(id[i]) + 1];
    for (int64_t e = 0; e < p.experts; ++e) start[static_cast<size_t>(e + 1)] += start[static_cast<size_t>(e)];
    std::vector<int64_t> src(static_cast<size_t>(pairs));  // the x row of each column
    std::vector<float*>& out = be.packed_out;
    out.resize(static_cast<size_t>(pairs));
    {
        std::vector<int64_t> fill(start.begin(), start.end() - 1);
        for (int64_t t = 0; t < tokens; ++t) {
            for (int64_t s = 0; s < k; ++s) {
                const auto pos = static_cast<size_t>(fill[static_cast<size_t>(id[t * k + s])]++);
                src[pos] = shared ? t : t * k + s;
                out[pos] = reinterpret_cast<float*>(c.out.at(0, s, t));
            }
        }
    }
    be.scratch.resize(static_cast<size_t>(rb * pairs));
    uint8_t* base = be.scratch.data();
    const int threads = be.pool->size();
    if (pairs * kin <= 16384) {  // decode: a few rows, on the calling thread
        for (int64_t r = 0; r < pairs; ++r) quantize_act(be, x.frow(src[static_cast<size_t>(r)]), base + r * rb, kin);
    } else {
        const int64_t tasks = chunk_count(pairs, threads, std::max<int64_t>(1, 8192 / kin));
        const int64_t per = (pairs + tasks - 1) / tasks;
        be.pool->parallel_for(tasks, [&](int64_t t, int) {
            for (int64_t r = t * per; r < std::min(pairs, (t + 1) * per); ++r)
                quantize_act(be, x.frow(src[static_cast<size_t>(r)]), base + r * rb, kin);
        });
    }
    // The selected experts' groups in one index space: active expert m holds [first[m], first[m + 1]).
    std::vector<int64_t> active;
    for (int64_t e = 0; e < p.experts; ++e) {
        if (start[static_cast<size_t>(e + 1)] > start[static_cast<size_t>(e)]) active.push_back(e);
    }
    const int64_t groups = packed_groups(p);
    std::vector<int64_t>& first = be.packed_first;
    first.assign(active.size() + 1, 0);
    for (size_t m = 0; m < active.size(); ++m) first[m + 1] = first[m] + groups;
    const int64_t gb = packed_group_bytes(p.type, kin / kQK);
    be.pool->parallel_spans(first.back(), kPackedOwnGroups, kPackedStealGroups, [&](int64_t g0, int64_t g1, int) {
        for_node_slices(first, g0, g1, [&](size_t m, int64_t lo, int64_t hi) {
            const int64_t e = active[m];
            const int64_t c0 = start[static_cast<size_t>(e)];
            const int64_t cols = start[static_cast<size_t>(e + 1)] - c0;
            const PackedKernels pk = packed_kernels(be.kernels, p.type, cols);
            const uint8_t* data = p.data + e * groups * gb;
            for (int64_t g = lo; g < hi; ++g) {
                const int valid = static_cast<int>(std::min<int64_t>(kPackRows, p.rows - g * kPackRows));
                packed_group_cols(pk, kin, data + g * gb, gb, base + c0 * rb, rb, cols, out.data() + c0, g * kPackRows,
                                  valid, g + 1 < hi ? data + (g + 1) * gb : nullptr);
            }
        });
    });
}

}  // namespace

void check_matmul(const NodeCtx& c) {
    check_weights(c, c.in[0]);
    sdk::contract::matmul(c);
}

bool packed_group(NodeCtx* ctx, size_t n, PackedWeight* out) {
    if (!packable(*ctx[0].be, ctx[0].in[0].type)) return false;
    for (size_t m = 0; m < n; ++m) {
        if (ctx[m].in[0].type != ctx[0].in[0].type) return false;  // one kernel per group
        const PackedWeight* p = packed_weights(ctx[m]);
        if (p == nullptr) return false;
        out[m] = *p;
    }
    return true;
}

void run_matmul_group(NodeCtx* ctx, size_t n, const PackedWeight* packs) {
    NodeCtx& c = ctx[0];
    const TensorView& w0 = c.in[0];
    if (packs != nullptr) return run_packed(ctx, n, packs);
    const bool multi = use_multi(c, w0.type, c.in[1].nrows());
    const std::vector<const void*> act =
        convert_rows(c, act_format(w0.type), c.in[1], multi ? c.be->kernels.multi_act[w0.type] : MultiAct::Native);
    std::vector<MatJob> jobs(n);
    for (size_t m = 0; m < n; ++m) {
        const NodeCtx& cm = ctx[m];
        MatJob& job = jobs[m];
        job.w = cm.in[0].data;
        job.w_stride = cm.in[0].nb[1];
        job.n_rows = cm.in[0].ne[1];
        job.act = act;
        job.out.resize(act.size());
        for (int64_t r = 0; r < cm.out.nrows(); ++r) job.out[static_cast<size_t>(r)] = cm.out.frow(r);
    }
    run_jobs(c, w0.type, w0.ne[0], jobs, multi);
}

void warm_matmul_group(NodeCtx* ctx, size_t n, const PackedWeight* packs) {
    ThreadPool& pool = *ctx[0].be->pool;
    if (pool.size() < 2 || packs == nullptr || ctx[0].in[1].nrows() != 1) return;
    std::vector<int64_t>& first = ctx[0].be->packed_first;  // the last group's run is over: reuse its vector
    packed_first(packs, n, first);
    const int64_t total = first.back();
    const int64_t gb = packed_group_bytes(packs[0].type, packs[0].k / kQK);
    for (int w = 1; w < pool.size(); ++w) {
        int64_t g = warm_start(total, w, pool.size());
        int64_t budget = std::min<int64_t>(warm_start(total, w + 1, pool.size()) - g, kWarmBytes / gb);
        const void* seg[2] = {nullptr, nullptr};
        size_t len[2] = {0, 0};
        size_t m = 0;
        for (int part = 0; part < 2 && budget > 0; ++part) {
            while (first[m + 1] <= g) ++m;
            const int64_t take = std::min(budget, first[m + 1] - g);
            seg[part] = packs[m].data + (g - first[m]) * gb;
            len[part] = static_cast<size_t>(take * gb);
            g += take;
            budget -= take;
        }
        pool.warm(w, seg[0], len[0], seg[1], len[1]);
    }
}

void run_matmul(NodeCtx& c) {
    PackedWeight p;
    run_matmul_group(&c, 1, packed_group(&c, 1, &p) ? &p : nullptr);
}

void check_moe_matmul(const NodeCtx& c) {
    check_weights(c, c.in[0]);
    sdk::contract::moe_matmul(c);
}

void run_moe_matmul(NodeCtx& c) {
    const TensorView& w = c.in[0];
    const TensorView& x = c.in[1];
    const TensorView& ids = c.in[2];
    const int64_t k = ids.ne[0];
    const int64_t tokens = ids.ne[1];
    const int64_t n_expert = w.ne[2];
    const bool shared = !(x.ne[1] == k && x.ne[2] == tokens && (x.t->n_dims >= 3 || tokens == 1));
    const auto* id = reinterpret_cast<const int32_t*>(ids.data);
    for (int64_t i = 0; i < k * tokens; ++i) {
        if (id[i] < 0 || id[i] >= n_expert) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "expert id " + std::to_string(id[i]) + " at (" + std::to_string(i % k) +
                                                    ", " + std::to_string(i / k) + ") is outside 0.." +
                                                    std::to_string(n_expert - 1));
        }
    }
    if (const PackedWeight* p = packed_weights(c, true); p != nullptr)
        return run_moe_packed(c, *p, id, k, tokens, shared);
    const bool multi = use_multi(c, w.type, x.nrows());
    const std::vector<const void*> act =
        convert_rows(c, act_format(w.type), x, multi ? c.be->kernels.multi_act[w.type] : MultiAct::Native);
    std::vector<MatJob> jobs(static_cast<size_t>(n_expert));
    for (int64_t e = 0; e < n_expert; ++e) {
        MatJob& j = jobs[static_cast<size_t>(e)];
        j.w = w.data + e * w.nb[2];
        j.w_stride = w.nb[1];
        j.n_rows = w.ne[1];
    }
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t s = 0; s < k; ++s) {
            MatJob& j = jobs[static_cast<size_t>(id[t * k + s])];
            j.act.push_back(act[static_cast<size_t>(shared ? t : t * k + s)]);
            j.out.push_back(reinterpret_cast<float*>(c.out.at(0, s, t)));
        }
    }
    run_jobs(c, w.type, w.ne[0], jobs, multi);
}

void check_get_rows(const NodeCtx& c) {
    if (!can_dequantize(c.in[0].type))
        c.fail(BASALT_ERR_UNSUPPORTED, "source type " + type_name(c.in[0].type) + " is not supported");
    sdk::contract::get_rows(c);
}

void run_get_rows(NodeCtx& c) {
    const TensorView& src = c.in[0];
    const auto* id = reinterpret_cast<const int32_t*>(c.in[1].data);
    const int64_t m = c.in[1].nelements();
    const int64_t rows = src.nrows();
    for (int64_t i = 0; i < m; ++i) {
        if (id[i] < 0 || id[i] >= rows) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "row id " + std::to_string(id[i]) + " at " + std::to_string(i) +
                                                    " is outside 0.." + std::to_string(rows - 1));
        }
    }
    const int64_t tasks = chunk_count(m, c.be->pool->size(), std::max<int64_t>(1, 16384 / src.ne[0]));
    const int64_t per = (m + tasks - 1) / tasks;
    c.be->pool->parallel_for(tasks, [&](int64_t t, int) {
        for (int64_t i = t * per; i < std::min(m, (t + 1) * per); ++i) {
            dequantize_row(src.type, src.row(id[i]), c.out.frow(i), src.ne[0]);
        }
    });
}

}  // namespace basalt::cpu
