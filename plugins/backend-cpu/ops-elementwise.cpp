// Row-wise F32 ops: ADD, MUL, SCALE, RMS_NORM, LAYER_NORM, SOFTMAX, SILU, GELU, GELU_ERF, TANH, SIGMOID, SOFTPLUS,
// SWIGLU, GEGLU, SWIGLU_OAI, ROPE.
// Reductions accumulate in double: these are the reference numerics and cost little next to the matmuls.
#include <algorithm>
#include <cmath>
#include <vector>

#include "graph.hpp"

#include <basalt/sdk/rope-yarn.hpp>

namespace basalt::cpu {
namespace {

// Positions below this use the backend's ROPE tables (2 * half floats per position: 8 MiB at most per table for
// head dim 128, at most 4 tables); later positions compute their angles directly, as every position used to.
constexpr int64_t kRopeTableRows = int64_t{1} << 14;

// Runs body(row_begin, row_end) over the output's rows, in parallel when the tensor is big enough.
template <typename F>
void for_rows(NodeCtx& c, F&& body) {
    const int64_t rows = c.out.nrows();
    const int64_t min_rows = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, c.out.ne[0]));
    const int64_t tasks = chunk_count(rows, c.be->pool->size(), min_rows);
    const int64_t per = (rows + tasks - 1) / tasks;
    c.be->pool->parallel_for(tasks, [&](int64_t t, int) {
        const int64_t r0 = t * per;
        const int64_t r1 = std::min(rows, r0 + per);
        for (int64_t r = r0; r < r1; ++r) body(r);
    });
}

template <typename F>
void unary(NodeCtx& c, F&& f) {
    const int64_t n = c.out.ne[0];
    for_rows(c, [&](int64_t r) {
        const float* x = c.in[0].frow(r);
        float* y = c.out.frow(r);
        f(x, y, n);
    });
}

// y = a op b with the kernel table's row function (b broadcast when it has one row).
void binary_rows(NodeCtx& c, void (*row)(int64_t, const float*, const float*, float*)) {
    const int64_t n = c.out.ne[0];
    const bool bcast = c.in[1].nrows() == 1 && c.in[0].nrows() != 1;
    for_rows(c, [&](int64_t r) { row(n, c.in[0].frow(r), c.in[1].frow(bcast ? 0 : r), c.out.frow(r)); });
}

template <typename F>
void binary(NodeCtx& c, F&& f) {
    const int64_t n = c.out.ne[0];
    const bool bcast = c.in[1].nrows() == 1 && c.in[0].nrows() != 1;
    for_rows(c, [&](int64_t r) {
        const float* a = c.in[0].frow(r);
        const float* b = c.in[1].frow(bcast ? 0 : r);
        float* y = c.out.frow(r);
        for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
    });
}

float gelu_tanh(float x) {
    constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.0f + std::tanh(kC * (x + 0.044715f * x * x * x)));
}

}  // namespace

void run_add(NodeCtx& c) {
    binary_rows(c, c.be->kernels.add_f32);
}

void run_mul(NodeCtx& c) {
    binary_rows(c, c.be->kernels.mul_f32);
}

void run_scale(NodeCtx& c) {
    const float s = c.fp(op::scale::factor);
    unary(c, [s](const float* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
    });
}

void run_rms_norm(NodeCtx& c) {
    const double eps = c.fp(op::rms_norm::eps);
    unary(c, [eps](const float* x, float* y, int64_t n) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
        const auto scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
    });
}

void run_layer_norm(NodeCtx& c) {
    const double eps = c.fp(op::layer_norm::eps);
    unary(c, [eps](const float* x, float* y, int64_t n) {
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += x[i];
        const double mean = sum / static_cast<double>(n);
        double var = 0;
        for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
        const double inv = 1.0 / std::sqrt(var / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>((x[i] - mean) * inv);
    });
}

void run_softmax(NodeCtx& c) {
    const float s = c.fp(op::softmax::scale);
    unary(c, [s](const float* x, float* y, int64_t n) {
        float mx = -INFINITY;
        for (int64_t i = 0; i < n; ++i) mx = std::fmax(mx, x[i] * s);
        if (std::isinf(mx) && mx < 0) {  // every input is -inf: no preference
            for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / static_cast<float>(n);
            return;
        }
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) {
            y[i] = std::exp(x[i] * s - mx);
            sum += y[i];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        for (int64_t i = 0; i < n; ++i) y[i] *= inv;
    });
}

void run_silu(NodeCtx& c) {
    const auto silu_row = c.be->kernels.silu;
    unary(c, [&](const float* x, float* y, int64_t n) { silu_row(n, x, y); });
}

void run_gelu(NodeCtx& c) {
    if (const auto gelu_row = c.be->kernels.gelu; gelu_row != nullptr) {
        unary(c, [&](const float* x, float* y, int64_t n) { gelu_row(n, x, y); });
        return;
    }
    unary(c, [](const float* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = gelu_tanh(x[i]);
    });
}

void run_gelu_erf(NodeCtx& c) {
    unary(c, [](const float* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
    });
}

void run_tanh(NodeCtx& c) {
    unary(c, [](const float* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
    });
}

// 1 / (1 + e^-x) overflows to 0 cleanly for x -> -inf (e^-x = inf) and is 1 for large x.
void run_sigmoid(NodeCtx& c) {
    unary(c, [](const float* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
    });
}

// ln(1 + e^x), and x itself past 20 where the two agree in float (ggml's threshold).
void run_softplus(NodeCtx& c) {
    unary(c, [](const float* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 20.0f ? x[i] : std::log1p(std::exp(x[i]));
    });
}

void run_swiglu(NodeCtx& c) {
    binary_rows(c, c.be->kernels.swiglu);
}

void run_geglu(NodeCtx& c) {
    if (c.be->kernels.geglu != nullptr) return binary_rows(c, c.be->kernels.geglu);
    binary(c, [](float a, float b) { return gelu_tanh(a) * b; });
}

// In ggml's order of operations: x / (1 + e^(-alpha x)) * (y + 1).
void run_swiglu_oai(NodeCtx& c) {
    const float alpha = c.fp(op::swiglu_oai::alpha);
    const float limit = c.fp(op::swiglu_oai::limit);
    binary(c, [alpha, limit](float g, float u) {
        const float x = std::min(g, limit);
        const float y = std::clamp(u, -limit, limit);
        return x / (1.0f + std::exp(alpha * -x)) * (y + 1.0f);
    });
}

void run_rope(NodeCtx& c) {
    const int64_t hd = c.in[0].ne[0];
    const int64_t n_head = c.in[0].ne[1];
    const int64_t tokens = c.in[0].ne[2] * c.in[0].ne[3];
    const int half = c.ip(op::rope::n_rot) / 2;
    const bool neox = c.ip(op::rope::mode) == 1;
    const double base = c.fp(op::rope::freq_base);
    const double fscale = c.fp(op::rope::freq_scale);
    const auto* pos = reinterpret_cast<const int32_t*>(c.in[1].data);
    RopeTable key;
    key.base = base;
    key.fscale = fscale;
    key.half = half;
    if (c.node->n_inputs == 3) {
        const auto* f = reinterpret_cast<const float*>(c.in[2].data);
        key.factors.assign(f, f + half);
    }
    key.ext_factor = c.fp(op::rope::ext_factor);
    key.attn_factor = c.fp(op::rope::attn_factor);
    key.beta_fast = c.fp(op::rope::beta_fast);
    key.beta_slow = c.fp(op::rope::beta_slow);
    key.n_ctx_orig = c.ip(op::rope::n_ctx_orig);
    const bool scaled =
        !key.factors.empty() || key.ext_factor != 0.0f || (key.attn_factor != 0.0f && key.attn_factor != 1.0f);
    const auto n_rot = 2 * half;
    const sdk::rope_yarn::CorrDims corr =
        key.ext_factor != 0.0f
            ? sdk::rope_yarn::corr_dims(n_rot, key.n_ctx_orig, static_cast<float>(base), key.beta_fast, key.beta_slow)
            : sdk::rope_yarn::CorrDims{};
    const float mscale = sdk::rope_yarn::magnitude(key.attn_factor, key.ext_factor, static_cast<float>(fscale));
    const float theta_scale = std::pow(static_cast<float>(base), -2.0f / static_cast<float>(2 * half));
    // The angles of a position, as the table holds them (the one formula for both paths). Unscaled: the angle as
    // before 1.4; scaled: ggml's (the factor divides the unscaled angle, YaRN mixes it with the scaled one).
    auto angles = [&](int32_t p, float* cs) {
        for (int i = 0; i < half; ++i) {
            if (!scaled) {
                const double theta = p * fscale * std::pow(base, -2.0 * i / (2.0 * half));
                cs[2 * i] = static_cast<float>(std::cos(theta));
                cs[2 * i + 1] = static_cast<float>(std::sin(theta));
                continue;
            }
            // ggml's single-precision angle (llama.cpp's goldens): the unscaled angle of pair i is the position
            // times theta_scale^i, multiplied up pair by pair in float.
            float extrap = static_cast<float>(p);
            for (int j = 0; j < i; ++j) extrap *= theta_scale;
            if (!key.factors.empty()) extrap /= key.factors[static_cast<size_t>(i)];
            const float interp = static_cast<float>(fscale) * extrap;
            float theta = interp;
            if (key.ext_factor != 0.0f) {
                const float mix = sdk::rope_yarn::ramp(corr, i) * key.ext_factor;
                theta = interp * (1.0f - mix) + extrap * mix;
            }
            cs[2 * i] = std::cos(theta) * mscale;
            cs[2 * i + 1] = std::sin(theta) * mscale;
        }
    };
    // Positions in [0, kRopeTableRows) come from the backend's table, filled here up to the largest one needed.
    std::vector<RopeTable>& tables = c.be->rope;
    auto found = std::find_if(tables.begin(), tables.end(), [&](const RopeTable& r) {
        return r.base == base && r.fscale == fscale && r.half == half && r.factors == key.factors &&
               r.ext_factor == key.ext_factor && r.attn_factor == key.attn_factor && r.beta_fast == key.beta_fast &&
               r.beta_slow == key.beta_slow && r.n_ctx_orig == key.n_ctx_orig;
    });
    if (found == tables.end()) {
        if (tables.size() >= 4) tables.erase(tables.begin());
        tables.push_back(key);  // a copy: the angles below read key
        found = tables.end() - 1;
    }
    RopeTable& table = *found;
    int64_t need = 0;
    for (int64_t t = 0; t < tokens; ++t) {
        if (pos[t] >= 0 && pos[t] < kRopeTableRows) need = std::max<int64_t>(need, int64_t{pos[t]} + 1);
    }
    if (need > table.rows) {
        table.cs.resize(static_cast<size_t>(need * 2 * half));
        for (int64_t p = table.rows; p < need; ++p) angles(static_cast<int32_t>(p), table.cs.data() + p * 2 * half);
        table.rows = need;
    }
    const int64_t tasks = chunk_count(tokens, c.be->pool->size(), std::max<int64_t>(1, 4096 / (hd * n_head)));
    const int64_t per = (tokens + tasks - 1) / tasks;
    c.be->pool->parallel_for(tasks, [&](int64_t task, int) {
        std::vector<float> own;  // angles of positions past the table (allocated only for those)
        for (int64_t t = task * per; t < std::min(tokens, (task + 1) * per); ++t) {
            const float* cs = nullptr;
            if (pos[t] >= 0 && pos[t] < table.rows) {
                cs = table.cs.data() + int64_t{pos[t]} * 2 * half;
            } else {
                own.resize(static_cast<size_t>(2 * half));
                angles(pos[t], own.data());
                cs = own.data();
            }
            for (int64_t h = 0; h < n_head; ++h) {
                const int64_t r = t * n_head + h;
                const float* x = c.in[0].frow(r);
                float* y = c.out.frow(r);
                for (int i = 0; i < half; ++i) {
                    const int64_t a = neox ? i : 2 * i;
                    const int64_t b = neox ? i + half : 2 * i + 1;
                    const float x0 = x[a];
                    const float x1 = x[b];
                    const float co = cs[2 * i];
                    const float si = cs[2 * i + 1];
                    y[a] = x0 * co - x1 * si;
                    y[b] = x0 * si + x1 * co;
                }
                if (y != x) {
                    for (int64_t i = 2 * half; i < hd; ++i) y[i] = x[i];
                }
            }
        }
    });
}

}  // namespace basalt::cpu
