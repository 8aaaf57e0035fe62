// Cross-backend op consistency (ggml's test-backend-ops idea). One table of cases (op x type x shape, each with
// an NMSE tolerance); the reference is plain double-precision loops written here from plugin_backend.h's
// formulas, on dequantized weights. Every backend in backends_under_test() runs every case through the real
// plugin path (PluginHost -> basalt_backend_iface); a case a backend does not support is reported, and for
// backends marked `complete` it fails. The CPU backend runs once per instruction set so scalar and SIMD paths
// are both checked against the reference and against each other.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <basalt/sdk/op-decls.hpp>

#include "host/host-services.hpp"
#include "host/plugin-host.hpp"
#include "support/error.hpp"

#if __has_include(<basalt/blocks/dequantize.hpp>)
#include <basalt/blocks/dequantize.hpp>
#include <basalt/blocks/half.hpp>
namespace blk = basalt::blocks;
constexpr bool kHaveBlocks = true;
#else
#include "model/dequantize.hpp"
#include "support/half.hpp"
namespace blk = basalt;
// Until basalt_blocks exists the CPU plugin dequantizes only f32/f16/bf16/q8_0/q4_0 itself (GET_ROWS, CAST).
constexpr bool kHaveBlocks = false;
#endif

// plugin-host.cpp labels components with basalt_component_kind_name, which lives in the shared library's API
// layer, not in basalt_core; this weak stand-in lets a basalt_core-only binary link the plugin host.
extern "C" __attribute__((weak)) const char* basalt_component_kind_name(basalt_component_kind kind) {
    static const char* const kNames[] = {"", "backend", "kv_cache", "sampler", "decoder", "steering"};
    return kind >= BASALT_COMPONENT_BACKEND && kind <= BASALT_COMPONENT_STEERING ? kNames[kind] : "unknown";
}

#ifndef BASALT_TEST_BACKEND_CPU
#error "BASALT_TEST_BACKEND_CPU must name basalt-backend-cpu.so"
#endif

namespace {

// ---------------------------------------------------------------------------------------------------------
// Types and host-side tensors

struct TypeFacts {
    basalt_dtype type;
    const char* name;
    int block;
    int bytes;
};

const TypeFacts kTypes[] = {
    {BASALT_DTYPE_F32, "f32", 1, 4},
    {BASALT_DTYPE_F16, "f16", 1, 2},
    {BASALT_DTYPE_BF16, "bf16", 1, 2},
    {BASALT_DTYPE_I32, "i32", 1, 4},
    {BASALT_DTYPE_Q4_0, "q4_0", 32, 18},
    {BASALT_DTYPE_Q4_1, "q4_1", 32, 20},
    {BASALT_DTYPE_Q5_0, "q5_0", 32, 22},
    {BASALT_DTYPE_Q5_1, "q5_1", 32, 24},
    {BASALT_DTYPE_Q8_0, "q8_0", 32, 34},
    {BASALT_DTYPE_Q2_K, "q2_K", 256, 84},
    {BASALT_DTYPE_Q3_K, "q3_K", 256, 110},
    {BASALT_DTYPE_Q4_K, "q4_K", 256, 144},
    {BASALT_DTYPE_Q5_K, "q5_K", 256, 176},
    {BASALT_DTYPE_Q6_K, "q6_K", 256, 210},
    // KV-cache-only KIVI types: chunks of f16 scale, f16 minimum and 32 codes (per token / per channel).
    {BASALT_DTYPE_KIVI_T8, "kivi_t8", 32, 36},
    {BASALT_DTYPE_KIVI_T4, "kivi_t4", 32, 20},
    {BASALT_DTYPE_KIVI_T2, "kivi_t2", 32, 12},
    {BASALT_DTYPE_KIVI_C8, "kivi_c8", 32, 36},
    {BASALT_DTYPE_KIVI_C4, "kivi_c4", 32, 20},
    {BASALT_DTYPE_KIVI_C2, "kivi_c2", 32, 12},
    // MXFP4: E8M0 exponent byte + 16 bytes of E2M1 codes.
    {BASALT_DTYPE_MXFP4, "mxfp4", 32, 17},
};

// The K/V cache types a session can store.
const basalt_dtype kKvTypes[] = {BASALT_DTYPE_F32,     BASALT_DTYPE_F16,     BASALT_DTYPE_Q8_0,    BASALT_DTYPE_Q4_0,
                                 BASALT_DTYPE_KIVI_T8, BASALT_DTYPE_KIVI_T4, BASALT_DTYPE_KIVI_T2, BASALT_DTYPE_KIVI_C8,
                                 BASALT_DTYPE_KIVI_C4, BASALT_DTYPE_KIVI_C2};

// KIVI's code width (0: not a KIVI type) and whether it groups per channel, from the type ids alone.
int kivi_bits_of(basalt_dtype t) {
    switch (t) {
        case BASALT_DTYPE_KIVI_T8:
        case BASALT_DTYPE_KIVI_C8:
            return 8;
        case BASALT_DTYPE_KIVI_T4:
        case BASALT_DTYPE_KIVI_C4:
            return 4;
        case BASALT_DTYPE_KIVI_T2:
        case BASALT_DTYPE_KIVI_C2:
            return 2;
        default:
            return 0;
    }
}
bool kivi_channel(basalt_dtype t) {
    return t == BASALT_DTYPE_KIVI_C8 || t == BASALT_DTYPE_KIVI_C4 || t == BASALT_DTYPE_KIVI_C2;
}

const TypeFacts& facts(basalt_dtype t) {
    for (const auto& f : kTypes) {
        if (f.type == t) return f;
    }
    throw std::runtime_error("unknown type in test");
}

int64_t row_bytes(basalt_dtype t, int64_t ne0) {
    return ne0 / facts(t).block * facts(t).bytes;
}

enum class Kind { Input, Output, Intermediate };

struct HostTensor {
    std::string name;
    basalt_dtype type = BASALT_DTYPE_F32;
    std::vector<int64_t> ne;
    Kind kind = Kind::Input;
    std::vector<uint8_t> data;  // packed rows (inputs)
    int64_t row_pad = 0;        // extra bytes after each row in the device layout (strided views)

    int64_t nrows() const {
        int64_t r = 1;
        for (size_t i = 1; i < ne.size(); ++i) r *= ne[i];
        return r;
    }
    int64_t nelements() const { return ne[0] * nrows(); }
};

struct NodeSpec {
    basalt_op op;
    std::string name;
    int out;
    std::vector<int> in;
    std::vector<int32_t> ip;
    std::vector<float> fp;
};

struct Case {
    std::string name;
    std::vector<HostTensor> tensors;
    std::vector<NodeSpec> nodes;
    int result = -1;
    std::vector<double> expected;
    double tol = 1e-7;
    bool matmul_like = false;   // compared across ISAs with the tighter consistency tolerance
    bool needs_blocks = false;  // dequantizes a type the CPU plugin takes from basalt_blocks
};

bool plugin_dequantizes_natively(basalt_dtype t) {
    return t == BASALT_DTYPE_F32 || t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_BF16 || t == BASALT_DTYPE_Q8_0 ||
           t == BASALT_DTYPE_Q4_0;
}

using Rng = std::mt19937_64;

std::vector<float> uniform(Rng& rng, int64_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = d(rng);
    return v;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

void put_f16(uint8_t* p, float v) {
    const uint16_t h = blk::fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

// Random but well-scaled blocks: every byte random, then the fp16 scale fields set to sane magnitudes.
std::vector<uint8_t> random_blocks(Rng& rng, basalt_dtype t, int64_t n) {
    const TypeFacts& f = facts(t);
    std::vector<uint8_t> b(static_cast<size_t>(n / f.block * f.bytes));
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& x : b) x = static_cast<uint8_t>(byte(rng));
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    for (size_t o = 0; o < b.size(); o += static_cast<size_t>(f.bytes)) {
        uint8_t* p = b.data() + o;
        switch (t) {
            case BASALT_DTYPE_Q4_0:
                put_f16(p, 0.1f * u(rng));
                break;
            case BASALT_DTYPE_Q4_1:
                put_f16(p, 0.05f * u(rng));
                put_f16(p + 2, -0.4f * u(rng));
                break;
            case BASALT_DTYPE_Q5_0:
                put_f16(p, 0.05f * u(rng));
                break;
            case BASALT_DTYPE_Q5_1:
                put_f16(p, 0.03f * u(rng));
                put_f16(p + 2, -0.4f * u(rng));
                break;
            case BASALT_DTYPE_Q8_0:
                put_f16(p, 0.01f * u(rng));
                break;
            case BASALT_DTYPE_Q2_K:
                put_f16(p + 80, 0.02f * u(rng));
                put_f16(p + 82, 0.005f * u(rng));
                break;
            case BASALT_DTYPE_Q3_K:
                put_f16(p + 108, 0.005f * u(rng));
                break;
            case BASALT_DTYPE_Q4_K:
                put_f16(p, 0.001f * u(rng));
                put_f16(p + 2, 0.001f * u(rng));
                break;
            case BASALT_DTYPE_Q5_K:
                put_f16(p, 0.0005f * u(rng));
                put_f16(p + 2, 0.001f * u(rng));
                break;
            case BASALT_DTYPE_Q6_K:
                put_f16(p + 208, 0.0002f * u(rng));
                break;
            case BASALT_DTYPE_MXFP4:  // half-scales 2^-7 .. 2^-5: values up to 12 * 2^-5 = 0.375
                p[0] = static_cast<uint8_t>(121 + (p[0] % 3));
                break;
            default:
                if (kivi_bits_of(t) != 0) {  // codes spanning about [-0.6, 0.6]
                    put_f16(p, 1.2f * u(rng) / static_cast<float>((1 << kivi_bits_of(t)) - 1));
                    put_f16(p + 2, -0.6f * u(rng));
                }
                break;
        }
    }
    return b;
}

// Data of `type` holding n elements: floats rounded to the type, or random blocks.
std::vector<uint8_t> random_data(Rng& rng, basalt_dtype t, int64_t n) {
    if (t == BASALT_DTYPE_F32) return bytes_of(uniform(rng, n));
    if (t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_BF16) {
        const auto f = uniform(rng, n);
        std::vector<uint16_t> h(f.size());
        for (size_t i = 0; i < f.size(); ++i)
            h[i] = t == BASALT_DTYPE_F16 ? blk::fp32_to_fp16(f[i]) : blk::fp32_to_bf16(f[i]);
        return bytes_of(h);
    }
    return random_blocks(rng, t, n);
}

// Value i of a KIVI chunk, decoded as docs/kv-cache.md describes: f16 scale, f16 minimum, codes of `bits` bits
// packed from the low bits of each byte.
double kivi_value(const uint8_t* chunk, int bits, int i) {
    uint16_t d, m;
    std::memcpy(&d, chunk, 2);
    std::memcpy(&m, chunk + 2, 2);
    const int per_byte = 8 / bits;
    const int q = (chunk[4 + i / per_byte] >> (bits * (i % per_byte))) & ((1 << bits) - 1);
    return static_cast<double>(blk::fp16_to_fp32(m)) + static_cast<double>(blk::fp16_to_fp32(d)) * q;
}

// Logical values of packed data (any float/quantized type, or I32).
std::vector<double> values(basalt_dtype t, const uint8_t* p, int64_t n) {
    std::vector<double> out(static_cast<size_t>(n));
    if (t == BASALT_DTYPE_I32) {
        for (int64_t i = 0; i < n; ++i) {
            int32_t v;
            std::memcpy(&v, p + 4 * i, 4);
            out[static_cast<size_t>(i)] = v;
        }
        return out;
    }
    if (kivi_bits_of(t) != 0) {  // per token: consecutive chunks of 32 values (the test's own decoder)
        for (int64_t i = 0; i < n; ++i)
            out[static_cast<size_t>(i)] =
                kivi_value(p + i / 32 * (4 + 4 * kivi_bits_of(t)), kivi_bits_of(t), static_cast<int>(i % 32));
        return out;
    }
    std::vector<float> f(static_cast<size_t>(n));
    blk::dequantize_row(t, p, f.data(), n);
    for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = f[static_cast<size_t>(i)];
    return out;
}

std::vector<double> values(const HostTensor& t) {
    if (kivi_channel(t.type)) {  // per channel: group g of 32 rows holds, per channel c, one chunk over the rows
        const int bits = kivi_bits_of(t.type);
        const int64_t n = t.ne[0], cb = 4 + 4 * bits;
        std::vector<double> out(static_cast<size_t>(t.nelements()));
        for (int64_t r = 0; r < t.nrows(); ++r) {
            for (int64_t c = 0; c < n; ++c) {
                out[static_cast<size_t>(r * n + c)] =
                    kivi_value(t.data.data() + r / 32 * 32 * n / 32 * cb + c * cb, bits, static_cast<int>(r % 32));
            }
        }
        return out;
    }
    return values(t.type, t.data.data(), t.nelements());
}

// ---------------------------------------------------------------------------------------------------------
// Case construction helpers

struct Builder {
    Case c;
    Rng& rng;
    explicit Builder(Rng& r, std::string name) : rng(r) { c.name = std::move(name); }

    int add(HostTensor t) {
        c.tensors.push_back(std::move(t));
        return static_cast<int>(c.tensors.size()) - 1;
    }
    int input(const std::string& name, basalt_dtype t, std::vector<int64_t> ne) {
        HostTensor h{name, t, std::move(ne), Kind::Input, {}, 0};
        h.data = random_data(rng, t, h.nelements());
        return add(std::move(h));
    }
    int input_data(const std::string& name, basalt_dtype t, std::vector<int64_t> ne, std::vector<uint8_t> data) {
        return add(HostTensor{name, t, std::move(ne), Kind::Input, std::move(data), 0});
    }
    int ints(const std::string& name, std::vector<int64_t> ne, const std::vector<int32_t>& v) {
        return input_data(name, BASALT_DTYPE_I32, std::move(ne), bytes_of(v));
    }
    int output(const std::string& name, basalt_dtype t, std::vector<int64_t> ne) {
        return add(HostTensor{name, t, std::move(ne), Kind::Output, {}, 0});
    }
    int intermediate(const std::string& name, std::vector<int64_t> ne) {
        return add(HostTensor{name, BASALT_DTYPE_F32, std::move(ne), Kind::Intermediate, {}, 0});
    }
    void node(basalt_op op, int out, std::vector<int> in, std::vector<int32_t> ip = {}, std::vector<float> fp = {}) {
        c.nodes.push_back(
            NodeSpec{op, "node" + std::to_string(c.nodes.size()), out, std::move(in), std::move(ip), std::move(fp)});
        c.result = out;
    }
    std::vector<double> vals(int i) const { return values(c.tensors[static_cast<size_t>(i)]); }
    Case done(std::vector<double> expected, double tol) {
        c.expected = std::move(expected);
        c.tol = tol;
        return std::move(c);
    }
};

std::string shape_str(std::initializer_list<int64_t> dims) {
    std::string s;  // append(): GCC 12 reports a bogus -Wrestrict for `literal + std::string`
    for (auto d : dims) s.append(s.empty() ? "" : "x").append(std::to_string(d));
    return s;
}

// Tolerance of a matmul whose activations the backend converts for the weight type.
double matmul_tol(basalt_dtype w) {
    switch (w) {
        case BASALT_DTYPE_F32:
        case BASALT_DTYPE_BF16:
            return 1e-9;
        case BASALT_DTYPE_F16:
            return 2e-6;  // activations rounded to f16
        default:
            return 5e-4;  // activations quantized to q8 per 32 / 256
    }
}

std::vector<double> matmul_ref(const std::vector<double>& w, const std::vector<double>& x, int64_t k, int64_t n,
                               int64_t m) {
    std::vector<double> out(static_cast<size_t>(n * m));
    for (int64_t j = 0; j < m; ++j) {
        for (int64_t i = 0; i < n; ++i) {
            double s = 0;
            for (int64_t l = 0; l < k; ++l) s += w[static_cast<size_t>(i * k + l)] * x[static_cast<size_t>(j * k + l)];
            out[static_cast<size_t>(j * n + i)] = s;
        }
    }
    return out;
}

Case matmul_case(Rng& rng, basalt_dtype wt, int64_t k, int64_t n, std::vector<int64_t> xdims, int64_t pad = 0) {
    int64_t m = 1;
    for (auto d : xdims) m *= d;
    Builder b(rng, std::string("MATMUL ") + facts(wt).name + " K=" + std::to_string(k) + " N=" + std::to_string(n) +
                       " M=" + std::to_string(m) + (pad ? " strided" : ""));
    const int w = b.input("w", wt, {k, n});
    std::vector<int64_t> xne{k};
    xne.insert(xne.end(), xdims.begin(), xdims.end());
    const int x = b.input("x", BASALT_DTYPE_F32, xne);
    b.c.tensors[static_cast<size_t>(x)].row_pad = pad;
    std::vector<int64_t> one{n};
    one.insert(one.end(), xdims.begin(), xdims.end());
    const int o = b.output("out", BASALT_DTYPE_F32, one);
    b.node(BASALT_OP_MATMUL, o, {w, x});
    b.c.matmul_like = true;
    return b.done(matmul_ref(b.vals(w), b.vals(x), k, n, m), matmul_tol(wt));
}

template <typename F>
Case unary_case(Rng& rng, basalt_op op, const char* name, std::vector<int64_t> ne, std::vector<float> fp, F&& f) {
    Builder b(rng, std::string(name) + " " + std::to_string(ne[0]) + "x" + std::to_string(ne.size() > 1 ? ne[1] : 1));
    const int x = b.input("x", BASALT_DTYPE_F32, ne);
    const int o = b.output("out", BASALT_DTYPE_F32, ne);
    b.node(op, o, {x}, {}, fp);
    const auto xv = b.vals(x);
    std::vector<double> e(xv.size());
    const int64_t n = ne[0];
    for (size_t r = 0; r < xv.size() / static_cast<size_t>(n); ++r) f(&xv[r * n], &e[r * n], n);
    return b.done(e, 1e-7);
}

double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double silu(double x) {
    return x / (1.0 + std::exp(-x));
}

// ---------------------------------------------------------------------------------------------------------
// Attention

struct AttnSpec {
    int64_t hd_k = 64, hd_v = 64, n_head = 4, n_kv = 2, n_slots = 16;
    std::vector<std::vector<std::pair<int32_t, int32_t>>> lists;  // (slot, position), slot -1 = unused
    std::vector<std::pair<int32_t, int32_t>> queries;             // (list, position)
    int32_t window = 0, sinks = 0;
    float scale = 0.125f, cap = 0.0f;
    basalt_dtype kt = BASALT_DTYPE_F32, vt = BASALT_DTYPE_F32;
    std::string label;
    // ip[2] (since 1.4): sink keys at cache positions, rotated by ROPE's parameters (mode, n_rot, base, scale).
    bool cache_positions = false;
    int32_t rope_mode = 0, n_rot = 0;
    float rope_base = 10000.0f, rope_scale = 1.0f;
    bool causal = true;   // ip[5] bit 0 clear
    int32_t bias_r = -1;  // >= 0: relative position bias input [n_head, 2R + 1] (encoder-decoder models)
    // Since 1.5 (gpt-oss), ip[5] bit 1: learned sink logits [n_head] as the last input, in the softmax without a value.
    bool sink_logits = false;
    float sink_spread = 1.0f;  // the sink logits drawn uniformly in +-spread
};

Case attention_case(Rng& rng, const AttnSpec& s) {
    Builder b(rng, "ATTENTION " + s.label + " k " + facts(s.kt).name + " v " + facts(s.vt).name);
    const auto tokens = static_cast<int64_t>(s.queries.size());
    int64_t n_vis = 0;
    for (const auto& l : s.lists) n_vis = std::max<int64_t>(n_vis, static_cast<int64_t>(l.size()));
    const int q = b.input("q", BASALT_DTYPE_F32, {s.hd_k, s.n_head, tokens});
    const int kc = b.input("k_cache", s.kt, {s.hd_k * s.n_kv, s.n_slots});
    const int vc = b.input("v_cache", s.vt, {s.hd_v * s.n_kv, s.n_slots});
    std::vector<int32_t> lv;
    for (const auto& l : s.lists) {
        for (int64_t i = 0; i < n_vis; ++i) {
            if (i < static_cast<int64_t>(l.size())) {
                lv.push_back(l[static_cast<size_t>(i)].first);
                lv.push_back(l[static_cast<size_t>(i)].second);
            } else {
                lv.push_back(-1);
                lv.push_back(0);
            }
        }
    }
    std::vector<int32_t> qv;
    for (const auto& [g, p] : s.queries) {
        qv.push_back(g);
        qv.push_back(p);
    }
    const int li = b.ints("lists", {2 * n_vis, static_cast<int64_t>(s.lists.size())}, lv);
    const int qi = b.ints("queries", {2, tokens}, qv);
    const int o = b.output("out", BASALT_DTYPE_F32, {s.hd_v * s.n_head, tokens});
    const int32_t flags = (s.causal ? 0 : 1) | (s.sink_logits ? 2 : 0);  // ip[5] bit 0: not causal; bit 1: sinks
    const int32_t cp = s.cache_positions ? 1 : 0;
    std::vector<int> inputs = {q, kc, vc, li, qi};
    int bias = -1;
    if (s.bias_r >= 0) {
        bias = b.input("pos_bias", BASALT_DTYPE_F32, {s.n_head, 2 * s.bias_r + 1});
        inputs.push_back(bias);
    }
    int sink = -1;
    if (s.sink_logits) {
        std::vector<float> sv(static_cast<size_t>(s.n_head));
        std::uniform_real_distribution<float> u(-s.sink_spread, s.sink_spread);
        for (auto& x : sv) x = u(rng);
        sink = b.input_data("sink_logits", BASALT_DTYPE_F32, {s.n_head}, bytes_of(sv));
        inputs.push_back(sink);
    }
    const auto S = sink >= 0 ? b.vals(sink) : std::vector<double>{};
    b.node(BASALT_OP_ATTENTION, o, inputs, {s.window, s.sinks, cp, s.rope_mode, s.n_rot, flags},
           {s.scale, s.cap, s.rope_base, s.rope_scale});
    const auto B = bias >= 0 ? b.vals(bias) : std::vector<double>{};
    const auto Q = b.vals(q);
    const auto K = b.vals(kc);
    const auto V = b.vals(vc);
    std::vector<double> e(static_cast<size_t>(s.hd_v * s.n_head * tokens), 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
        const auto [g, pos] = s.queries[static_cast<size_t>(t)];
        for (int64_t h = 0; h < s.n_head; ++h) {
            const int64_t kvh = h / (s.n_head / s.n_kv);
            std::vector<double> sc;
            std::vector<int32_t> sl;
            for (int64_t i = 0; i < n_vis; ++i) {
                const int32_t slot = lv[static_cast<size_t>(2 * (g * n_vis + i))];
                const int32_t p = lv[static_cast<size_t>(2 * (g * n_vis + i) + 1)];
                if (slot < 0 || (s.causal && p > pos)) continue;
                if (s.window != 0 && !(p > pos - s.window || p < s.sinks)) continue;
                if (s.window != 0 && !s.causal && p >= pos + s.window) continue;  // not causal: symmetric
                std::vector<double> kr(static_cast<size_t>(s.hd_k));
                for (int64_t j = 0; j < s.hd_k; ++j) {
                    kr[static_cast<size_t>(j)] = K[static_cast<size_t>(slot * s.hd_k * s.n_kv + kvh * s.hd_k + j)];
                }
                // A sink past the first sinks + window - 1 positions: its key rotated on by the shift, as if it
                // had been written at p + shift (StreamingLLM's cache positions).
                const int64_t shift = pos - (s.sinks + s.window - 1);
                if (s.cache_positions && p < s.sinks && shift > 0) {
                    const int64_t half = s.n_rot / 2;
                    for (int64_t r = 0; r < half; ++r) {
                        const double th =
                            static_cast<double>(shift) * s.rope_scale *
                            std::pow(static_cast<double>(s.rope_base), -2.0 * static_cast<double>(r) / s.n_rot);
                        const auto a = static_cast<size_t>(s.rope_mode == 1 ? r : 2 * r);
                        const auto c = static_cast<size_t>(s.rope_mode == 1 ? r + half : 2 * r + 1);
                        const double x0 = kr[a], x1 = kr[c];
                        kr[a] = x0 * std::cos(th) - x1 * std::sin(th);
                        kr[c] = x0 * std::sin(th) + x1 * std::cos(th);
                    }
                }
                double d = 0;
                for (int64_t j = 0; j < s.hd_k; ++j) {
                    d += Q[static_cast<size_t>((t * s.n_head + h) * s.hd_k + j)] * kr[static_cast<size_t>(j)];
                }
                d *= s.scale;
                if (bias >= 0) {
                    const int32_t dist = std::clamp(p - pos, -s.bias_r, s.bias_r);
                    d += B[static_cast<size_t>((dist + s.bias_r) * s.n_head + h)];
                }
                if (s.cap > 0) d = s.cap * std::tanh(d / s.cap);
                sc.push_back(d);
                sl.push_back(slot);
            }
            if (sc.empty()) continue;
            double mx = *std::max_element(sc.begin(), sc.end());
            if (sink >= 0) mx = std::max(mx, S[static_cast<size_t>(h)]);
            double sum = sink >= 0 ? std::exp(S[static_cast<size_t>(h)] - mx) : 0.0;  // the sink has no value row
            for (auto& x : sc) sum += (x = std::exp(x - mx));
            for (size_t i = 0; i < sc.size(); ++i) {
                for (int64_t j = 0; j < s.hd_v; ++j) {
                    e[static_cast<size_t>(t * s.hd_v * s.n_head + h * s.hd_v + j)] +=
                        sc[i] / sum * V[static_cast<size_t>(sl[i] * s.hd_v * s.n_kv + kvh * s.hd_v + j)];
                }
            }
        }
    }
    return b.done(e, 1e-7);
}

// ---------------------------------------------------------------------------------------------------------
// MoE

Case moe_case(Rng& rng, basalt_dtype wt, int64_t k_in, int64_t n, int64_t n_expert, int64_t k, int64_t tokens,
              bool per_expert) {
    Builder b(rng, std::string("MOE_MATMUL ") + facts(wt).name + " " + shape_str({k_in, n, n_expert}) + " k=" +
                       std::to_string(k) + " T=" + std::to_string(tokens) + (per_expert ? " per-expert" : " shared"));
    const int w = b.input("experts", wt, {k_in, n, n_expert});
    const int x =
        per_expert ? b.input("x", BASALT_DTYPE_F32, {k_in, k, tokens}) : b.input("x", BASALT_DTYPE_F32, {k_in, tokens});
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < tokens; ++t) {
        std::vector<int32_t> all(static_cast<size_t>(n_expert));
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        for (int64_t j = 0; j < k; ++j) ids.push_back(all[static_cast<size_t>(j)]);
    }
    const int id = b.ints("ids", {k, tokens}, ids);
    const int o = b.output("out", BASALT_DTYPE_F32, {n, k, tokens});
    b.node(BASALT_OP_MOE_MATMUL, o, {w, x, id});
    const auto W = b.vals(w);
    const auto X = b.vals(x);
    std::vector<double> e(static_cast<size_t>(n * k * tokens));
    for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = 0; j < k; ++j) {
            const int64_t ex = ids[static_cast<size_t>(t * k + j)];
            const int64_t xr = per_expert ? t * k + j : t;
            for (int64_t i = 0; i < n; ++i) {
                double s = 0;
                for (int64_t l = 0; l < k_in; ++l) {
                    s += W[static_cast<size_t>((ex * n + i) * k_in + l)] * X[static_cast<size_t>(xr * k_in + l)];
                }
                e[static_cast<size_t>((t * k + j) * n + i)] = s;
            }
        }
    }
    b.c.matmul_like = true;
    return b.done(e, matmul_tol(wt));
}

// ---------------------------------------------------------------------------------------------------------
// The table

// Quantization error budget (NMSE of an attention output against unquantized K/V) of a stored K or V type: about
// 3-5x what these cases measure (f16 1e-8, 8-bit 4e-6, 4-bit 1.3e-3 and q4_0 writes 1.7e-3, 2-bit 0.03).
double kv_type_tol(basalt_dtype t) {
    switch (t) {
        case BASALT_DTYPE_F32:
            return 1e-10;
        case BASALT_DTYPE_F16:
            return 1e-7;
        case BASALT_DTYPE_Q8_0:
        case BASALT_DTYPE_KIVI_T8:
        case BASALT_DTYPE_KIVI_C8:
            return 2e-5;
        case BASALT_DTYPE_Q4_0:
        case BASALT_DTYPE_KIVI_T4:
        case BASALT_DTYPE_KIVI_C4:
            return 6e-3;
        default:
            return 0.1;  // 2 bits
    }
}

// KV_WRITE of K and V through a residual window of R = 32, then ATTENTION reading it (ABI 1.4), against float64
// attention over the unquantized rows within the types' error budgets. Sequence 0 writes 45 tokens at slots
// 64.. (positions 0..44): the unit 0..31 is sealed (quantized) by its last row, 32..44 stay in residual rows
// 0..12. Sequence 1 writes 8 tokens at slots 128.. into residual rows 32..39 (its open unit: nothing sealed).
Case attention_residual_case(Rng& rng, basalt_dtype kt, basalt_dtype vt) {
    Builder b(rng, std::string("ATTENTION residual 32 k ") + facts(kt).name + " v " + facts(vt).name);
    constexpr int64_t hd = 64, n_head = 4, n_kv = 2, R = 32, n_slots = 192, n0 = 45, n1 = 8;
    const int64_t w = hd * n_kv;
    const int64_t rows = n0 + n1;
    const int kx = b.input("k_rows", BASALT_DTYPE_F32, {w, rows});
    const int vx = b.input("v_rows", BASALT_DTYPE_F32, {w, rows});
    const int kc = b.input("k_cache", kt, {w, n_slots});
    const int vc = b.input("v_cache", vt, {w, n_slots});
    const int kr = b.input("k_residual", BASALT_DTYPE_F32, {w, 2 * R});
    const int vr = b.input("v_residual", BASALT_DTYPE_F32, {w, 2 * R});
    std::vector<int32_t> slots, rrows, lv;
    for (int64_t p = 0; p < n0; ++p) {
        slots.push_back(static_cast<int32_t>(64 + p));
        rrows.push_back(static_cast<int32_t>(p % R));
    }
    for (int64_t p = 0; p < n1; ++p) {
        slots.push_back(static_cast<int32_t>(128 + p));
        rrows.push_back(static_cast<int32_t>(R + p % R));
    }
    const int64_t n_vis = n0;
    for (int64_t i = 0; i < n_vis; ++i) lv.insert(lv.end(), {static_cast<int32_t>(64 + i), static_cast<int32_t>(i)});
    for (int64_t i = 0; i < n_vis; ++i) {
        if (i < n1) {
            lv.insert(lv.end(), {static_cast<int32_t>(128 + i), static_cast<int32_t>(i)});
        } else {
            lv.insert(lv.end(), {-1, 0});
        }
    }
    const std::vector<std::pair<int32_t, int32_t>> queries = {{0, 44}, {0, 31}, {0, 12}, {1, 7}, {1, 3}};
    std::vector<int32_t> qv;
    for (const auto& [g, p] : queries) qv.insert(qv.end(), {g, p});
    const auto tokens = static_cast<int64_t>(queries.size());
    const int sl = b.ints("slots", {rows}, slots);
    const int rr = b.ints("residual_rows", {rows}, rrows);
    const int li = b.ints("lists", {2 * n_vis, 2}, lv);
    const int qi = b.ints("queries", {2, tokens}, qv);
    const int rt = b.ints("residual_table", {2, 2}, {0, 32, static_cast<int32_t>(R), 0});
    const int q = b.input("q", BASALT_DTYPE_F32, {hd, n_head, tokens});
    const int o = b.output("out", BASALT_DTYPE_F32, {hd * n_head, tokens});
    b.node(BASALT_OP_KV_WRITE, kc, {kx, kc, sl, kr, rr}, {static_cast<int32_t>(R)});
    b.node(BASALT_OP_KV_WRITE, vc, {vx, vc, sl, vr, rr}, {static_cast<int32_t>(R)});
    b.node(BASALT_OP_ATTENTION, o, {q, kc, vc, li, qi, kr, vr, rt}, {0, 0, 0, 0, 0, 0, static_cast<int32_t>(R)},
           {0.125f, 0.f});
    const auto Q = b.vals(q);
    const auto K = b.vals(kx);
    const auto V = b.vals(vx);
    std::vector<double> e(static_cast<size_t>(hd * n_head * tokens), 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
        const auto [g, pos] = queries[static_cast<size_t>(t)];
        const int64_t first = g == 0 ? 0 : n0;  // the sequence's rows in k_rows / v_rows, by position
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t kvh = h / (n_head / n_kv);
            std::vector<double> sc;
            for (int64_t p = 0; p <= pos; ++p) {
                double d = 0;
                for (int64_t j = 0; j < hd; ++j) {
                    d += Q[static_cast<size_t>((t * n_head + h) * hd + j)] *
                         K[static_cast<size_t>((first + p) * w + kvh * hd + j)];
                }
                sc.push_back(0.125 * d);
            }
            const double mx = *std::max_element(sc.begin(), sc.end());
            double sum = 0;
            for (auto& x : sc) sum += (x = std::exp(x - mx));
            for (int64_t p = 0; p <= pos; ++p) {
                for (int64_t j = 0; j < hd; ++j) {
                    e[static_cast<size_t>(t * hd * n_head + h * hd + j)] +=
                        sc[static_cast<size_t>(p)] / sum * V[static_cast<size_t>((first + p) * w + kvh * hd + j)];
                }
            }
        }
    }
    return b.done(e, std::max(kv_type_tol(kt), kv_type_tol(vt)));
}

// The value ranges of a GATED_DELTA case: log-decay per token in [g_lo, g_hi); q's unit rows times q_scale (the
// models scale q by 1 / sqrt(dk)).
struct DeltaRanges {
    float g_lo = -2.0f;
    float g_hi = 0.0f;
    float q_scale = 1.0f;
};

// The head sizes of a GATED_DELTA case: q and k [dk, nk, T], v and the output [dv, nv, T].
struct DeltaDims {
    int64_t dk, nk, dv, nv;
};

// The float64 gated delta recurrence over the tokens of the given slots and fresh starts: the outputs [dv, nv, T];
// St (the state [dv dk nv, slots]) is left as the tokens leave it.
std::vector<double> gated_delta_reference(const std::vector<double>& Q, const std::vector<double>& Kv,
                                          const std::vector<double>& V, const std::vector<double>& G,
                                          const std::vector<double>& B, std::vector<double>& St,
                                          const std::vector<int32_t>& slot_of, const std::vector<int32_t>& fresh_of,
                                          const DeltaDims& dims) {
    const int64_t dk = dims.dk, nk = dims.nk, dv = dims.dv, nv = dims.nv;
    const auto T = static_cast<int64_t>(slot_of.size());
    std::vector<double> e(static_cast<size_t>(dv * nv * T));
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t h = 0; h < nv; ++h) {
            const int64_t hk = h % nk;
            double* s = &St[static_cast<size_t>((slot_of[static_cast<size_t>(t)] * nv + h) * dv * dk)];
            if (fresh_of[static_cast<size_t>(t)] != 0) std::fill(s, s + dv * dk, 0.0);
            const double* kt = &Kv[static_cast<size_t>((t * nk + hk) * dk)];
            const double* qt = &Q[static_cast<size_t>((t * nk + hk) * dk)];
            const double decay = std::exp(G[static_cast<size_t>(t * nv + h)]), bt = B[static_cast<size_t>(t * nv + h)];
            for (int64_t i = 0; i < dv; ++i) {
                double* si = s + i * dk;
                double sk = 0;
                for (int64_t j = 0; j < dk; ++j) sk += (si[j] *= decay) * kt[j];
                const double d = bt * (V[static_cast<size_t>((t * nv + h) * dv + i)] - sk);
                double o = 0;
                for (int64_t j = 0; j < dk; ++j) o += (si[j] += d * kt[j]) * qt[j];
                e[static_cast<size_t>((t * nv + h) * dv + i)] = o;
            }
        }
    }
    return e;
}

// `count` rows of n floats drawn from rng, each scaled to the length `to`.
std::vector<float> unit_rows(Rng& rng, int64_t n, int64_t count, float to) {
    auto v = uniform(rng, n * count);
    for (int64_t r = 0; r < count; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i)
            ss += double{v[static_cast<size_t>(r * n + i)]} * v[static_cast<size_t>(r * n + i)];
        for (int64_t i = 0; i < n; ++i) {
            float& x = v[static_cast<size_t>(r * n + i)];
            x = x / static_cast<float>(std::sqrt(ss)) * to;
        }
    }
    return v;
}

// GATED_DELTA on q, k, v, log-decay, beta and state drawn from rng (unit q and k, decays in (e^-2, 1) unless `ranges`
// says otherwise, beta in (0, 1)) for tokens of the given slots and fresh starts, with ip[0] chunk; against the
// float64 recurrence: the output or (state_out) the state left. `scale` multiplies v (and so the state's size).
void gated_delta_case(std::vector<Case>& cs, Rng& rng, const std::vector<int32_t>& slot_of,
                      const std::vector<int32_t>& fresh_of, int32_t chunk, int64_t dk, int64_t nk, int64_t dv,
                      int64_t nv, float scale, bool state_out, const DeltaRanges& ranges = {}) {
    const auto T = static_cast<int64_t>(slot_of.size());
    const int64_t S = 1 + *std::max_element(slot_of.begin(), slot_of.end());
    std::vector<int32_t> rows;
    for (size_t t = 0; t < slot_of.size(); ++t) rows.insert(rows.end(), {slot_of[t], fresh_of[t]});
    const bool ranged = ranges.g_lo != -2.0f || ranges.g_hi != 0.0f || ranges.q_scale != 1.0f;
    Builder b(rng, std::string("GATED_DELTA ") + shape_str({dk, nk, dv, nv, T}) + " chunk " + std::to_string(chunk) +
                       (ranged ? " model ranges" : "") + (state_out ? " state" : ""));
    const int q =
        b.input_data("q", BASALT_DTYPE_F32, {dk, nk, T}, bytes_of(unit_rows(rng, dk, nk * T, ranges.q_scale)));
    const int k = b.input_data("k", BASALT_DTYPE_F32, {dk, nk, T}, bytes_of(unit_rows(rng, dk, nk * T, 1.0f)));
    const int v = b.input_data("v", BASALT_DTYPE_F32, {dv, nv, T}, bytes_of(uniform(rng, dv * nv * T, -scale, scale)));
    const int g =
        b.input_data("g", BASALT_DTYPE_F32, {nv, T}, bytes_of(uniform(rng, nv * T, ranges.g_lo, ranges.g_hi)));
    const int be = b.input_data("beta", BASALT_DTYPE_F32, {nv, T}, bytes_of(uniform(rng, nv * T, 0.0f, 1.0f)));
    const int st = b.input_data("state", BASALT_DTYPE_F32, {dv * dk * nv, S}, bytes_of(uniform(rng, dv * dk * nv * S)));
    const int r = b.ints("rows", {2, T}, rows);
    const int y = state_out ? b.intermediate("y", {dv, nv, T}) : b.output("y", BASALT_DTYPE_F32, {dv, nv, T});
    b.node(BASALT_OP_GATED_DELTA, y, {q, k, v, g, be, st, r}, {chunk});
    auto St = b.vals(st);
    const std::vector<double> e = gated_delta_reference(b.vals(q), b.vals(k), b.vals(v), b.vals(g), b.vals(be), St,
                                                        slot_of, fresh_of, {dk, nk, dv, nv});
    if (state_out) {
        const int o = b.output("state_after", BASALT_DTYPE_F32, {dv * dk * nv, S});
        b.node(BASALT_OP_COPY, o, {st});
        cs.push_back(b.done(St, 1e-7));
    } else {
        cs.push_back(b.done(e, 1e-7));
    }
}

// One sequence's GATED_DELTA inputs at the head sizes kDeltaBatchDims: its n tokens' q, k (unit rows), v, log-decay
// and beta, and the state it continues unless it starts fresh, drawn from its own seed so that every node it joins
// sees the same floats.
struct DeltaSeq {
    int64_t n = 0;
    bool fresh = false;
    std::vector<float> q, k, v, g, beta, state;
};
constexpr DeltaDims kDeltaBatchDims{32, 2, 24, 4};

DeltaSeq delta_seq(uint64_t seed, int64_t n, bool fresh) {
    Rng rng(seed);
    const auto [dk, nk, dv, nv] = kDeltaBatchDims;
    DeltaSeq s;
    s.n = n;
    s.fresh = fresh;
    s.q = unit_rows(rng, dk, nk * n, 1.0f);
    s.k = unit_rows(rng, dk, nk * n, 1.0f);
    s.v = uniform(rng, dv * nv * n);
    s.g = uniform(rng, nv * n, -2.0f, 0.0f);
    s.beta = uniform(rng, nv * n, 0.0f, 1.0f);
    s.state = uniform(rng, dv * dk * nv);
    return s;
}

// One GATED_DELTA node (hint 0, the backend's choice of form) over the sequences one after the other, sequence i in
// state slot i: its output or (state_out) the state left, against the float64 recurrence.
Case delta_batch_case(const std::vector<const DeltaSeq*>& seqs, bool state_out) {
    const auto [dk, nk, dv, nv] = kDeltaBatchDims;
    std::vector<float> q, k, v, g, beta, state;
    std::vector<int32_t> slot_of, fresh_of, rows;
    std::string name = "GATED_DELTA batch of";
    for (size_t i = 0; i < seqs.size(); ++i) {
        const DeltaSeq& s = *seqs[i];
        for (auto [to, from] :
             {std::pair{&q, &s.q}, {&k, &s.k}, {&v, &s.v}, {&g, &s.g}, {&beta, &s.beta}, {&state, &s.state}})
            to->insert(to->end(), from->begin(), from->end());
        for (int64_t t = 0; t < s.n; ++t) {
            slot_of.push_back(static_cast<int32_t>(i));
            fresh_of.push_back(t == 0 && s.fresh ? 1 : 0);
            rows.insert(rows.end(), {slot_of.back(), fresh_of.back()});
        }
        name += " " + std::to_string(s.n);
    }
    const auto T = static_cast<int64_t>(slot_of.size()), S = static_cast<int64_t>(seqs.size());
    Rng unused(0);
    Builder b(unused, name + (state_out ? " state" : ""));
    const int qi = b.input_data("q", BASALT_DTYPE_F32, {dk, nk, T}, bytes_of(q));
    const int ki = b.input_data("k", BASALT_DTYPE_F32, {dk, nk, T}, bytes_of(k));
    const int vi = b.input_data("v", BASALT_DTYPE_F32, {dv, nv, T}, bytes_of(v));
    const int gi = b.input_data("g", BASALT_DTYPE_F32, {nv, T}, bytes_of(g));
    const int bi = b.input_data("beta", BASALT_DTYPE_F32, {nv, T}, bytes_of(beta));
    const int st = b.input_data("state", BASALT_DTYPE_F32, {dv * dk * nv, S}, bytes_of(state));
    const int ri = b.ints("rows", {2, T}, rows);
    const int y = state_out ? b.intermediate("y", {dv, nv, T}) : b.output("y", BASALT_DTYPE_F32, {dv, nv, T});
    b.node(BASALT_OP_GATED_DELTA, y, {qi, ki, vi, gi, bi, st, ri}, {0});
    auto St = b.vals(st);
    const std::vector<double> e = gated_delta_reference(b.vals(qi), b.vals(ki), b.vals(vi), b.vals(gi), b.vals(bi), St,
                                                        slot_of, fresh_of, kDeltaBatchDims);
    if (!state_out) return b.done(e, 1e-7);
    const int o = b.output("state_after", BASALT_DTYPE_F32, {dv * dk * nv, S});
    b.node(BASALT_OP_COPY, o, {st});
    return b.done(St, 1e-7);
}

// GATED_DELTA at the qwen35-0.8b head shape (dk = dv = 128, value heads sharing key heads as in the larger models)
// with the models' ranges (q at 1 / sqrt(dk), decays e^-1.6 .. 1 per token, beta in (0, 1)): a fresh run of 64 tokens
// (a whole number of the Vulkan backend's chunks of 32 and of the CPU's 64), a run of 45 continuing a random state
// (not), then the first slot continued in the same node; for each, the recurrent form (chunk 1) then the backend's
// choice (chunk 0, the chunked form here), on equal inputs: output, then the state left.
std::vector<Case> gated_delta_model_cases() {
    std::vector<int32_t> slots, fresh;
    for (auto [slot, n, first_fresh] : {std::tuple{0, 64, 1}, {1, 45, 0}, {0, 7, 0}}) {
        for (int i = 0; i < n; ++i) {
            slots.push_back(slot);
            fresh.push_back(i == 0 ? first_fresh : 0);
        }
    }
    std::vector<Case> cs;
    for (int32_t chunk : {1, 0}) {
        Rng same(78);
        for (bool state_out : {false, true}) {
            gated_delta_case(cs, same, slots, fresh, chunk, 128, 2, 128, 4, 1, state_out,
                             {-1.6f, 0.0f, 1.0f / std::sqrt(128.0f)});
        }
    }
    return cs;
}

// SSM_CONV of C channels and K taps on x, weights and state drawn from rng, for tokens of the given slots and fresh
// starts: its output or (state_out, through a COPY) the state it leaves, against the float64 convolution.
void ssm_conv_case(std::vector<Case>& cs, Rng& rng, int64_t C, int64_t K, const std::vector<int32_t>& slot_of,
                   const std::vector<int32_t>& fresh_of, bool state_out) {
    const auto T = static_cast<int64_t>(slot_of.size());
    const int64_t S = 1 + *std::max_element(slot_of.begin(), slot_of.end());
    std::vector<int32_t> rows;
    for (size_t t = 0; t < slot_of.size(); ++t) rows.insert(rows.end(), {slot_of[t], fresh_of[t]});
    Builder b(rng,
              std::string("SSM_CONV ") + shape_str({C, T}) + " K=" + std::to_string(K) + (state_out ? " state" : ""));
    const int x = b.input("x", BASALT_DTYPE_F32, {C, T});
    const int w = b.input("w", BASALT_DTYPE_F32, {K, C});
    const int st = b.input("state", BASALT_DTYPE_F32, {(K - 1) * C, S});
    const int r = b.ints("rows", {2, T}, rows);
    const int y = state_out ? b.intermediate("y", {C, T}) : b.output("y", BASALT_DTYPE_F32, {C, T});
    b.node(BASALT_OP_SSM_CONV, y, {x, w, st, r});
    const auto X = b.vals(x), W = b.vals(w);
    auto St = b.vals(st);
    std::vector<double> e(static_cast<size_t>(C * T));
    for (int64_t t = 0; t < T; ++t) {
        double* s = &St[static_cast<size_t>(slot_of[static_cast<size_t>(t)] * (K - 1) * C)];
        for (int64_t ch = 0; ch < C; ++ch) {
            if (fresh_of[static_cast<size_t>(t)] != 0)
                for (int64_t j = 0; j + 1 < K; ++j) s[j * C + ch] = 0;
            const double xt = X[static_cast<size_t>(t * C + ch)];
            double acc = W[static_cast<size_t>(ch * K + K - 1)] * xt;
            for (int64_t j = 0; j + 1 < K; ++j) acc += W[static_cast<size_t>(ch * K + j)] * s[j * C + ch];
            e[static_cast<size_t>(t * C + ch)] = acc;
            for (int64_t j = 0; j + 2 < K; ++j) s[j * C + ch] = s[(j + 1) * C + ch];
            s[(K - 2) * C + ch] = xt;
        }
    }
    if (state_out) {
        const int o = b.output("state_after", BASALT_DTYPE_F32, {(K - 1) * C, S});
        b.node(BASALT_OP_COPY, o, {st});
        cs.push_back(b.done(St, 1e-7));
    } else {
        cs.push_back(b.done(e, 1e-7));
    }
}

// SOFTPLUS, SLICE and the recurrent ops (since ABI 1.4, hybrid architectures). SSM_CONV and GATED_DELTA each get
// two cases: their output, and (a COPY of) the state they leave, from a random initial state with tokens of three
// slots interleaved and fresh starts.
std::vector<Case> recurrent_cases(Rng& rng) {
    std::vector<Case> cs;
    for (auto ne : {std::vector<int64_t>{1, 1}, {5, 3}, {333, 7}, {16, 2, 3}}) {
        cs.push_back(unary_case(rng, BASALT_OP_SOFTPLUS, "SOFTPLUS", ne, {}, [](const double* x, double* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = std::log1p(std::exp(x[i]));
        }));
    }
    {
        Builder b(rng, "SOFTPLUS wide range 515x1");
        std::vector<float> xs = uniform(rng, 512, -30.0f, 30.0f);
        xs.insert(xs.end(), {-100.0f, 100.0f, 0.0f});
        const int x = b.input_data("x", BASALT_DTYPE_F32, {515, 1}, bytes_of(xs));
        const int o = b.output("out", BASALT_DTYPE_F32, {515, 1});
        b.node(BASALT_OP_SOFTPLUS, o, {x});
        std::vector<double> e;
        for (float v : xs) e.push_back(v > 20.0f ? double{v} : std::log1p(std::exp(double{v})));
        cs.push_back(b.done(e, 1e-7));
    }
    for (auto [n, m, off, r1, r2] : {std::tuple{12, 5, 4, 5, 1}, {40, 16, 0, 3, 2}, {40, 8, 32, 2, 3}}) {
        Builder b(rng,
                  "SLICE " + shape_str({n, r1, r2}) + " [" + std::to_string(off) + ", +" + std::to_string(m) + "]");
        const int x = b.input("x", BASALT_DTYPE_F32, {n, r1, r2});
        const int o = b.output("out", BASALT_DTYPE_F32, {m, r1, r2});
        b.node(BASALT_OP_SLICE, o, {x}, {off});
        const auto X = b.vals(x);
        std::vector<double> e;
        for (int r = 0; r < r1 * r2; ++r)
            for (int i = 0; i < m; ++i) e.push_back(X[static_cast<size_t>(r * n + off + i)]);
        cs.push_back(b.done(e, 0));
    }
    const std::vector<int32_t> slot_of{1, 1, 0, 1, 2, 2, 0, 1};
    const std::vector<int32_t> fresh_of{0, 0, 1, 0, 1, 0, 0, 0};
    for (bool state_out : {false, true}) ssm_conv_case(cs, rng, 24, 4, slot_of, fresh_of, state_out);
    for (bool state_out : {false, true}) gated_delta_case(cs, rng, slot_of, fresh_of, 0, 16, 2, 8, 4, 1, state_out);
    // The chunked form (prefill) against the same float64 recurrence: runs of 70, 50 and 30 tokens of three slots (one
    // continuing a random state, one restarted mid-node), decays down to e^-2 per token (e^-128 over a chunk of 64);
    // the recurrent form (chunk 1), the backend's choice (0: chunks of 64), chunks of 16 and of 5 on equal inputs.
    {
        std::vector<int32_t> slots, fresh;
        auto run = [&](int32_t slot, int n, bool first_fresh) {
            for (int i = 0; i < n; ++i) {
                slots.push_back(slot);
                fresh.push_back(i == 0 && first_fresh ? 1 : 0);
            }
        };
        run(0, 70, true);
        run(2, 50, false);
        run(0, 12, false);
        run(1, 30, true);
        run(0, 9, true);
        for (int32_t chunk : {1, 0, 16, 5}) {
            Rng same(77);
            for (bool state_out : {false, true})
                gated_delta_case(cs, same, slots, fresh, chunk, 32, 2, 24, 4, 2, state_out);
        }
    }
    for (auto& c : gated_delta_model_cases()) cs.push_back(std::move(c));
    return cs;
}

// MXFP4 weights (ggml's type 39, Q8_0 activations on the CPU): MATMUL of odd and long rows, T = 1 and T > 1,
// strided activations; MOE_MATMUL; GET_ROWS. Their own generator keeps the data of every other case unchanged.
std::vector<Case> mxfp4_cases() {
    Rng rng(20261205);
    const basalt_dtype t = BASALT_DTYPE_MXFP4;
    std::vector<Case> cs;
    for (auto [k, n, m] : {std::tuple{32, 1, 1}, {96, 37, 1}, {576, 65, 3}, {4096, 17, 2}, {160, 33, 20}}) {
        cs.push_back(matmul_case(rng, t, k, n, {m}));
    }
    cs.push_back(matmul_case(rng, t, 64, 9, {3, 2}, 32));
    cs.push_back(matmul_case(rng, t, 64, 9, {2, 2}, 16));  // decode-sized, strided activations
    cs.push_back(moe_case(rng, t, 64, 24, 4, 2, 1, false));
    cs.push_back(moe_case(rng, t, 64, 17, 8, 2, 5, true));
    cs.push_back(moe_case(rng, t, 96, 9, 6, 3, 4, false));
    Builder b(rng, "GET_ROWS mxfp4 n=96");
    const int src = b.input("table", t, {96, 11});
    const std::vector<int32_t> ids{3, 0, 10, 3, 7};
    const int id = b.ints("ids", {5}, ids);
    const int o = b.output("out", BASALT_DTYPE_F32, {96, 5});
    b.node(BASALT_OP_GET_ROWS, o, {src, id});
    b.c.needs_blocks = true;
    const auto v = b.vals(src);
    std::vector<double> e;
    for (auto i : ids) e.insert(e.end(), v.begin() + i * 96, v.begin() + (i + 1) * 96);
    cs.push_back(b.done(e, 0));
    return cs;
}

std::vector<Case> all_cases() {
    Rng rng(1234);
    std::vector<Case> cs;
    const basalt_dtype blk32[] = {BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0, BASALT_DTYPE_Q4_1, BASALT_DTYPE_Q5_0,
                                  BASALT_DTYPE_Q5_1};
    const basalt_dtype kq[] = {BASALT_DTYPE_Q2_K, BASALT_DTYPE_Q3_K, BASALT_DTYPE_Q4_K, BASALT_DTYPE_Q5_K,
                               BASALT_DTYPE_Q6_K};
    const basalt_dtype flt[] = {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_BF16};

    // MATMUL: odd sizes, long rows, T = 1 and T > 1, 3-D activations, strided activations.
    for (auto t : flt) {
        for (auto [k, n, m] : {std::tuple{1, 1, 1},
                               {7, 5, 3},
                               {33, 17, 4},
                               {1000, 13, 1},
                               {4100, 3, 2},
                               {64, 70, 20},
                               {96, 37, 1},
                               {1024, 7, 4}}) {
            cs.push_back(matmul_case(rng, t, k, n, {m}));
        }
        cs.push_back(matmul_case(rng, t, 48, 9, {3, 2}, 16));
        cs.push_back(matmul_case(rng, t, 64, 9, {2, 2}, 16));  // decode-sized, strided activations
    }
    for (auto t : blk32) {
        for (auto [k, n, m] : {std::tuple{32, 1, 1}, {96, 37, 1}, {576, 65, 3}, {4096, 17, 2}, {160, 33, 20}}) {
            cs.push_back(matmul_case(rng, t, k, n, {m}));
        }
        cs.push_back(matmul_case(rng, t, 64, 9, {3, 2}, 32));
        cs.push_back(matmul_case(rng, t, 64, 9, {2, 2}, 16));  // decode-sized, strided activations
    }
    for (auto t : kq) {
        for (auto [k, n, m] : {std::tuple{256, 1, 1}, {512, 37, 1}, {768, 19, 5}, {4096, 9, 2}, {256, 40, 18}}) {
            cs.push_back(matmul_case(rng, t, k, n, {m}));
        }
    }

    // GET_ROWS: every weight type, repeated ids.
    for (auto t : {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_BF16, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0,
                   BASALT_DTYPE_Q4_1, BASALT_DTYPE_Q5_0, BASALT_DTYPE_Q5_1, BASALT_DTYPE_Q2_K, BASALT_DTYPE_Q3_K,
                   BASALT_DTYPE_Q4_K, BASALT_DTYPE_Q5_K, BASALT_DTYPE_Q6_K}) {
        const int64_t n = facts(t).block == 256 ? 512 : (facts(t).block == 32 ? 96 : 37);
        Builder b(rng, std::string("GET_ROWS ") + facts(t).name + " n=" + std::to_string(n));
        const int src = b.input("table", t, {n, 11});
        const std::vector<int32_t> ids{3, 0, 10, 3, 7};
        const int id = b.ints("ids", {5}, ids);
        const int o = b.output("out", BASALT_DTYPE_F32, {n, 5});
        b.node(BASALT_OP_GET_ROWS, o, {src, id});
        b.c.needs_blocks = !plugin_dequantizes_natively(t);
        const auto v = b.vals(src);
        std::vector<double> e;
        for (auto i : ids) e.insert(e.end(), v.begin() + i * n, v.begin() + (i + 1) * n);
        cs.push_back(b.done(e, 0));
    }

    // ADD / MUL: same shape, [n] and [n, 1] broadcast.
    for (auto op : {BASALT_OP_ADD, BASALT_OP_MUL}) {
        const char* nm = op == BASALT_OP_ADD ? "ADD" : "MUL";
        for (auto [n, r, bshape] : {std::tuple{1, 1, 0}, {7, 3, 0}, {4097, 2, 1}, {64, 6, 2}, {5, 9, 1}}) {
            Builder b(rng, std::string(nm) + " " + std::to_string(n) + "x" + std::to_string(r) +
                               (bshape == 0   ? " same"
                                : bshape == 1 ? " bcast [n]"
                                              : " bcast [n,1]"));
            const int x = b.input("a", BASALT_DTYPE_F32, {n, r});
            const int y = bshape == 0   ? b.input("b", BASALT_DTYPE_F32, {n, r})
                          : bshape == 1 ? b.input("b", BASALT_DTYPE_F32, {n})
                                        : b.input("b", BASALT_DTYPE_F32, {n, 1});
            const int o = b.output("out", BASALT_DTYPE_F32, {n, r});
            b.node(op, o, {x, y});
            const auto A = b.vals(x);
            const auto B = b.vals(y);
            std::vector<double> e(A.size());
            for (size_t i = 0; i < A.size(); ++i) {
                const double bb = B[bshape == 0 ? i : i % static_cast<size_t>(n)];
                e[i] = op == BASALT_OP_ADD ? A[i] + bb : A[i] * bb;
            }
            cs.push_back(b.done(e, 1e-7));
        }
    }

    // Row-wise unary ops.
    for (auto ne : {std::vector<int64_t>{1, 1}, {5, 3}, {4096, 2}, {333, 7}, {16, 2, 3}}) {
        cs.push_back(unary_case(rng, BASALT_OP_SCALE, "SCALE", ne, {0.37f}, [](const double* x, double* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = x[i] * static_cast<double>(0.37f);
        }));
        cs.push_back(
            unary_case(rng, BASALT_OP_RMS_NORM, "RMS_NORM", ne, {1e-5f}, [](const double* x, double* y, int64_t n) {
                double s = 0;
                for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
                for (int64_t i = 0; i < n; ++i) y[i] = x[i] / std::sqrt(s / n + static_cast<double>(1e-5f));
            }));
        cs.push_back(
            unary_case(rng, BASALT_OP_LAYER_NORM, "LAYER_NORM", ne, {1e-5f}, [](const double* x, double* y, int64_t n) {
                double m = 0;
                for (int64_t i = 0; i < n; ++i) m += x[i];
                m /= n;
                double v = 0;
                for (int64_t i = 0; i < n; ++i) v += (x[i] - m) * (x[i] - m);
                v /= n;
                for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) / std::sqrt(v + static_cast<double>(1e-5f));
            }));
        for (float sc : {1.0f, 3.5f}) {
            cs.push_back(unary_case(rng, BASALT_OP_SOFTMAX, sc == 1.0f ? "SOFTMAX" : "SOFTMAX scaled", ne, {sc},
                                    [sc](const double* x, double* y, int64_t n) {
                                        double mx = -INFINITY;
                                        for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i] * sc);
                                        double s = 0;
                                        for (int64_t i = 0; i < n; ++i) s += (y[i] = std::exp(x[i] * sc - mx));
                                        for (int64_t i = 0; i < n; ++i) y[i] /= s;
                                    }));
        }
        cs.push_back(unary_case(rng, BASALT_OP_SILU, "SILU", ne, {}, [](const double* x, double* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = silu(x[i]);
        }));
        cs.push_back(unary_case(rng, BASALT_OP_GELU, "GELU", ne, {}, [](const double* x, double* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = gelu_tanh(x[i]);
        }));
        cs.push_back(unary_case(rng, BASALT_OP_GELU_ERF, "GELU_ERF", ne, {}, [](const double* x, double* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
        }));
    }

    // SWIGLU / GEGLU.
    for (auto op : {BASALT_OP_SWIGLU, BASALT_OP_GEGLU}) {
        for (auto [n, r] : {std::pair{1, 1}, {1536, 3}, {77, 5}}) {
            Builder b(rng, std::string(op == BASALT_OP_SWIGLU ? "SWIGLU " : "GEGLU ") + shape_str({n, r}));
            const int x = b.input("gate", BASALT_DTYPE_F32, {n, r});
            const int y = b.input("up", BASALT_DTYPE_F32, {n, r});
            const int o = b.output("out", BASALT_DTYPE_F32, {n, r});
            b.node(op, o, {x, y});
            const auto A = b.vals(x);
            const auto B = b.vals(y);
            std::vector<double> e(A.size());
            for (size_t i = 0; i < A.size(); ++i) e[i] = (op == BASALT_OP_SWIGLU ? silu(A[i]) : gelu_tanh(A[i])) * B[i];
            cs.push_back(b.done(e, 1e-7));
        }
    }

    // SWIGLU_OAI (gpt-oss's experts, ABI 1.5): inputs spread over +-12 so both clamps bite; gpt-oss's constants and
    // another alpha/limit pair.
    for (auto [n, r, alpha, limit] : {std::tuple{1, 1, 1.702f, 7.0f}, {640, 3, 1.702f, 7.0f}, {77, 5, 0.5f, 2.5f}}) {
        Builder b(rng, "SWIGLU_OAI " + shape_str({n, r}) + " alpha " + std::to_string(alpha) + " limit " +
                           std::to_string(limit));
        std::uniform_real_distribution<float> u(-12.0f, 12.0f);
        std::vector<float> gv(static_cast<size_t>(n * r)), uv(gv.size());
        for (auto& x : gv) x = u(rng);
        for (auto& x : uv) x = u(rng);
        const int x = b.input_data("gate", BASALT_DTYPE_F32, {n, r}, bytes_of(gv));
        const int y = b.input_data("up", BASALT_DTYPE_F32, {n, r}, bytes_of(uv));
        const int o = b.output("out", BASALT_DTYPE_F32, {n, r});
        b.node(BASALT_OP_SWIGLU_OAI, o, {x, y}, {}, {alpha, limit});
        const auto A = b.vals(x);
        const auto B = b.vals(y);
        std::vector<double> e(A.size());
        for (size_t i = 0; i < A.size(); ++i) {
            const double g = std::min<double>(A[i], limit);
            const double v = std::clamp<double>(B[i], -limit, limit);
            e[i] = g / (1.0 + std::exp(-static_cast<double>(alpha) * g)) * (v + 1.0);
        }
        cs.push_back(b.done(e, 1e-7));
    }

    // ROPE: both modes, full and partial rotation, frequency scaling, large positions.
    for (int mode : {0, 1}) {
        for (auto [hd, nh, tk, nrot, fs] :
             {std::tuple{64, 4, 3, 64, 1.0f}, {128, 2, 1, 128, 1.0f}, {80, 3, 5, 32, 0.25f}, {2, 1, 2, 2, 1.0f}}) {
            Builder b(rng, "ROPE mode " + std::to_string(mode) + " " + shape_str({hd, nh, tk}) + " n_rot " +
                               std::to_string(nrot));
            const int x = b.input("x", BASALT_DTYPE_F32, {hd, nh, tk});
            std::vector<int32_t> pos;
            // Past the CPU backend's angle table (16384 positions) too: those angles are computed per call.
            for (int t = 0; t < tk; ++t) {
                pos.push_back(t == 0 ? 0 : static_cast<int32_t>(rng() % 5000 + (t == 2 ? 16384 : 0)));
            }
            const int p = b.ints("pos", {tk}, pos);
            const int o = b.output("out", BASALT_DTYPE_F32, {hd, nh, tk});
            const float base = 10000.0f;
            b.node(BASALT_OP_ROPE, o, {x, p}, {mode, nrot}, {base, fs});
            auto e = b.vals(x);
            for (int t = 0; t < tk; ++t) {
                for (int h = 0; h < nh; ++h) {
                    double* v = &e[static_cast<size_t>((t * nh + h) * hd)];
                    for (int i = 0; i < nrot / 2; ++i) {
                        const double th = pos[static_cast<size_t>(t)] * static_cast<double>(fs) *
                                          std::pow(static_cast<double>(base), -2.0 * i / nrot);
                        const int a = mode == 1 ? i : 2 * i;
                        const int c2 = mode == 1 ? i + nrot / 2 : 2 * i + 1;
                        const double x0 = v[a];
                        const double x1 = v[c2];
                        v[a] = x0 * std::cos(th) - x1 * std::sin(th);
                        v[c2] = x0 * std::sin(th) + x1 * std::cos(th);
                    }
                }
            }
            cs.push_back(b.done(e, 1e-7));
        }
    }

    // ROPE scaled (since 1.4): frequency factors (Llama 3's, and 1e30 on unrotated pairs), YaRN's ramp and
    // magnitude, attn_factor, partial rotation; float64 reference of ggml's formulas.
    struct ScaledRope {
        const char* label;
        int mode, hd, nrot;
        bool factors;
        float fs, ext, attn;
    };
    for (const ScaledRope& r : {ScaledRope{"llama3 factors", 0, 16, 16, true, 1.0f, 0.0f, 0.0f},
                                ScaledRope{"proportional factors", 1, 32, 32, true, 1.0f, 0.0f, 1.0f},
                                ScaledRope{"yarn x32", 1, 64, 64, false, 1.0f / 32.0f, 1.0f, 0.0f},
                                ScaledRope{"yarn partial + factors", 0, 48, 32, true, 0.25f, 1.0f, 0.9f},
                                ScaledRope{"longrope attn_factor", 1, 24, 16, true, 1.0f, 0.0f, 1.19f}}) {
        const int nh = 3, tk = 4;
        Builder b(rng, std::string("ROPE scaled ") + r.label + " mode " + std::to_string(r.mode));
        const int x = b.input("x", BASALT_DTYPE_F32, {r.hd, nh, tk});
        std::vector<int32_t> pos{0, 7, 5000, 20000};
        const int p = b.ints("pos", {tk}, pos);
        std::vector<float> ff(static_cast<size_t>(r.nrot / 2), 1.0f);
        for (size_t i = 0; i < ff.size(); ++i) {
            if (std::string(r.label) == "proportional factors") {
                ff[i] = i < ff.size() / 4 ? 1.0f : 1e30f;
            } else {
                ff[i] = 1.0f + 0.7f * static_cast<float>(i);
            }
        }
        const int o = b.output("out", BASALT_DTYPE_F32, {r.hd, nh, tk});
        const float base = 10000.0f;
        const int32_t n_orig = 256;
        const float beta_fast = 32.0f, beta_slow = 1.0f;
        std::vector<int> ins{x, p};
        if (r.factors) {
            std::vector<uint8_t> fb(ff.size() * sizeof(float));
            std::memcpy(fb.data(), ff.data(), fb.size());
            ins.push_back(b.input_data("factors", BASALT_DTYPE_F32, {static_cast<int64_t>(ff.size())}, fb));
        }
        b.node(BASALT_OP_ROPE, o, ins, {r.mode, r.nrot, n_orig}, {base, r.fs, r.ext, r.attn, beta_fast, beta_slow});
        // ggml's correction dims (floor/ceil of the fractional dims, clamped), in double.
        auto corr = [&](double rot) {
            return r.nrot * std::log(n_orig / (rot * 2.0 * M_PI)) / (2.0 * std::log(static_cast<double>(base)));
        };
        const double lo = std::max(0.0, std::floor(corr(beta_fast)));
        const double hi = std::min(static_cast<double>(r.nrot - 1), std::ceil(corr(beta_slow)));
        double mscale = r.attn == 0.0f ? 1.0 : r.attn;
        if (r.ext != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / r.fs);
        auto e = b.vals(x);
        for (int t = 0; t < tk; ++t) {
            for (int h = 0; h < nh; ++h) {
                double* v = &e[static_cast<size_t>((t * nh + h) * r.hd)];
                for (int i = 0; i < r.nrot / 2; ++i) {
                    const double f = r.factors ? ff[static_cast<size_t>(i)] : 1.0;
                    const double extrap =
                        pos[static_cast<size_t>(t)] * std::pow(static_cast<double>(base), -2.0 * i / r.nrot) / f;
                    double th = r.fs * extrap;
                    if (r.ext != 0.0f) {
                        const double ramp = 1.0 - std::min(1.0, std::max(0.0, (i - lo) / std::max(0.001, hi - lo)));
                        th = th * (1.0 - ramp * r.ext) + extrap * ramp * r.ext;
                    }
                    const int a = r.mode == 1 ? i : 2 * i;
                    const int c2 = r.mode == 1 ? i + r.nrot / 2 : 2 * i + 1;
                    const double x0 = v[a];
                    const double x1 = v[c2];
                    v[a] = (x0 * std::cos(th) - x1 * std::sin(th)) * mscale;
                    v[c2] = (x0 * std::sin(th) + x1 * std::cos(th)) * mscale;
                }
            }
        }
        cs.push_back(b.done(e, 1e-6));
    }

    // ATTENTION: T = 1 and T > 1, GQA, ragged lists with -1 padding, windows and sinks, soft-cap, cache types.
    for (auto kt : {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_Q8_0}) {
        AttnSpec s;
        s.kt = kt;
        s.vt = kt;
        s.n_slots = 24;
        s.lists = {{{5, 0}, {6, 1}, {7, 2}, {8, 3}, {9, 4}, {10, 5}}};
        s.queries = {{0, 5}};
        s.label = "decode GQA 4/2";
        cs.push_back(attention_case(rng, s));
        // Two sequences, prefill of 4 + 2 tokens, causal, lists of different lengths (padded).
        s.lists = {{{0, 0}, {1, 1}, {2, 2}, {3, 3}}, {{12, 0}, {13, 1}}};
        s.queries = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}};
        s.label = "ragged prefill";
        cs.push_back(attention_case(rng, s));
    }
    {
        AttnSpec s;
        s.n_head = 8;
        s.n_kv = 1;
        s.hd_k = 32;
        s.hd_v = 48;
        s.n_slots = 40;
        for (int i = 0; i < 30; ++i) s.lists.resize(1), s.lists[0].push_back({(i * 7) % 40, i});
        s.lists[0].push_back({-1, 0});
        s.queries = {{0, 29}, {0, 10}, {0, 0}};
        s.window = 8;
        s.sinks = 2;
        s.label = "MQA window 8 sinks 2 hd_v 48";
        cs.push_back(attention_case(rng, s));
        // Streaming caches (ATTENTION ip[2]): the sinks' keys at cache positions, pairs and neox rotations, part
        // of the head rotated, a scaled frequency; queries before, at and past the shift's start, several tokens.
        for (auto kt : {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_Q8_0}) {
            AttnSpec r = s;
            r.kt = kt;
            r.vt = kt;
            r.hd_k = 32;
            r.hd_v = 32;
            r.cache_positions = true;
            r.window = 6;
            r.sinks = 3;
            r.n_rot = 32;
            r.queries = {{0, 29}, {0, 8}, {0, 7}, {0, 12}, {0, 3}};
            r.label = "sinks 3 window 6 at cache positions";
            cs.push_back(attention_case(rng, r));
            r.rope_mode = 1;
            r.n_rot = 16;
            r.rope_base = 500.0f;
            r.rope_scale = 0.5f;
            r.n_head = 4;
            r.n_kv = 2;
            r.sinks = 4;
            r.window = 1;
            r.label = "neox n_rot 16 of 32, sinks 4 window 1 at cache positions";
            cs.push_back(attention_case(rng, r));
        }
        {  // head dims above 64 and below the keys shader's 128 variant, a long shift
            AttnSpec r;
            r.hd_k = 128;
            r.hd_v = 128;
            r.n_head = 2;
            r.n_kv = 1;
            r.n_slots = 20;
            r.lists.resize(1);
            for (int i = 0; i < 4; ++i) r.lists[0].push_back({i, i});
            for (int i = 0; i < 12; ++i) r.lists[0].push_back({4 + i, 9990 + i});
            r.queries = {{0, 10001}, {0, 9999}};
            r.cache_positions = true;
            r.window = 12;
            r.sinks = 4;
            r.n_rot = 64;
            r.label = "hd 128 sinks 4 window 12 at position 10001";
            cs.push_back(attention_case(rng, r));
        }
        s.kt = BASALT_DTYPE_F16;
        s.vt = BASALT_DTYPE_Q8_0;
        s.hd_v = 64;
        s.cap = 2.0f;
        s.scale = 1.0f;
        s.window = 0;
        s.sinks = 0;
        s.label = "soft-cap 2";
        cs.push_back(attention_case(rng, s));
        // A query whose list holds nothing it may see: zeros.
        s.lists = {{{3, 4}, {4, 5}}, {{-1, 0}, {-1, 0}}};
        s.queries = {{0, 1}, {1, 9}, {0, 5}};
        s.cap = 0.0f;
        s.label = "nothing visible";
        cs.push_back(attention_case(rng, s));
    }
    {
        AttnSpec s;
        s.n_head = 6;
        s.n_kv = 6;
        s.hd_k = 128;
        s.hd_v = 128;
        s.n_slots = 300;
        s.lists.resize(1);
        for (int i = 0; i < 300; ++i) s.lists[0].push_back({299 - i, i});
        s.queries = {{0, 299}};
        s.label = "long context 300 MHA";
        cs.push_back(attention_case(rng, s));
    }
    {
        // Encoder-decoder attention (since ABI 1.4): not causal (encoder self-attention, cross-attention over slots
        // in any order), and a relative position bias by clamped distance, causal or not, both Vulkan variants.
        AttnSpec s;
        s.n_head = 4;
        s.n_kv = 4;
        s.hd_k = 16;
        s.hd_v = 16;
        s.n_slots = 20;
        s.scale = 1.0f;
        s.lists = {{{7, 0}, {3, 1}, {12, 2}, {0, 3}, {5, 4}}, {{9, 0}, {10, 1}, {-1, 0}}};
        s.queries = {{0, 0}, {0, 4}, {1, 1}, {0, 2}};
        s.causal = false;
        s.label = "not causal";
        cs.push_back(attention_case(rng, s));
        s.bias_r = 2;
        s.label = "not causal, position bias R 2";
        cs.push_back(attention_case(rng, s));
        s.causal = true;
        s.bias_r = 3;
        s.kt = BASALT_DTYPE_F16;
        s.vt = BASALT_DTYPE_F16;
        s.label = "causal, position bias R 3";
        cs.push_back(attention_case(rng, s));
        s.hd_k = 6;  // lanes over dims on Vulkan
        s.hd_v = 10;
        s.kt = BASALT_DTYPE_F32;
        s.vt = BASALT_DTYPE_F32;
        s.causal = false;
        s.bias_r = 1;
        s.label = "not causal, position bias R 1, head dims 6/10";
        cs.push_back(attention_case(rng, s));
        // Not causal with a window (gemma-embedding's sliding layers): symmetric, |key - query| < window.
        s.bias_r = -1;
        s.window = 2;
        s.label = "not causal, symmetric window 2";
        cs.push_back(attention_case(rng, s));
        s.bias_r = 1;
        s.window = 0;
        s.sink_logits = true;  // 7 inputs: the position bias, then the sink logits
        s.label = "not causal, position bias R 1, sink logits, head dims 6/10";
        cs.push_back(attention_case(rng, s));
    }
    {
        // Learned sink logits (gpt-oss, ABI 1.5): GQA decode and ragged prefill, a sliding window (every other gpt-oss
        // layer), cache types, both Vulkan variants (head dims 64 lanes over keys, 6/10 lanes over dims), sinks that
        // dominate (+-8) or vanish (-30 .. -29) against the scores, and a query that sees nothing (zeros).
        for (auto kt : {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_Q8_0}) {
            AttnSpec s;
            s.kt = kt;
            s.vt = kt;
            s.n_slots = 24;
            s.sink_logits = true;
            s.lists = {{{5, 0}, {6, 1}, {7, 2}, {8, 3}, {9, 4}, {10, 5}}, {{12, 0}, {13, 1}, {-1, 0}}};
            s.queries = {{0, 5}};
            s.label = "sink logits decode GQA 4/2";
            cs.push_back(attention_case(rng, s));
            s.queries = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {1, 0}, {1, 1}};
            s.window = 3;
            s.label = "sink logits ragged prefill window 3";
            cs.push_back(attention_case(rng, s));
        }
        AttnSpec s;
        s.n_head = 4;
        s.n_kv = 2;
        s.n_slots = 12;
        s.sink_logits = true;
        s.lists = {{{3, 0}, {4, 1}, {5, 2}, {6, 3}}, {{-1, 0}, {-1, 0}, {-1, 0}, {-1, 0}}};
        s.queries = {{0, 3}, {0, 1}, {1, 2}};
        s.sink_spread = 8.0f;
        s.label = "sink logits +-8, a query seeing nothing";
        cs.push_back(attention_case(rng, s));
        s.hd_k = 6;
        s.hd_v = 10;
        s.sink_spread = 2.0f;
        s.label = "sink logits head dims 6/10";
        cs.push_back(attention_case(rng, s));
        s.hd_k = 32;
        s.hd_v = 32;
        s.scale = 4.0f;  // scores far above the sinks: the sink's share vanishes
        s.label = "sink logits under large scores, head dim 32";
        cs.push_back(attention_case(rng, s));
    }
    {
        // Head dims that are not multiples of 4 (Vulkan: lanes over dims), and the larger lanes-over-keys variants.
        AttnSpec s;
        s.n_head = 2;
        s.n_kv = 1;
        s.n_slots = 8;
        s.lists = {{{2, 0}, {3, 1}, {4, 2}, {5, 3}, {6, 4}}};
        s.queries = {{0, 4}, {0, 2}};
        s.hd_k = 6;
        s.hd_v = 10;
        s.label = "head dims 6/10";
        cs.push_back(attention_case(rng, s));
        s.hd_k = 68;
        s.hd_v = 36;
        s.label = "head dims 68/36";
        cs.push_back(attention_case(rng, s));
        s.hd_k = 256;
        s.hd_v = 256;
        s.kt = BASALT_DTYPE_F16;
        s.vt = BASALT_DTYPE_F16;
        s.label = "head dim 256";
        cs.push_back(attention_case(rng, s));
    }

    // Every stored K/V type pair: ATTENTION over caches of those types (decoded by the test's own readers) in a
    // ragged two-sequence step with GQA; then the same pairs written and read through a residual window.
    for (const basalt_dtype kt : kKvTypes) {
        for (const basalt_dtype vt : kKvTypes) {
            AttnSpec s;
            s.kt = kt;
            s.vt = vt;
            s.n_slots = 64;
            s.lists = {{{33, 0}, {2, 1}, {63, 2}, {40, 3}, {7, 4}}, {{16, 0}, {47, 1}}};
            s.queries = {{0, 4}, {0, 2}, {1, 1}};
            s.label = "K/V pair";
            cs.push_back(attention_case(rng, s));
            cs.push_back(attention_residual_case(rng, kt, vt));
        }
    }

    // KV_WRITE into F32 / F16 / Q8_0 caches: the whole cache is the result (untouched slots included). Then odd
    // rows (F16 rows that share words) and slots named twice (the later row wins).
    struct KvWriteSpec {
        basalt_dtype type;
        int64_t n;
        std::vector<int32_t> slots;
        const char* label;
    };
    const std::vector<KvWriteSpec> kv_writes = {
        {BASALT_DTYPE_F32, 96, {7, 2, 9}, ""},
        {BASALT_DTYPE_F16, 96, {7, 2, 9}, ""},
        {BASALT_DTYPE_Q8_0, 96, {7, 2, 9}, ""},
        {BASALT_DTYPE_F32, 37, {4, 1, 4, 8, 1, 5}, "odd rows, repeated slots "},
        {BASALT_DTYPE_F16, 37, {4, 1, 4, 8, 1, 5}, "odd rows, repeated slots "},
        {BASALT_DTYPE_Q4_0, 96, {7, 2, 9}, ""},
        {BASALT_DTYPE_KIVI_T8, 96, {7, 2, 9}, ""},
        {BASALT_DTYPE_KIVI_T4, 96, {7, 2, 9}, ""},
        {BASALT_DTYPE_KIVI_T2, 96, {7, 2, 9}, ""},
    };
    for (const KvWriteSpec& kw : kv_writes) {
        Builder b(rng, std::string("KV_WRITE ") + kw.label + facts(kw.type).name);
        const auto rows = static_cast<int64_t>(kw.slots.size());
        const int x = b.input("x", BASALT_DTYPE_F32, {kw.n, rows});
        const int cache = b.input("cache", kw.type, {kw.n, 10});
        const int sl = b.ints("slots", {rows}, kw.slots);
        b.node(BASALT_OP_KV_WRITE, cache, {x, cache, sl});
        auto e = b.vals(cache);
        const auto X = b.vals(x);
        for (size_t i = 0; i < kw.slots.size(); ++i) {
            std::copy(X.begin() + static_cast<std::ptrdiff_t>(i * kw.n),
                      X.begin() + static_cast<std::ptrdiff_t>((i + 1) * kw.n), e.begin() + kw.slots[i] * kw.n);
        }
        cs.push_back(b.done(e, kw.type == BASALT_DTYPE_F32    ? 0
                               : kw.type == BASALT_DTYPE_F16  ? 1e-6
                               : kw.type == BASALT_DTYPE_Q8_0 ? 1e-4
                                                              : kv_type_tol(kw.type)));
    }

    // TOPK with ties (lower index first).
    for (auto [n, k, tk] : {std::tuple{8, 2, 1}, {60, 4, 3}, {5, 5, 2}}) {
        Builder b(rng, "TOPK " + std::to_string(k) + " of " + std::to_string(n) + " T=" + std::to_string(tk));
        auto v = uniform(rng, n * tk);
        v[1] = v[3];  // a tie
        const int x = b.input_data("logits", BASALT_DTYPE_F32, {n, tk}, bytes_of(v));
        const int o = b.output("ids", BASALT_DTYPE_I32, {k, tk});
        b.node(BASALT_OP_TOPK, o, {x}, {k});
        std::vector<double> e;
        for (int t = 0; t < tk; ++t) {
            std::vector<int> idx(static_cast<size_t>(n));
            std::iota(idx.begin(), idx.end(), 0);
            std::stable_sort(idx.begin(), idx.end(), [&](int a, int c) { return v[t * n + a] > v[t * n + c]; });
            for (int j = 0; j < k; ++j) e.push_back(idx[static_cast<size_t>(j)]);
        }
        cs.push_back(b.done(e, 0));
    }

    // MOE_ROUTE: top-k under expert capacity (drop, reroute), every output, with ties; expected from the rule written
    // out plainly (docs/moe.md).
    for (auto [n, k, tk, cap, over] : {std::tuple{4, 2, 6, 2, 0},
                                       {4, 2, 6, 2, 1},
                                       {8, 2, 16, 3, 1},
                                       {6, 3, 5, 1, 1},
                                       {64, 4, 40, 3, 1},
                                       {5, 1, 9, 2, 0},
                                       {8, 2, 1, 1, 1}}) {
        auto v = uniform(rng, n * tk, 0.01f, 1.0f);
        v[2] = v[0];  // a tie
        // Each row's ranking (descending, ties by lower index), then claims rank by rank, rows in order.
        std::vector<std::vector<int>> rank(static_cast<size_t>(tk));
        for (int t = 0; t < tk; ++t) {
            auto& r = rank[static_cast<size_t>(t)];
            r.resize(static_cast<size_t>(n));
            std::iota(r.begin(), r.end(), 0);
            std::stable_sort(r.begin(), r.end(), [&](int a, int c) { return v[t * n + a] > v[t * n + c]; });
        }
        std::vector<int> load(static_cast<size_t>(n), 0), ex(static_cast<size_t>(k * tk)), st(ex.size(), 0);
        for (int j = 0; j < k; ++j) {
            for (int t = 0; t < tk; ++t) {
                const auto a = static_cast<size_t>(t * k + j);
                ex[a] = rank[static_cast<size_t>(t)][static_cast<size_t>(j)];
                if (load[static_cast<size_t>(ex[a])] < cap) {
                    ++load[static_cast<size_t>(ex[a])];
                } else {
                    st[a] = 1;
                }
            }
        }
        for (int j = 0; over != 0 && j < k; ++j) {
            for (int t = 0; t < tk; ++t) {
                const auto a = static_cast<size_t>(t * k + j);
                if (st[a] != 1) continue;
                for (int m = k; m < n; ++m) {
                    const int e = rank[static_cast<size_t>(t)][static_cast<size_t>(m)];
                    bool used = false;
                    for (int jj = 0; jj < k; ++jj) used = used || ex[static_cast<size_t>(t * k + jj)] == e;
                    if (used || load[static_cast<size_t>(e)] >= cap) continue;
                    st[a] = 2 + ex[a];
                    ex[a] = e;
                    ++load[static_cast<size_t>(e)];
                    break;
                }
            }
        }
        for (int what = 0; what < 3; ++what) {
            Builder b(rng, "MOE_ROUTE " + std::to_string(k) + " of " + std::to_string(n) + " T=" + std::to_string(tk) +
                               " cap=" + std::to_string(cap) + (over != 0 ? " reroute" : " drop") +
                               (what == 0   ? " ids"
                                : what == 1 ? " weights"
                                            : " status"));
            const int x = b.input_data("probs", BASALT_DTYPE_F32, {n, tk}, bytes_of(v));
            const int o = b.output("out", what == 1 ? BASALT_DTYPE_F32 : BASALT_DTYPE_I32, {k, tk});
            b.node(BASALT_OP_MOE_ROUTE, o, {x}, {k, cap, over, what});
            std::vector<double> e;
            for (int t = 0; t < tk; ++t) {
                double sum = 0;
                for (int j = 0; j < k; ++j)
                    sum += v[static_cast<size_t>(t * n + rank[static_cast<size_t>(t)][static_cast<size_t>(j)])];
                for (int j = 0; j < k; ++j) {
                    const auto a = static_cast<size_t>(t * k + j);
                    const double w = st[a] == 1 ? 0.0 : v[static_cast<size_t>(t * n + ex[a])] / sum;
                    e.push_back(what == 0 ? ex[a] : what == 1 ? w : st[a]);
                }
            }
            cs.push_back(b.done(e, what == 1 ? 1e-12 : 0));
        }
    }

    // MOE_MATMUL: shared and per-expert inputs, T = 1 and T > 1.
    for (auto t : {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0, BASALT_DTYPE_Q2_K,
                   BASALT_DTYPE_Q3_K, BASALT_DTYPE_Q4_K, BASALT_DTYPE_Q6_K}) {
        const int64_t kin = facts(t).block == 256 ? 256 : 64;
        cs.push_back(moe_case(rng, t, kin, 24, 4, 2, 1, false));
        cs.push_back(moe_case(rng, t, kin, 17, 8, 2, 5, true));
        cs.push_back(moe_case(rng, t, kin, 9, 6, 3, 4, false));
    }

    // MOE_COMBINE and GATHER.
    for (auto [n, k, tk] : {std::tuple{64, 2, 1}, {33, 3, 4}}) {
        Builder b(rng, "MOE_COMBINE " + shape_str({n, k, tk}));
        const int x = b.input("experts_out", BASALT_DTYPE_F32, {n, k, tk});
        const int w = b.input("weights", BASALT_DTYPE_F32, {k, tk});
        const int o = b.output("out", BASALT_DTYPE_F32, {n, tk});
        b.node(BASALT_OP_MOE_COMBINE, o, {x, w});
        const auto X = b.vals(x);
        const auto W = b.vals(w);
        std::vector<double> e(static_cast<size_t>(n * tk), 0.0);
        for (int t = 0; t < tk; ++t) {
            for (int j = 0; j < k; ++j) {
                for (int i = 0; i < n; ++i)
                    e[static_cast<size_t>(t * n + i)] +=
                        W[static_cast<size_t>(t * k + j)] * X[static_cast<size_t>((t * k + j) * n + i)];
            }
        }
        cs.push_back(b.done(e, 1e-7));
    }
    for (int renorm : {0, 1}) {
        Builder b(rng, std::string("GATHER") + (renorm ? " renormalised" : ""));
        const int64_t n = 8;
        const int64_t k = 3;
        const int64_t tk = 4;
        const int x = b.input_data("probs", BASALT_DTYPE_F32, {n, tk}, bytes_of(uniform(rng, n * tk, 0.01f, 1.0f)));
        std::vector<int32_t> ids;
        for (int i = 0; i < k * tk; ++i) ids.push_back(static_cast<int32_t>(rng() % n));
        const int id = b.ints("ids", {k, tk}, ids);
        const int o = b.output("out", BASALT_DTYPE_F32, {k, tk});
        b.node(BASALT_OP_GATHER, o, {x, id}, {renorm});
        const auto X = b.vals(x);
        std::vector<double> e;
        for (int t = 0; t < tk; ++t) {
            double s = 0;
            for (int j = 0; j < k; ++j) s += X[static_cast<size_t>(t * n + ids[static_cast<size_t>(t * k + j)])];
            for (int j = 0; j < k; ++j) {
                const double v = X[static_cast<size_t>(t * n + ids[static_cast<size_t>(t * k + j)])];
                e.push_back(renorm ? v / s : v);
            }
        }
        cs.push_back(b.done(e, 1e-7));
    }

    // STEER: rows with a slot get its vector, rows with -1 (or a slot past the table) are copied.
    for (auto [n, slots, tk] : {std::tuple{64, 3, 7}, {33, 1, 2}, {96, 4, 1}}) {
        Builder b(rng, "STEER " + shape_str({n, slots, tk}));
        const int x = b.input("rows", BASALT_DTYPE_F32, {n, tk});
        const int tab = b.input("table", BASALT_DTYPE_F32, {n, slots});
        std::vector<int32_t> idx;
        for (int t = 0; t < tk; ++t) idx.push_back(t % 3 == 1 ? -1 : static_cast<int32_t>(rng() % (slots + 1)));
        const int id = b.ints("slots", {tk}, idx);
        const int o = b.output("out", BASALT_DTYPE_F32, {n, tk});
        b.node(BASALT_OP_STEER, o, {x, tab, id});
        const auto X = b.vals(x);
        const auto V = b.vals(tab);
        std::vector<double> e;
        for (int t = 0; t < tk; ++t) {
            const int32_t s = idx[static_cast<size_t>(t)];
            for (int i = 0; i < n; ++i) {
                const double add = s >= 0 && s < slots ? V[static_cast<size_t>(s * n + i)] : 0.0;
                e.push_back(X[static_cast<size_t>(t * n + i)] + add);
            }
        }
        cs.push_back(b.done(e, 1e-7));
    }

    // CAST and COPY.
    for (auto [from, to] : {std::pair{BASALT_DTYPE_F32, BASALT_DTYPE_F16},
                            {BASALT_DTYPE_F32, BASALT_DTYPE_BF16},
                            {BASALT_DTYPE_F32, BASALT_DTYPE_Q8_0},
                            {BASALT_DTYPE_F16, BASALT_DTYPE_F32},
                            {BASALT_DTYPE_BF16, BASALT_DTYPE_F32},
                            {BASALT_DTYPE_Q8_0, BASALT_DTYPE_F32},
                            {BASALT_DTYPE_Q4_0, BASALT_DTYPE_F32},
                            {BASALT_DTYPE_Q6_K, BASALT_DTYPE_F32},
                            {BASALT_DTYPE_F16, BASALT_DTYPE_BF16}}) {
        const int64_t n = facts(from).block == 256 ? 256 : 64;
        Builder b(rng, std::string("CAST ") + facts(from).name + " -> " + facts(to).name);
        const int x = b.input("x", from, {n, 3});
        const int o = b.output("y", to, {n, 3});
        b.node(BASALT_OP_CAST, o, {x});
        b.c.needs_blocks = !plugin_dequantizes_natively(from);
        const double tol = to == BASALT_DTYPE_F16    ? 1e-6
                           : to == BASALT_DTYPE_BF16 ? 1e-4
                           : to == BASALT_DTYPE_Q8_0 ? 1e-4
                                                     : 0;
        cs.push_back(b.done(b.vals(x), tol));
    }
    for (auto t : {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_K}) {
        const int64_t n = facts(t).block == 256 ? 256 : 64;
        Builder b(rng, std::string("COPY ") + facts(t).name + " strided -> packed");
        const int x = b.input("x", t, {n, 3});
        b.c.tensors[static_cast<size_t>(x)].row_pad = 64;
        const int o = b.output("y", t, {n, 3});
        b.node(BASALT_OP_COPY, o, {x});
        cs.push_back(b.done(b.vals(x), 0));
    }
    {
        Builder b(rng, "COPY f32 reshape 12x5 -> 6x10");
        const int x = b.input("x", BASALT_DTYPE_F32, {12, 5});
        const int o = b.output("y", BASALT_DTYPE_F32, {6, 10});
        b.node(BASALT_OP_COPY, o, {x});
        cs.push_back(b.done(b.vals(x), 0));
    }

    // A small block with intermediates (buffer NULL) placed by the backend: norm -> mul -> matmul -> silu -> add.
    for (auto wt : {BASALT_DTYPE_F32, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_K}) {
        const int64_t d = 256;
        const int64_t ff = 96;
        const int64_t tk = 3;
        Builder b(rng, std::string("CHAIN rms_norm*w -> matmul ") + facts(wt).name + " -> silu -> add");
        const int x = b.input("x", BASALT_DTYPE_F32, {d, tk});
        const int g = b.input("norm_w", BASALT_DTYPE_F32, {d});
        const int w = b.input("w", wt, {d, ff});
        const int bias = b.input("bias", BASALT_DTYPE_F32, {ff});
        const int n1 = b.intermediate("normed", {d, tk});
        const int n2 = b.intermediate("scaled", {d, tk});
        const int n3 = b.intermediate("proj", {ff, tk});
        const int n4 = b.intermediate("act", {ff, tk});
        const int o = b.output("out", BASALT_DTYPE_F32, {ff, tk});
        b.node(BASALT_OP_RMS_NORM, n1, {x}, {}, {1e-6f});
        b.node(BASALT_OP_MUL, n2, {n1, g});
        b.node(BASALT_OP_MATMUL, n3, {w, n2});
        b.node(BASALT_OP_SILU, n4, {n3});
        b.node(BASALT_OP_ADD, o, {n4, bias});
        auto X = b.vals(x);
        const auto G = b.vals(g);
        for (int t = 0; t < tk; ++t) {
            double s = 0;
            for (int i = 0; i < d; ++i) s += X[static_cast<size_t>(t * d + i)] * X[static_cast<size_t>(t * d + i)];
            const double inv = 1.0 / std::sqrt(s / d + static_cast<double>(1e-6f));
            for (int i = 0; i < d; ++i) X[static_cast<size_t>(t * d + i)] *= inv * G[static_cast<size_t>(i)];
        }
        auto e = matmul_ref(b.vals(w), X, d, ff, tk);
        const auto B = b.vals(bias);
        for (size_t i = 0; i < e.size(); ++i) e[i] = silu(e[i]) + B[i % static_cast<size_t>(ff)];
        b.c.matmul_like = true;
        cs.push_back(b.done(e, matmul_tol(wt) * 4));
    }
    // TANH and SIGMOID (since ABI 1.4): the unary shapes, and a wide range where both saturate (sigmoid's exp(-x)
    // overflows to inf for x < -88: the result must still be 0, not NaN).
    for (auto ne : {std::vector<int64_t>{1, 1}, {5, 3}, {4096, 2}, {333, 7}, {16, 2, 3}}) {
        cs.push_back(unary_case(rng, BASALT_OP_TANH, "TANH", ne, {}, [](const double* x, double* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
        }));
        cs.push_back(unary_case(rng, BASALT_OP_SIGMOID, "SIGMOID", ne, {}, [](const double* x, double* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = 1.0 / (1.0 + std::exp(-x[i]));
        }));
    }
    for (auto op : {BASALT_OP_TANH, BASALT_OP_SIGMOID}) {
        const bool tanh_op = op == BASALT_OP_TANH;
        Builder b(rng, std::string(tanh_op ? "TANH" : "SIGMOID") + " wide range 515x1");
        std::vector<float> xs = uniform(rng, 512, -30.0f, 30.0f);
        xs.insert(xs.end(), {-100.0f, 100.0f, 0.0f});
        const int x = b.input_data("x", BASALT_DTYPE_F32, {515, 1}, bytes_of(xs));
        const int o = b.output("out", BASALT_DTYPE_F32, {515, 1});
        b.node(op, o, {x});
        std::vector<double> e;
        for (float v : xs) e.push_back(tanh_op ? std::tanh(double{v}) : 1.0 / (1.0 + std::exp(-double{v})));
        cs.push_back(b.done(e, 1e-7));
    }
    for (auto& c : recurrent_cases(rng)) cs.push_back(std::move(c));
    for (auto& c : mxfp4_cases()) cs.push_back(std::move(c));
    return cs;
}

// ---------------------------------------------------------------------------------------------------------
// Running a case through a backend plugin

struct BackendUnderTest {
    std::string label;
    std::string component;
    std::vector<std::pair<std::string, std::string>> params;
    bool complete;  // must support every case (the reference backend)
};

// Later backends (Vulkan) add a row here.
std::vector<BackendUnderTest> backends_under_test() {
    return {
        {"cpu/scalar/1t", "cpu", {{"isa", "scalar"}, {"threads", "1"}}, true},
        {"cpu/avx2/2t", "cpu", {{"isa", "avx2"}, {"threads", "2"}}, true},
        {"cpu/avx512/3t", "cpu", {{"isa", "avx512"}, {"threads", "3"}}, true},
    };
}

struct Plugins {
    basalt::PluginHost host;
    std::map<std::string, const basalt_backend_iface*> ifaces;
    Plugins() {
        host.load(BASALT_TEST_BACKEND_CPU);
#ifdef BASALT_TEST_BACKEND_VULKAN
        host.load(BASALT_TEST_BACKEND_VULKAN);
#endif
        for (const auto& c : host.components()) {
            if (c.kind == BASALT_COMPONENT_BACKEND) ifaces[c.name] = static_cast<const basalt_backend_iface*>(c.iface);
        }
    }
};

Plugins& plugins() {
    static Plugins p;
    return p;
}

const basalt_backend_iface* cpu_iface() {
    auto it = plugins().ifaces.find("cpu");
    REQUIRE(it != plugins().ifaces.end());
    return it->second;
}

std::string plugin_message() {
    return basalt::plugin_error_message();
}

// A backend instance created from key/value params; destroyed with the object.
struct Instance {
    const basalt_backend_iface* iface = nullptr;
    void* be = nullptr;
    basalt_status status = BASALT_OK;
    std::string message;
    Instance(const basalt_backend_iface* i, const std::vector<std::pair<std::string, std::string>>& kv) : iface(i) {
        std::vector<const char*> keys;
        std::vector<const char*> vals;
        for (const auto& [k, v] : kv) {
            keys.push_back(k.c_str());
            vals.push_back(v.c_str());
        }
        basalt_params p{sizeof(basalt_params), 0, kv.size(), keys.data(), vals.data()};
        basalt::clear_plugin_error();
        status = iface->create(basalt::host_services(), 0, &p, &be);
        if (status != BASALT_OK) message = plugin_message();
    }
    ~Instance() {
        if (be != nullptr) iface->destroy(be);
    }
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;
};

// Creating the backend with KEY=VALUE fails as an invalid argument whose message contains `says`.
void expect_bad_param(const basalt_backend_iface* iface, const std::string& key, const std::string& value,
                      const std::string& says) {
    Instance inst(iface, {{key, value}});
    CHECK(inst.status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(inst.message, Catch::Matchers::Contains(says));
}

struct RunResult {
    enum { Ok, Unsupported, Failed } outcome = Ok;
    std::string message;
    std::vector<double> out;
};

// Device layout of a host tensor: contiguous except for row_pad bytes after every row.
struct Layout {
    int64_t nb[4];
    uint64_t bytes;
};

Layout layout_of(const HostTensor& t) {
    Layout l{};
    int64_t ne[4] = {1, 1, 1, 1};
    for (size_t i = 0; i < t.ne.size(); ++i) ne[i] = t.ne[i];
    l.nb[0] = facts(t.type).bytes;
    l.nb[1] = row_bytes(t.type, ne[0]) + t.row_pad;
    l.nb[2] = l.nb[1] * ne[1];
    l.nb[3] = l.nb[2] * ne[2];
    l.bytes = static_cast<uint64_t>(l.nb[3] * ne[3]);
    return l;
}

RunResult run_case(const basalt_backend_iface* iface, void* be, const Case& c) {
    RunResult r;
    std::vector<basalt_buffer*> bufs(c.tensors.size(), nullptr);
    std::vector<basalt_tensor> ts(c.tensors.size());
    auto cleanup = [&] {
        for (auto* b : bufs) iface->buffer_free(be, b);
    };
    for (size_t i = 0; i < c.tensors.size(); ++i) {
        const HostTensor& h = c.tensors[i];
        const Layout l = layout_of(h);
        basalt_tensor& t = ts[i];
        t = basalt_tensor{};
        t.struct_size = sizeof(basalt_tensor);
        t.dtype = h.type;
        t.n_dims = static_cast<int32_t>(h.ne.size());
        for (size_t d = 0; d < 4; ++d) t.ne[d] = d < h.ne.size() ? h.ne[d] : 1;
        for (size_t d = 0; d < 4; ++d) t.nb[d] = l.nb[d];
        t.name = h.name.c_str();
        if (h.kind == Kind::Intermediate) continue;
        // Matmul weights live in a weights buffer, as a session puts them (the CPU backend repacks Q8_0 ones).
        bool weights = h.kind == Kind::Input;
        bool matmul_weight = false;
        for (const NodeSpec& s : c.nodes) {
            if (s.out == static_cast<int>(i)) weights = false;
            if ((s.op == BASALT_OP_MATMUL || s.op == BASALT_OP_MOE_MATMUL) && s.in[0] == static_cast<int>(i))
                matmul_weight = true;
        }
        const uint32_t usage = weights && matmul_weight ? BASALT_BUFFER_WEIGHTS : BASALT_BUFFER_IO;
        REQUIRE(iface->buffer_alloc(be, l.bytes, usage, &bufs[i]) == BASALT_OK);
        t.buffer = bufs[i];
        // Outputs start as NaN bytes so an element the backend forgets to write fails the comparison.
        std::vector<uint8_t> dev(l.bytes, 0xff);
        if (h.kind == Kind::Input) {
            const int64_t rb = row_bytes(h.type, h.ne[0]);
            for (int64_t row = 0; row < h.nrows(); ++row) {
                std::memcpy(dev.data() + row * l.nb[1], h.data.data() + row * rb, static_cast<size_t>(rb));
            }
        }
        REQUIRE(iface->buffer_write(be, bufs[i], 0, dev.data(), dev.size()) == BASALT_OK);
    }
    std::vector<const basalt_tensor*> tp;
    for (auto& t : ts) tp.push_back(&t);
    std::vector<basalt_graph_node> nodes(c.nodes.size());
    std::vector<const basalt_graph_node*> np;
    for (size_t i = 0; i < c.nodes.size(); ++i) {
        const NodeSpec& s = c.nodes[i];
        basalt_graph_node& n = nodes[i];
        n = basalt_graph_node{};
        n.struct_size = sizeof(n);
        n.op = s.op;
        n.name = s.name.c_str();
        n.output = s.out;
        n.n_inputs = static_cast<int32_t>(s.in.size());
        for (size_t k = 0; k < s.in.size(); ++k) n.inputs[k] = s.in[k];
        for (size_t k = 0; k < s.ip.size(); ++k) n.iparams[k] = s.ip[k];
        for (size_t k = 0; k < s.fp.size(); ++k) n.fparams[k] = s.fp[k];
        np.push_back(&n);
    }
    basalt_graph g{sizeof(basalt_graph), 0, tp.size(), tp.data(), np.size(), np.data()};
    for (size_t i = 0; i < np.size(); ++i) {
        int32_t ok = 0;
        basalt::clear_plugin_error();
        const basalt_status st = iface->supports_node(be, &g, i, &ok);
        if (st != BASALT_OK || ok == 0) {
            r.outcome = st == BASALT_OK ? RunResult::Unsupported : RunResult::Failed;
            r.message = "supports_node(" + c.nodes[i].name + ") = " + std::to_string(ok) + " " + plugin_message();
            cleanup();
            return r;
        }
    }
    basalt::clear_plugin_error();
    const basalt_status st = iface->graph_compute(be, &g);
    if (st != BASALT_OK) {
        r.outcome = RunResult::Failed;
        r.message = "graph_compute: status " + std::to_string(st) + ": " + plugin_message();
        cleanup();
        return r;
    }
    const HostTensor& h = c.tensors[static_cast<size_t>(c.result)];
    const Layout l = layout_of(h);
    std::vector<uint8_t> dev(l.bytes);
    REQUIRE(iface->buffer_read(be, bufs[static_cast<size_t>(c.result)], 0, dev.data(), dev.size()) == BASALT_OK);
    const int64_t rb = row_bytes(h.type, h.ne[0]);
    std::vector<uint8_t> packed(static_cast<size_t>(rb * h.nrows()));
    for (int64_t row = 0; row < h.nrows(); ++row) {
        std::memcpy(packed.data() + row * rb, dev.data() + row * l.nb[1], static_cast<size_t>(rb));
    }
    r.out = values(h.type, packed.data(), h.nelements());
    cleanup();
    return r;
}

// Normalised mean squared error; infinite on NaN or a size mismatch.
double nmse(const std::vector<double>& got, const std::vector<double>& want) {
    if (got.size() != want.size()) return INFINITY;
    double num = 0;
    double den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    if (den == 0) return num == 0 ? 0 : INFINITY;
    return num / den;
}

// ---------------------------------------------------------------------------------------------------------
// Raw graph helpers for the malformed-graph tests

struct RawGraph {
    std::vector<basalt_tensor> ts;
    std::vector<basalt_graph_node> ns;
    std::vector<const basalt_tensor*> tp;
    std::vector<const basalt_graph_node*> np;
    basalt_graph g{};
    int tensor(basalt_dtype type, std::vector<int64_t> ne, basalt_buffer* buf, const char* name) {
        basalt_tensor t{};
        t.struct_size = sizeof(t);
        t.dtype = type;
        t.n_dims = static_cast<int32_t>(ne.size());
        for (size_t i = 0; i < 4; ++i) t.ne[i] = i < ne.size() ? ne[i] : 1;
        t.nb[0] = facts(type).bytes;
        t.nb[1] = row_bytes(type, t.ne[0]);
        t.nb[2] = t.nb[1] * t.ne[1];
        t.nb[3] = t.nb[2] * t.ne[2];
        t.buffer = buf;
        t.name = name;
        ts.push_back(t);
        return static_cast<int>(ts.size()) - 1;
    }
    void node(basalt_op op, const char* name, int out, std::vector<int> in, std::vector<int32_t> ip = {}) {
        basalt_graph_node n{};
        n.struct_size = sizeof(n);
        n.op = op;
        n.name = name;
        n.output = out;
        n.n_inputs = static_cast<int32_t>(in.size());
        for (size_t i = 0; i < in.size(); ++i) n.inputs[i] = in[i];
        for (size_t i = 0; i < ip.size(); ++i) n.iparams[i] = ip[i];
        ns.push_back(n);
    }
    const basalt_graph* graph() {
        tp.clear();
        np.clear();
        for (auto& t : ts) tp.push_back(&t);
        for (auto& n : ns) np.push_back(&n);
        g = basalt_graph{sizeof(basalt_graph), 0, tp.size(), tp.data(), np.size(), np.data()};
        return &g;
    }
};

}  // namespace

TEST_CASE("every op case matches the double-precision reference on every backend", "[backend-ops]") {
    const auto cases = all_cases();
    const auto backends = backends_under_test();
    std::vector<std::vector<double>> first_outputs(cases.size());
    for (const auto& bt : backends) {
        auto it = plugins().ifaces.find(bt.component);
        if (it == plugins().ifaces.end()) {
            WARN("backend " << bt.label << ": component not loaded, all " << cases.size() << " cases not run");
            continue;
        }
        Instance inst(it->second, bt.params);
        if (inst.status == BASALT_ERR_UNSUPPORTED) {
            WARN("backend " << bt.label << " unavailable here: " << inst.message);
            continue;
        }
        REQUIRE(inst.status == BASALT_OK);
        int passed = 0;
        int failed = 0;
        std::vector<std::string> unsupported;
        for (size_t ci = 0; ci < cases.size(); ++ci) {
            const Case& c = cases[ci];
            RunResult r = run_case(inst.iface, inst.be, c);
            if (r.outcome == RunResult::Unsupported) {
                unsupported.push_back(c.name);
                if (bt.complete && !(c.needs_blocks && !kHaveBlocks)) {
                    FAIL_CHECK(bt.label << ": " << c.name << ": unsupported: " << r.message);
                }
                continue;
            }
            if (r.outcome == RunResult::Failed) {
                ++failed;
                FAIL_CHECK(bt.label << ": " << c.name << ": " << r.message);
                continue;
            }
            const double e = nmse(r.out, c.expected);
            // SIMD and scalar paths see identical quantized inputs: only float summation order may differ.
            double cross = 0;
            if (first_outputs[ci].empty()) {
                first_outputs[ci] = r.out;
            } else {
                cross = nmse(r.out, first_outputs[ci]);
            }
            const double cross_tol = c.matmul_like ? 1e-9 : 1e-12;
            if (e <= c.tol && cross <= cross_tol) {
                ++passed;
            } else {
                ++failed;
                FAIL_CHECK(bt.label << ": " << c.name << ": NMSE " << e << " (tolerance " << c.tol
                                    << "), vs first backend " << cross << " (tolerance " << cross_tol << ")");
            }
        }
        std::printf("[backend-ops] %-16s %4d passed, %d failed, %zu unsupported (of %zu cases)\n", bt.label.c_str(),
                    passed, failed, unsupported.size(), cases.size());
        for (const auto& u : unsupported)
            std::printf("[backend-ops]   unsupported on %s: %s\n", bt.label.c_str(), u.c_str());
    }
}

namespace {

// Reads the 8 outputs at byte 256 of io of a MATMUL of the 64x8 F32 weights w with x = 0.5 everywhere and checks
// them against w's row sums / 2.
void check_half_matvec(const basalt_backend_iface* iface, void* be, basalt_buffer* io, const std::vector<float>& w) {
    std::vector<float> out(8);
    REQUIRE(iface->buffer_read(be, io, 64 * 4, out.data(), 32) == BASALT_OK);
    for (int j = 0; j < 8; ++j) {
        double s = 0;
        for (int k = 0; k < 64; ++k) s += w[static_cast<size_t>(j * 64 + k)] * 0.5;
        CHECK(out[static_cast<size_t>(j)] == Approx(s).margin(1e-5));
    }
}

}  // namespace

// The op list is sdk/include/basalt/sdk/ops.def: every op it declares (and so every value of plugin_backend.h)
// needs a case in all_cases(), so a new op without one fails here.
static_assert(BASALT_OP_COUNT == basalt::sdk::kOpValues, "ops.def declares every op value of plugin_backend.h");

TEST_CASE("every op ops.def declares has a case in the harness", "[backend-ops]") {
    const auto cases = all_cases();
    size_t covered = 0;
    for (const basalt::sdk::OpDecl& d : basalt::sdk::kOpDecls) {
        const bool has = std::any_of(cases.begin(), cases.end(), [&](const Case& c) {
            return std::any_of(c.nodes.begin(), c.nodes.end(), [&](const NodeSpec& n) { return n.op == d.op; });
        });
        INFO("op " << d.name << " (" << d.op << ") has no case in all_cases()");
        CHECK(has);
        covered += has ? 1 : 0;
    }
    std::printf("[backend-ops] %zu of %d declared ops have cases\n", covered, BASALT_OP_COUNT - 1);
}

// The MATMUL of w ([k, n], type wt) against rows first .. first + m - 1 of x (F32 rows of the matmul case's x) on
// one backend instance: the output floats ([n, m]).
std::vector<double> run_matmul_rows(Instance& inst, Rng& rng, basalt_dtype wt, int64_t k, int64_t n,
                                    const HostTensor& w, const HostTensor& x, int64_t x_rows, int64_t first,
                                    int64_t m) {
    const int64_t xrow = static_cast<int64_t>(x.data.size()) / x_rows;
    Builder b(rng, "rows");
    const int wi = b.input_data("w", wt, {k, n}, w.data);
    const int xi =
        b.input_data("x", BASALT_DTYPE_F32, {k, m},
                     std::vector<uint8_t>(x.data.begin() + first * xrow, x.data.begin() + (first + m) * xrow));
    const int o = b.output("out", BASALT_DTYPE_F32, {n, m});
    b.node(BASALT_OP_MATMUL, o, {wi, xi});
    const RunResult r = run_case(inst.iface, inst.be, b.done({}, 0));
    REQUIRE(r.outcome == RunResult::Ok);
    return r.out;
}

TEST_CASE("backend-cpu: a matmul of many columns equals each column alone, bit for bit", "[backend-ops]") {
    // Prefill (several-column and register-blocked kernels) and decode (the single-column dot product) must give
    // identical floats, so batch prefill equals token-by-token decode exactly. Odd N and M leave partial blocks.
    Rng rng(20261202);
    for (const auto& bt : backends_under_test()) {
        Instance inst(plugins().ifaces.at(bt.component), bt.params);
        if (inst.status == BASALT_ERR_UNSUPPORTED) continue;  // an ISA this machine lacks
        REQUIRE(inst.status == BASALT_OK);
        for (basalt_dtype wt :
             {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0, BASALT_DTYPE_MXFP4}) {
            for (int64_t k : {64, 576, 100}) {
                if (wt != BASALT_DTYPE_F32 && wt != BASALT_DTYPE_F16 && k % 32 != 0) continue;
                const int64_t n = 13;
                const int64_t m = 11;
                Case all = matmul_case(rng, wt, k, n, {m});
                const RunResult ra = run_case(inst.iface, inst.be, all);
                REQUIRE(ra.outcome == RunResult::Ok);
                for (int64_t j = 0; j < m; ++j) {
                    const std::vector<double> r1 =
                        run_matmul_rows(inst, rng, wt, k, n, all.tensors[0], all.tensors[1], m, j, 1);
                    for (int64_t i = 0; i < n; ++i) {
                        INFO(bt.label << " " << facts(wt).name << " K=" << k << " column " << j << " row " << i);
                        CHECK(r1[static_cast<size_t>(i)] == ra.out[static_cast<size_t>(j * n + i)]);
                    }
                }
            }
        }
    }
}

TEST_CASE("backend-cpu: matmuls of 1..33 rows match the reference and each row alone, every weight type",
          "[backend-ops]") {
    // The small-batch path (several-column, register-blocked and packed kernels, issue 34): every row count from 1
    // to 33 against the float64 reference, and each output bit for bit equal to its row computed alone. N = 37
    // leaves a partial 16-row group; K = 1056 gives 33 blocks of 32 (odd, and more than one K slice of the packed
    // kernel), K = 1280 five K-quant super-blocks.
    Rng rng(20261205);
    for (const auto& bt : backends_under_test()) {
        if (bt.component != "cpu") continue;
        Instance inst(plugins().ifaces.at(bt.component), bt.params);
        if (inst.status == BASALT_ERR_UNSUPPORTED) continue;  // an ISA this machine lacks
        REQUIRE(inst.status == BASALT_OK);
        for (basalt_dtype wt :
             {BASALT_DTYPE_F32, BASALT_DTYPE_F16, BASALT_DTYPE_BF16, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0,
              BASALT_DTYPE_MXFP4, BASALT_DTYPE_Q4_K, BASALT_DTYPE_Q5_K, BASALT_DTYPE_Q6_K}) {
            const int64_t k = facts(wt).block == 256 ? 1280 : 1056;
            const int64_t n = 37;
            const int64_t rows = 33;
            const Case all = matmul_case(rng, wt, k, n, {rows});
            std::vector<std::vector<double>> alone;
            for (int64_t j = 0; j < rows; ++j)
                alone.push_back(run_matmul_rows(inst, rng, wt, k, n, all.tensors[0], all.tensors[1], rows, j, 1));
            for (int64_t m = 1; m <= rows; ++m) {
                const std::vector<double> out =
                    run_matmul_rows(inst, rng, wt, k, n, all.tensors[0], all.tensors[1], rows, 0, m);
                const std::vector<double> want(all.expected.begin(), all.expected.begin() + m * n);
                INFO(bt.label << " " << facts(wt).name << " K=" << k << " rows " << m);
                CHECK(nmse(out, want) <= all.tol);
                size_t differ = 0;
                for (int64_t j = 0; j < m; ++j) {
                    for (int64_t i = 0; i < n; ++i) {
                        differ +=
                            out[static_cast<size_t>(j * n + i)] == alone[static_cast<size_t>(j)][static_cast<size_t>(i)]
                                ? 0
                                : 1;
                    }
                }
                CHECK(differ == 0);
            }
        }
    }
}

namespace {

// GATED_DELTA's batch invariance on one backend: a decode row (1 token) and a speculative verify (9 tokens), each
// continuing a random state, batched in one node with a 40-token prefill (a fresh start) before or after them, give
// bit for bit the outputs and the state each gives alone in its own node (the recurrent form), and the prefill gives
// its own alone (the chunked form); every node also matches the float64 recurrence.
void check_delta_batch_invariance(const basalt_backend_iface* iface, void* be, const std::string& label) {
    const DeltaSeq one = delta_seq(101, 1, false), nine = delta_seq(102, 9, false), prefill = delta_seq(103, 40, true);
    const std::vector<const DeltaSeq*> seqs{&one, &nine, &prefill};
    const auto [dk, nk, dv, nv] = kDeltaBatchDims;
    const int64_t token_floats = dv * nv, state_floats = dv * dk * nv;
    auto run = [&](const std::vector<const DeltaSeq*>& node, bool state_out) {
        const Case c = delta_batch_case(node, state_out);
        INFO(label << ": " << c.name);
        const RunResult r = run_case(iface, be, c);
        REQUIRE(r.outcome == RunResult::Ok);
        CHECK(nmse(r.out, c.expected) <= c.tol);
        return r.out;
    };
    const std::vector<std::vector<const DeltaSeq*>> mixes{
        {&one, &prefill}, {&prefill, &one}, {&nine, &prefill}, {&prefill, &nine}, {&nine, &prefill, &one}};
    for (bool state_out : {false, true}) {
        std::vector<std::vector<double>> alone;
        for (const DeltaSeq* s : seqs) alone.push_back(run({s}, state_out));
        for (const auto& mix : mixes) {
            const std::vector<double> got = run(mix, state_out);
            int64_t token = 0;
            for (size_t i = 0; i < mix.size(); ++i) {
                const std::vector<double>& want =
                    alone[static_cast<size_t>(std::find(seqs.begin(), seqs.end(), mix[i]) - seqs.begin())];
                const int64_t from = state_out ? static_cast<int64_t>(i) * state_floats : token * token_floats;
                int64_t differ = 0;
                for (size_t j = 0; j < want.size(); ++j) {
                    if (got[static_cast<size_t>(from) + j] != want[j]) ++differ;
                }
                INFO(label << ": " << (state_out ? "state" : "output") << " of the " << mix[i]->n << "-token sequence "
                           << i << " of a node of " << mix.size() << " against it alone");
                CHECK(differ == 0);
                token += mix[i]->n;
            }
        }
    }
}

}  // namespace

TEST_CASE("backend-cpu: GATED_DELTA gives each sequence the floats it gets alone, whatever shares its node",
          "[backend-ops]") {
    for (const auto& bt : backends_under_test()) {
        Instance inst(cpu_iface(), bt.params);
        if (inst.status == BASALT_ERR_UNSUPPORTED) {
            WARN("backend " << bt.label << " unavailable here: " << inst.message);
            continue;
        }
        REQUIRE(inst.status == BASALT_OK);
        check_delta_batch_invariance(inst.iface, inst.be, bt.label);
    }
}

// The outputs of a case on two backends, equal bit for bit (below).
void require_same_bits(const RunResult& a, const RunResult& b, const std::string& what);

namespace {

// The recurrent ops' cases for the ISA comparison: every GATED_DELTA and SSM_CONV case of the harness, then shapes that
// are not multiples of the SIMD widths: SSM_CONV over 1000 channels (uneven ranges per thread), GATED_DELTA with
// dk = 20 and dv = 40 (a block of 8 state rows; key columns past the last group of 8 and 16) in chunks of 64 and 7
// and token by token, and the recurrent form with dk = 24, dv = 20 (groups of 8 rows, then single rows).
std::vector<Case> recurrent_isa_cases() {
    Rng rng(20261206);
    std::vector<Case> cs;
    for (auto& c : recurrent_cases(rng)) {
        if (c.name.rfind("GATED_DELTA", 0) == 0 || c.name.rfind("SSM_CONV", 0) == 0) cs.push_back(std::move(c));
    }
    std::vector<int32_t> slots, fresh;
    for (auto [slot, n, first_fresh] : {std::tuple{0, 70, 1}, {1, 33, 0}, {0, 5, 0}, {2, 19, 1}}) {
        for (int i = 0; i < n; ++i) {
            slots.push_back(slot);
            fresh.push_back(i == 0 ? first_fresh : 0);
        }
    }
    for (bool state_out : {false, true}) ssm_conv_case(cs, rng, 1000, 4, slots, fresh, state_out);
    for (int32_t chunk : {0, 7, 1}) {
        for (bool state_out : {false, true}) gated_delta_case(cs, rng, slots, fresh, chunk, 20, 1, 40, 2, 1, state_out);
    }
    for (bool state_out : {false, true}) gated_delta_case(cs, rng, slots, fresh, 1, 24, 2, 20, 4, 1, state_out);
    return cs;
}

}  // namespace

TEST_CASE("backend-cpu: GATED_DELTA and SSM_CONV give the baseline build's floats bit for bit on every ISA",
          "[backend-ops]") {
    // The recurrent ops' AVX2 / AVX-512 loops (kernels-recurrent.cpp) against isa=scalar (the baseline loops) at 1
    // thread: GATED_DELTA's chunked (hint 0 and > 1) and recurrent forms and SSM_CONV, outputs and states, on 1, 2
    // and 3 threads.
    const std::vector<Case> cases = recurrent_isa_cases();
    const basalt_backend_iface* iface = cpu_iface();
    Instance base(iface, {{"isa", "scalar"}, {"threads", "1"}});
    REQUIRE(base.status == BASALT_OK);
    std::vector<RunResult> want;
    for (const Case& c : cases) {
        want.push_back(run_case(iface, base.be, c));
        INFO(c.name);
        REQUIRE(want.back().outcome == RunResult::Ok);
        CHECK(nmse(want.back().out, c.expected) <= c.tol);
    }
    int compared = 0;
    for (const char* isa : {"avx2", "avx512"}) {
        for (const char* threads : {"1", "2", "3"}) {
            Instance inst(iface, {{"isa", isa}, {"threads", threads}});
            if (inst.status == BASALT_ERR_UNSUPPORTED) {
                WARN("isa " << isa << " unavailable here: " << inst.message);
                break;
            }
            REQUIRE(inst.status == BASALT_OK);
            for (size_t i = 0; i < cases.size(); ++i) {
                require_same_bits(want[i], run_case(iface, inst.be, cases[i]),
                                  std::string(isa) + "/" + threads + "t " + cases[i].name);
                ++compared;
            }
        }
    }
    std::printf("[backend-ops]   recurrent ops: %d case runs on AVX2 / AVX-512 equal the baseline bit for bit\n",
                compared);
}

TEST_CASE("backend-cpu: attention block kernels give the per-row helpers' floats bit for bit", "[backend-ops]") {
    // attn_blocks=1 (AVX-512: 16-row score blocks with one transposed reduction, accumulators in registers)
    // against attn_blocks=0 (one dot and one axpy per visible pair) on the same ISA: head sizes with and without
    // register groups, GQA groups of 1..8 heads, lists shorter and longer than a block and not multiples of 16,
    // padding, windows, sinks, soft-cap and several query tokens, F32 and F16 caches (mixed too).
    Rng rng(20261204);
    const basalt_backend_iface* iface = cpu_iface();
    expect_bad_param(iface, "attn_blocks", "sometimes", "'attn_blocks' = 'sometimes'");
    for (const char* threads : {"1", "3"}) {
        Instance blocks(iface, {{"threads", threads}, {"attn_blocks", "1"}});
        Instance rows(iface, {{"threads", threads}, {"attn_blocks", "0"}});
        REQUIRE(blocks.status == BASALT_OK);
        REQUIRE(rows.status == BASALT_OK);
        struct Shape {
            int64_t hd_k, hd_v, n_head, n_kv;
        };
        for (const Shape sh :
             {Shape{64, 64, 9, 3}, Shape{64, 64, 8, 2}, Shape{64, 64, 8, 1}, Shape{128, 128, 4, 4},
              Shape{128, 128, 6, 2}, Shape{32, 48, 5, 1}, Shape{96, 80, 2, 1}, Shape{256, 256, 2, 2}}) {
            for (const int64_t len : {1, 15, 16, 17, 40, 203}) {
                for (const auto& [kt, vt] :
                     {std::pair{BASALT_DTYPE_F32, BASALT_DTYPE_F32}, std::pair{BASALT_DTYPE_F16, BASALT_DTYPE_F16},
                      std::pair{BASALT_DTYPE_F16, BASALT_DTYPE_F32}}) {
                    AttnSpec s;
                    s.hd_k = sh.hd_k;
                    s.hd_v = sh.hd_v;
                    s.n_head = sh.n_head;
                    s.n_kv = sh.n_kv;
                    s.kt = kt;
                    s.vt = vt;
                    s.n_slots = len + 8;
                    s.lists.resize(2);
                    std::vector<int32_t> slots(static_cast<size_t>(s.n_slots));
                    for (size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<int32_t>(i);
                    std::shuffle(slots.begin(), slots.end(), rng);
                    for (int64_t i = 0; i < len; ++i)
                        s.lists[0].push_back({slots[static_cast<size_t>(i)], static_cast<int32_t>(i)});
                    s.lists[1] = {
                        {slots[static_cast<size_t>(len)], 0}, {-1, 0}, {slots[static_cast<size_t>(len + 1)], 1}};
                    const auto last = static_cast<int32_t>(len - 1);
                    s.queries = {{0, last}, {1, 1}, {0, last / 2}};
                    s.scale = 1.0f / std::sqrt(static_cast<float>(sh.hd_k));
                    const bool odd = (len + sh.n_head) % 2 == 1;
                    s.window = odd ? 7 : 0;
                    s.sinks = odd ? 2 : 0;
                    s.cap = len == 40 ? 3.0f : 0.0f;
                    s.label = "hd " + std::to_string(sh.hd_k) + "/" + std::to_string(sh.hd_v) + " heads " +
                              std::to_string(sh.n_head) + "/" + std::to_string(sh.n_kv) + " len " + std::to_string(len);
                    const Case c = attention_case(rng, s);
                    const RunResult a = run_case(blocks.iface, blocks.be, c);
                    const RunResult b = run_case(rows.iface, rows.be, c);
                    REQUIRE(a.outcome == RunResult::Ok);
                    REQUIRE(b.outcome == RunResult::Ok);
                    REQUIRE(a.out.size() == b.out.size());
                    size_t differ = 0;
                    for (size_t i = 0; i < a.out.size(); ++i) differ += a.out[i] == b.out[i] ? 0 : 1;
                    INFO(c.name << " threads " << threads);
                    CHECK(differ == 0);
                }
            }
        }
    }
}

// Sets the E8M0 exponent of every MXFP4 block of a case's weights (tensor 0) to lo + a random 0..span-1: the
// realistic 120..127 (random small exponents make every product a subnormal), or the whole byte range.
void set_mxfp4_exponents(Rng& rng, Case& c, int lo, int span) {
    std::vector<uint8_t>& w = c.tensors[0].data;
    REQUIRE(c.tensors[0].type == BASALT_DTYPE_MXFP4);
    for (size_t b = 0; b < w.size(); b += 17) w[b] = static_cast<uint8_t>(lo + static_cast<int>(rng() % span));
}

// The outputs of a case on two backends, equal bit for bit (NaNs included; the values are the floats widened exactly).
void require_same_bits(const RunResult& a, const RunResult& b, const std::string& what) {
    REQUIRE(a.outcome == RunResult::Ok);
    REQUIRE(b.outcome == RunResult::Ok);
    REQUIRE(a.out.size() == b.out.size());
    for (size_t i = 0; i < a.out.size(); ++i) {
        INFO(what << " output " << i << ": " << a.out[i] << " vs " << b.out[i]);
        CHECK(std::memcmp(&a.out[i], &b.out[i], sizeof(double)) == 0);
    }
}

TEST_CASE("backend-cpu: repacked Q8_0 weights give the row kernels' floats bit for bit and follow writes",
          "[backend-ops]") {
    // repack=1 (AVX-512 VNNI only; elsewhere the parameter changes nothing) against repack=0 on the same ISA, Q8_0,
    // Q4_0 and MXFP4, with partial 16-row groups (N = 13, 37), an odd block count (K = 160), more blocks than one K
    // slice of the several-columns kernel (K = 1088) and prefill columns; then new weights written into the buffer
    // after first use must be seen, not the stale packed copy.
    Rng rng(20261203);
    const basalt_backend_iface* iface = cpu_iface();
    Instance packed(iface, {{"threads", "2"}, {"repack", "1"}});
    Instance rows(iface, {{"threads", "2"}, {"repack", "0"}});
    REQUIRE(packed.status == BASALT_OK);
    REQUIRE(rows.status == BASALT_OK);
    expect_bad_param(iface, "repack", "maybe", "'repack' = 'maybe'");
    expect_bad_param(iface, "repack_limit", "-5", "'repack_limit' = '-5'");
    // A limit of 0 MiB packs nothing: every matrix keeps the row kernels (the same floats, checked below too).
    Instance none(iface, {{"threads", "2"}, {"repack", "1"}, {"repack_limit", "0"}});
    REQUIRE(none.status == BASALT_OK);
    for (int64_t k : {64, 160, 576, 1088}) {
        for (int64_t n : {13, 16, 37}) {
            for (const auto& [m, wt] :
                 {std::pair{int64_t{1}, BASALT_DTYPE_Q8_0}, std::pair{int64_t{5}, BASALT_DTYPE_Q8_0},
                  std::pair{int64_t{1}, BASALT_DTYPE_Q4_0}, std::pair{int64_t{18}, BASALT_DTYPE_Q4_0},
                  std::pair{int64_t{18}, BASALT_DTYPE_Q8_0}, std::pair{int64_t{1}, BASALT_DTYPE_MXFP4},
                  std::pair{int64_t{5}, BASALT_DTYPE_MXFP4}, std::pair{int64_t{18}, BASALT_DTYPE_MXFP4}}) {
                Case c = matmul_case(rng, wt, k, n, {m});
                if (wt == BASALT_DTYPE_MXFP4) set_mxfp4_exponents(rng, c, 120, 8);
                for (int pass = 0; pass < 2; ++pass) {
                    const RunResult a = run_case(packed.iface, packed.be, c);
                    const RunResult b = run_case(rows.iface, rows.be, c);
                    const RunResult z = run_case(none.iface, none.be, c);
                    REQUIRE(a.outcome == RunResult::Ok);
                    REQUIRE(b.outcome == RunResult::Ok);
                    REQUIRE(z.outcome == RunResult::Ok);
                    REQUIRE(a.out.size() == b.out.size());
                    REQUIRE(z.out.size() == b.out.size());
                    for (size_t i = 0; i < a.out.size(); ++i) {
                        INFO(facts(wt).name << " K=" << k << " N=" << n << " M=" << m << " pass " << pass << " output "
                                            << i);
                        CHECK(a.out[i] == b.out[i]);
                        CHECK(z.out[i] == b.out[i]);
                    }
                    c = matmul_case(rng, wt, k, n, {m});  // fresh weights: buffers are reallocated
                    if (wt == BASALT_DTYPE_MXFP4) set_mxfp4_exponents(rng, c, 120, 8);
                }
            }
        }
    }
    // MXFP4 with every exponent byte (0 and 1 are subnormal scales, 255 is 2^127: products underflow, overflow to
    // infinities and NaNs): the packed scale (scalef of the activation scale) must give the row kernel's product.
    for (int64_t m : {1, 18}) {
        Case c = matmul_case(rng, BASALT_DTYPE_MXFP4, 160, 37, {m});
        set_mxfp4_exponents(rng, c, 0, 256);
        require_same_bits(run_case(packed.iface, packed.be, c), run_case(rows.iface, rows.be, c),
                          "MXFP4 exponents 0..255, M=" + std::to_string(m));
    }
    // Activations on the rounding boundaries: amax 127 makes the quantizer's scale 1, so every x.5 must round
    // away from zero as the scalar reference does (the packed path has its own vectorized quantizer).
    {
        Case c = matmul_case(rng, BASALT_DTYPE_Q8_0, 64, 16, {2});
        std::vector<float> x(128);
        for (size_t i = 0; i < x.size(); ++i) {
            const float mag = i % 32 == 0 ? 127.0f : static_cast<float>(i % 32) * 3.0f + 0.5f;
            x[i] = (i % 3 == 0 ? -1.0f : 1.0f) * (i % 32 == 0 ? 127.0f : std::fmod(mag, 126.0f));
        }
        x[5] = 0.49999997f;
        x[6] = -1.5f;
        x[7] = 2.5f;
        std::memcpy(c.tensors[1].data.data(), x.data(), x.size() * 4);
        const RunResult a = run_case(packed.iface, packed.be, c);
        const RunResult b = run_case(rows.iface, rows.be, c);
        REQUIRE(a.outcome == RunResult::Ok);
        REQUIRE(b.outcome == RunResult::Ok);
        for (size_t i = 0; i < a.out.size(); ++i) {
            INFO("half-way activations, output " << i);
            CHECK(a.out[i] == b.out[i]);
        }
    }
    // One weights buffer kept across graphs: write, compute (packs), write new weights, compute again.
    const int64_t k = 64;
    const int64_t n = 20;
    basalt_buffer* wb = nullptr;
    basalt_buffer* io = nullptr;
    const uint64_t wbytes = static_cast<uint64_t>(n * (k / 32) * 34);
    REQUIRE(iface->buffer_alloc(packed.be, wbytes, BASALT_BUFFER_WEIGHTS, &wb) == BASALT_OK);
    REQUIRE(iface->buffer_alloc(packed.be, static_cast<uint64_t>(4 * (k + n)), BASALT_BUFFER_IO, &io) == BASALT_OK);
    std::vector<float> x(static_cast<size_t>(k), 0.5f);
    REQUIRE(iface->buffer_write(packed.be, io, 0, x.data(), x.size() * 4) == BASALT_OK);
    RawGraph g;
    const int wt = g.tensor(BASALT_DTYPE_Q8_0, {k, n}, wb, "w");
    const int xt = g.tensor(BASALT_DTYPE_F32, {k}, io, "x");
    const int ot = g.tensor(BASALT_DTYPE_F32, {n}, io, "out");
    g.ts[static_cast<size_t>(ot)].offset = static_cast<uint64_t>(4 * k);
    g.node(BASALT_OP_MATMUL, "packed", ot, {wt, xt});
    for (int8_t q : {int8_t{1}, int8_t{-3}}) {
        // Every quant q with scale 1.0 (F16 0x3c00): each output is 0.5 * 64 * q (up to the activations' Q8_0).
        std::vector<uint8_t> w(wbytes);
        for (size_t b = 0; b < w.size(); b += 34) {
            w[b] = 0x00;
            w[b + 1] = 0x3c;
            std::memset(&w[b + 2], static_cast<uint8_t>(q), 32);
        }
        REQUIRE(iface->buffer_write(packed.be, wb, 0, w.data(), w.size()) == BASALT_OK);
        REQUIRE(iface->graph_compute(packed.be, g.graph()) == BASALT_OK);
        std::vector<float> out(static_cast<size_t>(n));
        REQUIRE(iface->buffer_read(packed.be, io, static_cast<uint64_t>(4 * k), out.data(), out.size() * 4) ==
                BASALT_OK);
        for (float v : out) CHECK(v == Approx(32.0 * q).epsilon(1e-3));
    }
    iface->buffer_free(packed.be, wb);
    iface->buffer_free(packed.be, io);
}

TEST_CASE("backend-cpu: repacked MOE_MATMUL experts give the row kernels' floats bit for bit", "[backend-ops]") {
    // MOE_MATMUL with repack=1 (each expert's matrix packed, only the selected experts' groups read) against
    // repack=0 on the same ISA: decode (one token, shared and per-expert activations), a few tokens, and enough
    // tokens that an expert takes more than the 16 columns of one several-columns call; partial groups (N = 17, 37)
    // and K past one slice (1088).
    Rng rng(20261205);
    const basalt_backend_iface* iface = cpu_iface();
    Instance packed(iface, {{"threads", "2"}, {"repack", "1"}});
    Instance rows(iface, {{"threads", "2"}, {"repack", "0"}});
    REQUIRE(packed.status == BASALT_OK);
    REQUIRE(rows.status == BASALT_OK);
    struct Shape {
        int64_t k_in, n, n_expert, k, tokens;
        bool per_expert;
    };
    const Shape shapes[] = {{64, 24, 4, 2, 1, false},  {160, 37, 8, 4, 1, true},    {96, 16, 6, 3, 4, false},
                            {160, 17, 8, 2, 5, true},  {1088, 37, 6, 4, 40, false}, {64, 32, 4, 4, 9, true},
                            {576, 48, 32, 4, 1, false}};
    for (basalt_dtype wt : {BASALT_DTYPE_MXFP4, BASALT_DTYPE_Q8_0, BASALT_DTYPE_Q4_0}) {
        for (const Shape& sh : shapes) {
            Case c = moe_case(rng, wt, sh.k_in, sh.n, sh.n_expert, sh.k, sh.tokens, sh.per_expert);
            if (wt == BASALT_DTYPE_MXFP4) set_mxfp4_exponents(rng, c, 120, 8);
            for (int pass = 0; pass < 2; ++pass) {  // the second pass reuses the packed copies
                require_same_bits(run_case(packed.iface, packed.be, c), run_case(rows.iface, rows.be, c),
                                  c.name + " pass " + std::to_string(pass));
            }
        }
    }
}

TEST_CASE("backend-cpu: decode read-ahead ends with its graph and does not change results", "[backend-ops]") {
    // matmul -> SILU -> matmul: after the first matmul the workers read ahead into the second one's packed
    // weights. The weights are freed right after every graph_compute (their packed copies unmapped), so a
    // read-ahead outliving its graph would fault; the outputs must equal the row kernels' (repack=0) bit for bit.
    const basalt_backend_iface* iface = cpu_iface();
    Instance packed(iface, {{"threads", "3"}, {"repack", "1"}});
    Instance rows(iface, {{"threads", "3"}, {"repack", "0"}});
    REQUIRE(packed.status == BASALT_OK);
    REQUIRE(rows.status == BASALT_OK);
    const int64_t k = 256;
    const int64_t n = 512;
    Rng rng(20261204);
    for (int iter = 0; iter < 20; ++iter) {
        std::vector<uint8_t> w1(static_cast<size_t>(n * (k / 32) * 34));
        std::vector<uint8_t> w2(static_cast<size_t>(k * (n / 32) * 34));
        for (auto* w : {&w1, &w2}) {
            for (size_t b = 0; b < w->size(); b += 34) {
                (*w)[b] = static_cast<uint8_t>(rng() & 0xff);
                (*w)[b + 1] = 0x20;  // scale ~0.008 (F16 0x20xx): keeps the SILU in range
                for (int i = 0; i < 32; ++i) (*w)[b + 2 + static_cast<size_t>(i)] = static_cast<uint8_t>(rng());
            }
        }
        const std::vector<float> x = uniform(rng, k);
        std::vector<float> outs[2];
        Instance* insts[2] = {&packed, &rows};
        for (int which = 0; which < 2; ++which) {
            Instance& inst = *insts[which];
            basalt_buffer* b1 = nullptr;
            basalt_buffer* b2 = nullptr;
            basalt_buffer* io = nullptr;
            REQUIRE(iface->buffer_alloc(inst.be, w1.size(), BASALT_BUFFER_WEIGHTS, &b1) == BASALT_OK);
            REQUIRE(iface->buffer_alloc(inst.be, w2.size(), BASALT_BUFFER_WEIGHTS, &b2) == BASALT_OK);
            REQUIRE(iface->buffer_alloc(inst.be, static_cast<uint64_t>(8 * k), BASALT_BUFFER_IO, &io) == BASALT_OK);
            REQUIRE(iface->buffer_write(inst.be, b1, 0, w1.data(), w1.size()) == BASALT_OK);
            REQUIRE(iface->buffer_write(inst.be, b2, 0, w2.data(), w2.size()) == BASALT_OK);
            REQUIRE(iface->buffer_write(inst.be, io, 0, x.data(), x.size() * 4) == BASALT_OK);
            RawGraph g;
            const int t_w1 = g.tensor(BASALT_DTYPE_Q8_0, {k, n}, b1, "w1");
            const int t_w2 = g.tensor(BASALT_DTYPE_Q8_0, {n, k}, b2, "w2");
            const int t_x = g.tensor(BASALT_DTYPE_F32, {k}, io, "x");
            const int t_h = g.tensor(BASALT_DTYPE_F32, {n}, nullptr, "h");
            const int t_a = g.tensor(BASALT_DTYPE_F32, {n}, nullptr, "a");
            const int t_o = g.tensor(BASALT_DTYPE_F32, {k}, io, "out");
            g.ts[static_cast<size_t>(t_o)].offset = static_cast<uint64_t>(4 * k);
            g.node(BASALT_OP_MATMUL, "up", t_h, {t_w1, t_x});
            g.node(BASALT_OP_SILU, "act", t_a, {t_h});
            g.node(BASALT_OP_MATMUL, "down", t_o, {t_w2, t_a});
            REQUIRE(iface->graph_compute(inst.be, g.graph()) == BASALT_OK);
            outs[which].resize(static_cast<size_t>(k));
            REQUIRE(iface->buffer_read(inst.be, io, static_cast<uint64_t>(4 * k), outs[which].data(), 4 * k) ==
                    BASALT_OK);
            iface->buffer_free(inst.be, b1);
            iface->buffer_free(inst.be, b2);
            iface->buffer_free(inst.be, io);
        }
        for (size_t i = 0; i < outs[0].size(); ++i) {
            INFO("iteration " << iter << " output " << i);
            CHECK(outs[0][i] == outs[1][i]);
        }
    }
}

TEST_CASE("backend-cpu: a graph of the last one's shape reuses its plan, never its data, names or buffers",
          "[backend-ops]") {
    // The backend keeps the checked and planned nodes of the last graph for the next graph of the same key.
    const basalt_backend_iface* iface = cpu_iface();
    Instance inst(iface, {{"threads", "2"}});
    REQUIRE(inst.status == BASALT_OK);
    basalt_buffer* io = nullptr;
    REQUIRE(iface->buffer_alloc(inst.be, 4096, BASALT_BUFFER_IO, &io) == BASALT_OK);
    std::vector<float> w(64 * 8);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 11) - 5.0f;
    REQUIRE(iface->buffer_write(inst.be, io, 0, w.data(), w.size() * 4) == BASALT_OK);
    RawGraph g;
    const int wt = g.tensor(BASALT_DTYPE_F32, {64, 8}, io, "w");
    const int xt = g.tensor(BASALT_DTYPE_F32, {64}, io, "x");
    const int st = g.tensor(BASALT_DTYPE_F32, {64}, nullptr, "x2");  // an intermediate: placed in the arena
    const int ot = g.tensor(BASALT_DTYPE_F32, {8}, io, "out");
    g.ts[static_cast<size_t>(xt)].offset = 2048;
    g.ts[static_cast<size_t>(ot)].offset = 2304;
    g.node(BASALT_OP_ADD, "double", st, {xt, xt});
    g.node(BASALT_OP_MATMUL, "project", ot, {wt, st});
    for (float v : {0.5f, -1.25f, 3.0f}) {  // new input data each time, the same graph
        const std::vector<float> x(64, v);
        REQUIRE(iface->buffer_write(inst.be, io, 2048, x.data(), 256) == BASALT_OK);
        REQUIRE(iface->graph_compute(inst.be, g.graph()) == BASALT_OK);
        std::vector<float> out(8);
        REQUIRE(iface->buffer_read(inst.be, io, 2304, out.data(), 32) == BASALT_OK);
        for (int j = 0; j < 8; ++j) {
            double sum = 0;
            for (int k = 0; k < 64; ++k) sum += w[static_cast<size_t>(j * 64 + k)] * 2.0 * v;
            CHECK(out[static_cast<size_t>(j)] == Approx(sum).margin(1e-4));
        }
    }
    // Two graphs of one shape built from fresh structs: a failure while running the second names its node.
    auto rows_graph = [&](RawGraph& r, const char* name) {
        const int src = r.tensor(BASALT_DTYPE_F32, {64, 8}, io, "w");
        const int ids = r.tensor(BASALT_DTYPE_I32, {1}, io, "ids");
        const int dst = r.tensor(BASALT_DTYPE_F32, {64, 1}, io, "row");
        r.ts[static_cast<size_t>(ids)].offset = 2368;
        r.ts[static_cast<size_t>(dst)].offset = 2432;
        r.node(BASALT_OP_GET_ROWS, name, dst, {src, ids});
    };
    RawGraph first, second;
    rows_graph(first, "first.rows");
    rows_graph(second, "second.rows");
    const int32_t three = 3, bad = 100;
    REQUIRE(iface->buffer_write(inst.be, io, 2368, &three, 4) == BASALT_OK);
    REQUIRE(iface->graph_compute(inst.be, first.graph()) == BASALT_OK);
    std::vector<float> row(64);
    REQUIRE(iface->buffer_read(inst.be, io, 2432, row.data(), 256) == BASALT_OK);
    for (int k = 0; k < 64; ++k) CHECK(row[static_cast<size_t>(k)] == w[static_cast<size_t>(3 * 64 + k)]);
    REQUIRE(iface->buffer_write(inst.be, io, 2368, &bad, 4) == BASALT_OK);
    basalt::clear_plugin_error();
    CHECK(iface->graph_compute(inst.be, second.graph()) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(plugin_message(), Catch::Matchers::Contains("second.rows"));
    // A freed buffer's plan is not trusted, even when a new, smaller buffer lands at the same address (then the
    // graph's key is the last one's).
    int reused = 0;
    for (int round = 0; round < 4; ++round) {
        basalt_buffer* big = nullptr;
        REQUIRE(iface->buffer_alloc(inst.be, 4096, BASALT_BUFFER_IO, &big) == BASALT_OK);
        RawGraph a;
        const int in = a.tensor(BASALT_DTYPE_F32, {256}, big, "in");
        const int out = a.tensor(BASALT_DTYPE_F32, {256}, big, "out");
        a.ts[static_cast<size_t>(out)].offset = 1024;
        a.node(BASALT_OP_SILU, "act", out, {in});
        REQUIRE(iface->graph_compute(inst.be, a.graph()) == BASALT_OK);
        iface->buffer_free(inst.be, big);
        // Allocate until a handle reuses the freed one's address (the allocator usually obliges within a few).
        std::vector<basalt_buffer*> smalls;
        for (int i = 0; i < 16 && (smalls.empty() || smalls.back() != big); ++i) {
            smalls.push_back(nullptr);
            REQUIRE(iface->buffer_alloc(inst.be, 1024, BASALT_BUFFER_IO, &smalls.back()) == BASALT_OK);
        }
        reused += smalls.back() == big ? 1 : 0;
        for (auto& t : a.ts) t.buffer = smalls.back();
        basalt::clear_plugin_error();
        CHECK(iface->graph_compute(inst.be, a.graph()) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(plugin_message(), Catch::Matchers::Contains("exceeds"));
        for (basalt_buffer* b : smalls) iface->buffer_free(inst.be, b);
    }
    std::printf("[backend-ops]   plan reuse: %d of 4 rounds had a new buffer at the freed one's address\n", reused);
    iface->buffer_free(inst.be, io);
}

namespace {

// An activation and its gated form on one CPU instance of the given ISA: unary(x) and gated(x, up) over the same
// x (one row of x.size() floats), read back as {unary, gated}.
std::pair<std::vector<float>, std::vector<float>> run_activation_pair(const char* isa, basalt_op unary, basalt_op gated,
                                                                      const std::vector<float>& x, float up_value) {
    const auto n = static_cast<int64_t>(x.size());
    const basalt_backend_iface* iface = cpu_iface();
    Instance inst(iface, {{"threads", "2"}, {"isa", isa}});
    REQUIRE(inst.status == BASALT_OK);
    basalt_buffer* buf = nullptr;
    REQUIRE(iface->buffer_alloc(inst.be, static_cast<uint64_t>(n) * 16, BASALT_BUFFER_IO, &buf) == BASALT_OK);
    const std::vector<float> up(x.size(), up_value);
    REQUIRE(iface->buffer_write(inst.be, buf, 0, x.data(), x.size() * 4) == BASALT_OK);
    REQUIRE(iface->buffer_write(inst.be, buf, x.size() * 4, up.data(), x.size() * 4) == BASALT_OK);
    RawGraph g;
    const int xt = g.tensor(BASALT_DTYPE_F32, {n}, buf, "x");
    const int ut = g.tensor(BASALT_DTYPE_F32, {n}, buf, "up");
    const int yt = g.tensor(BASALT_DTYPE_F32, {n}, buf, "unary");
    const int wt = g.tensor(BASALT_DTYPE_F32, {n}, buf, "gated");
    g.ts[static_cast<size_t>(ut)].offset = x.size() * 4;
    g.ts[static_cast<size_t>(yt)].offset = x.size() * 8;
    g.ts[static_cast<size_t>(wt)].offset = x.size() * 12;
    g.node(unary, "unary", yt, {xt});
    g.node(gated, "gated", wt, {xt, ut});
    REQUIRE(iface->graph_compute(inst.be, g.graph()) == BASALT_OK);
    std::vector<float> y(x.size()), w(x.size());
    REQUIRE(iface->buffer_read(inst.be, buf, x.size() * 8, y.data(), x.size() * 4) == BASALT_OK);
    REQUIRE(iface->buffer_read(inst.be, buf, x.size() * 12, w.data(), x.size() * 4) == BASALT_OK);
    iface->buffer_free(inst.be, buf);
    return {y, w};
}

}  // namespace

TEST_CASE("backend-cpu: SILU and SWIGLU are within a few ulp of exact over the float range, on every ISA",
          "[backend-ops]") {
    // The AVX-512 table computes exp with llama.cpp's vector algorithm (~1.5 ulp); the others call expf.
    std::vector<float> x;
    for (int i = -24000; i <= 24000; ++i) x.push_back(static_cast<float>(i) * 0.005f);  // [-120, 120]
    for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.7f, -88.7f, 89.5f, -89.5f, 104.0f, -104.0f, 300.0f, -300.0f})
        x.push_back(v);
    while (x.size() % 16 != 5) x.push_back(0.75f);  // a scalar tail too
    for (const char* isa : {"auto", "scalar"}) {
        const auto [s, w] = run_activation_pair(isa, BASALT_OP_SILU, BASALT_OP_SWIGLU, x, -1.5f);
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double e = silu(static_cast<double>(x[i]));
            // Relative error, or absolute near zero.
            const double err_s = std::fabs(s[i] - e) / std::max(std::fabs(e), 1e-36);
            const double err_w = std::fabs(w[i] - e * -1.5) / std::max(std::fabs(e * 1.5), 1e-36);
            INFO("isa " << isa << " x = " << x[i] << ": silu " << s[i] << ", swiglu " << w[i] << ", exact " << e);
            if (std::fabs(e) > 1e-30) {
                CHECK(err_s < 5e-7);
                CHECK(err_w < 5e-7);
                worst = std::max({worst, err_s, err_w});
            } else {
                CHECK(std::fabs(s[i] - e) < 1e-30);  // exp(-x) overflows past x ~ -88.7: silu gives -0
            }
        }
        std::printf("[backend-ops]   silu/swiglu isa %s: worst relative error %.3g\n", isa, worst);
    }
}

TEST_CASE("backend-cpu: GELU and GEGLU (tanh form) are within a few ulp of exact over the float range, on every ISA",
          "[backend-ops]") {
    // The AVX-512 table computes x / (1 + exp(-2u)) with SiLU's vector exp; the others 0.5 x (1 + tanh(u)), whose
    // 1 + tanh cancels for large negative x (an absolute error up to about ulp(1) |x| / 2 where gelu is tiny). The
    // reference is the same function in the stable form, in double: 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)).
    const auto gelu = [](double v) {
        return v / (1.0 + std::exp(-2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v)));
    };
    std::vector<float> x;
    for (int i = -12000; i <= 12000; ++i) x.push_back(static_cast<float>(i) * 0.005f);  // [-60, 60]
    for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-5f, -1e-5f, 300.0f, -300.0f}) x.push_back(v);
    while (x.size() % 16 != 7) x.push_back(-0.25f);  // a scalar tail too
    for (const char* isa : {"auto", "scalar"}) {
        const auto [y, w] = run_activation_pair(isa, BASALT_OP_GELU, BASALT_OP_GEGLU, x, 2.5f);
        double worst = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double e = gelu(static_cast<double>(x[i]));
            INFO("isa " << isa << " x = " << x[i] << ": gelu " << y[i] << ", geglu " << w[i] << ", exact " << e);
            const double slack = 1e-7 * std::fabs(static_cast<double>(x[i]));
            CHECK(std::fabs(y[i] - e) <= 1e-6 * std::fabs(e) + slack);
            CHECK(std::fabs(w[i] - 2.5 * e) <= 2.5e-6 * std::fabs(e) + 2.5 * slack);
            if (std::fabs(e) > 1e-3) worst = std::max(worst, std::fabs(y[i] - e) / std::fabs(e));
        }
        std::printf("[backend-ops]   gelu/geglu isa %s: worst relative error where |gelu| > 1e-3 %.3g\n", isa, worst);
    }
}

TEST_CASE("backend-cpu: F16 KV writes (vector conversion) equal CAST's reference conversion bit for bit",
          "[backend-ops]") {
    // KV_WRITE into an F16 cache converts with the ISA's instructions, CAST with the scalar reference: the same
    // bits for every float, including NaNs, infinities, overflow to inf, and half subnormals.
    Rng rng(20261203);
    std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u,
                                  0xffa00123u, 0x7f800001u, 0x477fefffu, 0x477ff000u, 0x477fffffu,
                                  0x38800000u, 0x387fffffu, 0x33000000u, 0x33000001u, 0x32ffffffu,
                                  0x00000001u, 0x3f800fffu, 0x3f801000u, 0x3f802000u, 0x3f801001u};
    while (bits.size() % 16 != 3) bits.push_back(0x3f800000u);  // a scalar tail too
    for (int i = 0; i < (1 << 18); ++i) bits.push_back(static_cast<uint32_t>(rng() >> 32));
    for (int i = 0; i < (1 << 14); ++i) {  // half the range: near and below F16's smallest normals
        bits.push_back((static_cast<uint32_t>(rng() >> 32) & 0x87ffffffu) | 0x30000000u);
    }
    const auto n = static_cast<int64_t>(bits.size());
    std::vector<float> x(bits.size());
    std::memcpy(x.data(), bits.data(), bits.size() * 4);
    const basalt_backend_iface* iface = cpu_iface();
    Instance inst(iface, {{"threads", "2"}});
    REQUIRE(inst.status == BASALT_OK);
    basalt_buffer* buf = nullptr;
    const uint64_t off_cast = static_cast<uint64_t>(n) * 4, off_kv = off_cast + static_cast<uint64_t>(n) * 2 + 64;
    const uint64_t off_slot = off_kv + static_cast<uint64_t>(n) * 2 + 64;
    REQUIRE(iface->buffer_alloc(inst.be, off_slot + 64, BASALT_BUFFER_IO, &buf) == BASALT_OK);
    REQUIRE(iface->buffer_write(inst.be, buf, 0, x.data(), x.size() * 4) == BASALT_OK);
    const int32_t slot0 = 0;
    REQUIRE(iface->buffer_write(inst.be, buf, off_slot, &slot0, 4) == BASALT_OK);
    RawGraph g;
    const int xt = g.tensor(BASALT_DTYPE_F32, {n}, buf, "x");
    const int ct = g.tensor(BASALT_DTYPE_F16, {n}, buf, "cast");
    const int kt = g.tensor(BASALT_DTYPE_F16, {n, 1}, buf, "cache");
    const int st = g.tensor(BASALT_DTYPE_I32, {1}, buf, "slot");
    const int xr = g.tensor(BASALT_DTYPE_F32, {n, 1}, buf, "x.row");
    g.ts[static_cast<size_t>(ct)].offset = off_cast;
    g.ts[static_cast<size_t>(kt)].offset = off_kv;
    g.ts[static_cast<size_t>(st)].offset = off_slot;
    g.node(BASALT_OP_CAST, "cast", ct, {xt});
    g.node(BASALT_OP_KV_WRITE, "kv_write", kt, {xr, kt, st});
    REQUIRE(iface->graph_compute(inst.be, g.graph()) == BASALT_OK);
    std::vector<uint16_t> cast(bits.size()), kv(bits.size());
    REQUIRE(iface->buffer_read(inst.be, buf, off_cast, cast.data(), cast.size() * 2) == BASALT_OK);
    REQUIRE(iface->buffer_read(inst.be, buf, off_kv, kv.data(), kv.size() * 2) == BASALT_OK);
    size_t differ = 0;
    for (size_t i = 0; i < bits.size(); ++i) {
        if (cast[i] != kv[i] && differ++ < 5) {
            INFO("float bits 0x" << std::hex << bits[i] << ": CAST 0x" << cast[i] << ", KV_WRITE 0x" << kv[i]);
            CHECK(cast[i] == kv[i]);
        }
    }
    CHECK(differ == 0);
    iface->buffer_free(inst.be, buf);
}

TEST_CASE("backend-cpu describes its device and parses its parameters", "[backend-ops]") {
    const basalt_backend_iface* iface = cpu_iface();
    size_t n = 0;
    REQUIRE(iface->device_count(basalt::host_services(), &n) == BASALT_OK);
    CHECK(n == 1);
    basalt_device_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(iface->device_info(0, &info) == BASALT_OK);
    CHECK(info.type == BASALT_DEVICE_CPU);
    CHECK(std::strlen(info.name) > 0);
    CHECK(info.memory_total > 0);
    CHECK(iface->device_info(1, &info) == BASALT_ERR_NOT_FOUND);

    expect_bad_param(iface, "threadz", "2", "threadz");
    expect_bad_param(iface, "threads", "many", "'threads' = 'many'");
    expect_bad_param(iface, "threads", "0", "'threads' = '0'");
    expect_bad_param(iface, "isa", "sse9", "sse9");
    Instance ok(iface, {});
    CHECK(ok.status == BASALT_OK);
}

TEST_CASE("backend-cpu computes on wrapped host memory and refuses to write into it", "[backend-ops]") {
    const basalt_backend_iface* iface = cpu_iface();
    Instance inst(iface, {{"threads", "2"}});
    REQUIRE(inst.status == BASALT_OK);
    std::vector<float> w(64 * 8);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) - 3.0f;
    std::vector<float> x(64, 0.5f);
    basalt_buffer* wb = nullptr;
    basalt_buffer* io = nullptr;
    REQUIRE(iface->buffer_wrap_host(inst.be, w.data(), w.size() * 4, &wb) == BASALT_OK);
    REQUIRE(iface->buffer_alloc(inst.be, 64 * 4 + 8 * 4, BASALT_BUFFER_IO, &io) == BASALT_OK);
    REQUIRE(iface->buffer_write(inst.be, io, 0, x.data(), 64 * 4) == BASALT_OK);
    CHECK(iface->buffer_write(inst.be, wb, 0, x.data(), 4) == BASALT_ERR_INVALID_ARGUMENT);
    RawGraph g;
    const int wt = g.tensor(BASALT_DTYPE_F32, {64, 8}, wb, "w");
    const int xt = g.tensor(BASALT_DTYPE_F32, {64}, io, "x");
    const int ot = g.tensor(BASALT_DTYPE_F32, {8}, io, "out");
    g.ts[static_cast<size_t>(ot)].offset = 64 * 4;
    g.node(BASALT_OP_MATMUL, "wrapped", ot, {wt, xt});
    REQUIRE(iface->graph_compute(inst.be, g.graph()) == BASALT_OK);
    check_half_matvec(iface, inst.be, io, w);
    // A graph writing into the wrapped buffer fails naming the node.
    g.node(BASALT_OP_SCALE, "writes.weights", wt, {wt});
    basalt::clear_plugin_error();
    CHECK(iface->graph_compute(inst.be, g.graph()) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(plugin_message(), Catch::Matchers::Contains("writes.weights"));
    iface->buffer_free(inst.be, wb);
    iface->buffer_free(inst.be, io);
}

namespace {

// Resident bytes of the mapping that starts at `base` (/proc/self/smaps), or -1 when there is none.
int64_t resident_bytes(const void* base) {
    std::FILE* f = std::fopen("/proc/self/smaps", "r");
    REQUIRE(f != nullptr);
    char line[512];
    bool mine = false;
    int64_t kb = -1;
    const auto want = reinterpret_cast<uintptr_t>(base);
    while (std::fgets(line, sizeof line, f) != nullptr) {
        const char c = line[0];
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {  // a mapping header: "start-end perms ..."
            mine = std::strtoull(line, nullptr, 16) == want;
        } else if (mine && std::strncmp(line, "Rss:", 4) == 0) {
            kb = std::strtoll(line + 4, nullptr, 10);
        }
    }
    std::fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

}  // namespace

TEST_CASE("backend-cpu: weights of a wrapped file it repacked leave the process's resident pages", "[backend-ops]") {
    // A 4096 x 576 Q8_0 matrix (2.4 MiB) in a file, mapped read-only and private as the host maps a model.
    const int64_t k = 576, n = 4096;
    const auto row = static_cast<size_t>(k / 32 * 34);
    std::vector<uint8_t> bytes(row * static_cast<size_t>(n));
    Rng rng(77);
    for (size_t b = 0; b < bytes.size(); b += 34) {
        bytes[b] = 0x00;
        bytes[b + 1] = 0x2c;  // scale 1/16 (F16)
        for (size_t j = 2; j < 34; ++j) bytes[b + j] = static_cast<uint8_t>(static_cast<int>(rng() % 31) - 15);
    }
    char path[] = "/tmp/basalt-wrap-file-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    void* map = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    ::unlink(path);
    REQUIRE(map != MAP_FAILED);

    const basalt_backend_iface* iface = cpu_iface();
    REQUIRE(iface->struct_size >= offsetof(basalt_backend_iface, buffer_wrap_file) + sizeof(void*));
    REQUIRE(iface->buffer_wrap_file != nullptr);
    auto run = [&](const char* repack, bool file, int times) {
        Instance inst(iface, {{"threads", "2"}, {"repack", repack}});
        REQUIRE(inst.status == BASALT_OK);
        basalt_buffer* wb = nullptr;
        basalt_buffer* io = nullptr;
        REQUIRE((file ? iface->buffer_wrap_file : iface->buffer_wrap_host)(inst.be, map, bytes.size(), &wb) ==
                BASALT_OK);
        REQUIRE(iface->buffer_alloc(inst.be, static_cast<uint64_t>(4 * (k + n)), BASALT_BUFFER_IO, &io) == BASALT_OK);
        std::vector<float> x(static_cast<size_t>(k));
        for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
        REQUIRE(iface->buffer_write(inst.be, io, 0, x.data(), x.size() * 4) == BASALT_OK);
        RawGraph g;
        const int wt = g.tensor(BASALT_DTYPE_Q8_0, {k, n}, wb, "w");
        const int xt = g.tensor(BASALT_DTYPE_F32, {k}, io, "x");
        const int ot = g.tensor(BASALT_DTYPE_F32, {n}, io, "out");
        g.ts[static_cast<size_t>(ot)].offset = static_cast<uint64_t>(4 * k);
        g.node(BASALT_OP_MATMUL, "file.matmul", ot, {wt, xt});
        for (int i = 0; i < times; ++i) REQUIRE(iface->graph_compute(inst.be, g.graph()) == BASALT_OK);
        std::vector<float> out(static_cast<size_t>(n));
        REQUIRE(iface->buffer_read(inst.be, io, static_cast<uint64_t>(4 * k), out.data(), out.size() * 4) == BASALT_OK);
        iface->buffer_free(inst.be, wb);
        iface->buffer_free(inst.be, io);
        return std::make_pair(out, resident_bytes(map));
    };
    const auto [rows_out, rows_resident] = run("0", true, 2);  // row kernels read the mapping every step
    CHECK(rows_resident >= static_cast<int64_t>(bytes.size()) - 8192);
    const auto [host_out, host_resident] = run("1", false, 2);  // wrapped as plain host memory: never dropped
    CHECK(host_resident >= static_cast<int64_t>(bytes.size()) - 8192);
    const auto [file_out, file_resident] =
        run("1", true, 3);  // packed, then its pages dropped; later runs use the copy
    CHECK(file_out == rows_out);
    CHECK(host_out == rows_out);
    if (__builtin_cpu_supports("avx512vnni")) {  // the only ISA that repacks
        CHECK(file_resident <= 8192);            // at most the pages at the ends
    } else {
        WARN("no AVX-512 VNNI: Q8_0 weights are not repacked here, so nothing is released");
    }
    // A dropped page reads back unchanged.
    CHECK(std::memcmp(map, bytes.data(), bytes.size()) == 0);
    ::munmap(map, bytes.size());
}

TEST_CASE("malformed graphs fail with the node's name, never crash", "[backend-ops]") {
    const basalt_backend_iface* iface = cpu_iface();
    Instance inst(iface, {{"threads", "2"}});
    REQUIRE(inst.status == BASALT_OK);
    basalt_buffer* buf = nullptr;
    REQUIRE(iface->buffer_alloc(inst.be, 1 << 16, BASALT_BUFFER_IO, &buf) == BASALT_OK);
    std::vector<uint8_t> zeros(1 << 16, 0);
    REQUIRE(iface->buffer_write(inst.be, buf, 0, zeros.data(), zeros.size()) == BASALT_OK);

    struct Bad {
        const char* what;
        basalt_status status;
        const char* needle;
        std::function<void(RawGraph&)> build;
    };
    const std::vector<Bad> bad = {
        {"K mismatch", BASALT_ERR_INVALID_ARGUMENT, "K = 64",
         [&](RawGraph& g) {
             g.node(BASALT_OP_MATMUL, "blk.0.bad", g.tensor(BASALT_DTYPE_F32, {8}, buf, "o"),
                    {g.tensor(BASALT_DTYPE_F32, {64, 8}, buf, "w"), g.tensor(BASALT_DTYPE_F32, {32}, buf, "x")});
         }},
        {"unsupported weight type", BASALT_ERR_UNSUPPORTED, "i32",
         [&](RawGraph& g) {
             g.node(BASALT_OP_MATMUL, "blk.0.bad", g.tensor(BASALT_DTYPE_F32, {8}, buf, "o"),
                    {g.tensor(BASALT_DTYPE_I32, {64, 8}, buf, "w"), g.tensor(BASALT_DTYPE_F32, {64}, buf, "x")});
         }},
        {"input index out of range", BASALT_ERR_INVALID_ARGUMENT, "tensor index 7",
         [&](RawGraph& g) { g.node(BASALT_OP_SILU, "blk.0.bad", g.tensor(BASALT_DTYPE_F32, {8}, buf, "o"), {7}); }},
        {"wrong input count", BASALT_ERR_INVALID_ARGUMENT, "inputs",
         [&](RawGraph& g) {
             const int t = g.tensor(BASALT_DTYPE_F32, {8}, buf, "o");
             g.node(BASALT_OP_ADD, "blk.0.bad", t, {t});
         }},
        {"unknown op", BASALT_ERR_UNSUPPORTED, "op 99",
         [&](RawGraph& g) {
             const int t = g.tensor(BASALT_DTYPE_F32, {8}, buf, "o");
             g.node(99, "blk.0.bad", t, {t});
         }},
        {"tensor past its buffer", BASALT_ERR_INVALID_ARGUMENT, "exceeds",
         [&](RawGraph& g) {
             const int t = g.tensor(BASALT_DTYPE_F32, {8}, buf, "o");
             const int x = g.tensor(BASALT_DTYPE_F32, {1024, 1024}, buf, "huge");
             g.node(BASALT_OP_SILU, "blk.0.bad", t, {x});
         }},
        {"misaligned offset", BASALT_ERR_INVALID_ARGUMENT, "offset",
         [&](RawGraph& g) {
             const int t = g.tensor(BASALT_DTYPE_F32, {8}, buf, "o");
             const int x = g.tensor(BASALT_DTYPE_F32, {8}, buf, "x");
             g.ts[static_cast<size_t>(x)].offset = 3;
             g.node(BASALT_OP_SILU, "blk.0.bad", t, {x});
         }},
        {"foreign buffer", BASALT_ERR_INVALID_ARGUMENT, "does not own",
         [&](RawGraph& g) {
             static basalt_buffer* fake = reinterpret_cast<basalt_buffer*>(&zeros);
             const int t = g.tensor(BASALT_DTYPE_F32, {8}, buf, "o");
             g.node(BASALT_OP_SILU, "blk.0.bad", t, {g.tensor(BASALT_DTYPE_F32, {8}, fake, "x")});
         }},
        {"intermediate read before written", BASALT_ERR_INVALID_ARGUMENT, "before any node writes it",
         [&](RawGraph& g) {
             const int t = g.tensor(BASALT_DTYPE_F32, {8}, buf, "o");
             g.node(BASALT_OP_SILU, "blk.0.bad", t, {g.tensor(BASALT_DTYPE_F32, {8}, nullptr, "ghost")});
         }},
        {"row id out of range", BASALT_ERR_INVALID_ARGUMENT, "row id",
         [&](RawGraph& g) {
             const int o = g.tensor(BASALT_DTYPE_F32, {16, 1}, buf, "o");
             const int ids = g.tensor(BASALT_DTYPE_I32, {1}, buf, "ids");
             g.ts[static_cast<size_t>(ids)].offset = 4096;  // points at 0x7fffffff written below
             g.node(BASALT_OP_GET_ROWS, "blk.0.bad", o, {g.tensor(BASALT_DTYPE_F32, {16, 4}, buf, "table"), ids});
         }},
        {"quantized rows not whole blocks", BASALT_ERR_INVALID_ARGUMENT, "block",
         [&](RawGraph& g) {
             const int o = g.tensor(BASALT_DTYPE_F32, {8}, buf, "o");
             const int w = g.tensor(BASALT_DTYPE_Q8_0, {64, 8}, buf, "w");
             g.ts[static_cast<size_t>(w)].ne[0] = 48;
             g.node(BASALT_OP_MATMUL, "blk.0.bad", o, {w, g.tensor(BASALT_DTYPE_F32, {48}, buf, "x")});
         }},
        {"attention slot past the cache", BASALT_ERR_INVALID_ARGUMENT, "slot",
         [&](RawGraph& g) {
             const int q = g.tensor(BASALT_DTYPE_F32, {32, 2, 1}, buf, "q");
             const int k = g.tensor(BASALT_DTYPE_F32, {32, 4}, buf, "k");
             const int v = g.tensor(BASALT_DTYPE_F32, {32, 4}, buf, "v");
             const int l = g.tensor(BASALT_DTYPE_I32, {2, 1}, buf, "lists");
             g.ts[static_cast<size_t>(l)].offset = 4096;  // slot 0x7fffffff
             const int qt = g.tensor(BASALT_DTYPE_I32, {2, 1}, buf, "queries");
             g.node(BASALT_OP_ATTENTION, "blk.0.bad", g.tensor(BASALT_DTYPE_F32, {64, 1}, buf, "o"), {q, k, v, l, qt});
         }},
    };
    const int32_t big = 0x7fffffff;
    REQUIRE(iface->buffer_write(inst.be, buf, 4096, &big, 4) == BASALT_OK);
    for (const auto& b : bad) {
        SECTION(b.what) {
            RawGraph g;
            b.build(g);
            basalt::clear_plugin_error();
            CHECK(iface->graph_compute(inst.be, g.graph()) == b.status);
            const std::string msg = plugin_message();
            CHECK_THAT(msg, Catch::Matchers::Contains("blk.0.bad"));
            CHECK_THAT(msg, Catch::Matchers::Contains(b.needle));
            int32_t ok = 1;
            const basalt_status st = iface->supports_node(inst.be, g.graph(), 0, &ok);
            if (b.status == BASALT_ERR_UNSUPPORTED) {
                CHECK(st == BASALT_OK);
                CHECK(ok == 0);
            }
        }
    }
    iface->buffer_free(inst.be, buf);
}

// ---------------------------------------------------------------------------------------------------------
// The Vulkan column: every case of the table on the Vulkan backend (lavapipe in CI), against the same
// double-precision reference and tolerance. Vulkan computes with F32 activations (no activation quantization),
// so it is not compared bit-for-bit with the CPU. A case it does not support fails unless it is listed in
// kVulkanUnsupported (the declared gap, printed by the test below); a listed case that runs fails too, so the list
// stays exact.

namespace {

// Weight types without Vulkan kernels yet: their MATMUL and GET_ROWS cases (none now; list a type's table name,
// e.g. "q2_K", to declare a gap).
const std::vector<std::string> kVulkanUnsupported = {};

// K/V cache types and features without Vulkan shaders yet (declared gap of ATTENTION / KV_WRITE cases): the
// KIVI types and the residual window are CPU-only so far; each is refused naming the backend and the type.
const std::vector<std::string> kVulkanKvUnsupported = {"kivi_t8", "kivi_t4", "kivi_t2", "kivi_c8",
                                                       "kivi_c4", "kivi_c2", "residual"};

// Ops without Vulkan shaders yet: all their cases (none now; list an op's name, e.g. "TANH", to declare a gap).
// The Vulkan op table is generated from ops.def, so such an op must still be refused as unsupported, naming the
// node and the op.
const std::vector<std::string> kVulkanOpsUnsupported = {};

bool vulkan_op_gap(const Case& c) {
    return std::any_of(kVulkanOpsUnsupported.begin(), kVulkanOpsUnsupported.end(),
                       [&](const std::string& op) { return c.name.rfind(op + " ", 0) == 0; });
}

// Whether a case of an op in kVulkanOpsUnsupported was refused as unsupported, naming the op.
bool vulkan_op_refused(const Case& c, const RunResult& r) {
    const std::string op = c.name.substr(0, c.name.find(' '));
    return r.outcome == RunResult::Unsupported && r.message.find("(" + op + ")") != std::string::npos;
}

bool vulkan_gap_case(const Case& c, const std::string& name) {
    if (std::find(kVulkanOpsUnsupported.begin(), kVulkanOpsUnsupported.end(), name) != kVulkanOpsUnsupported.end()) {
        return c.name.rfind(name + " ", 0) == 0;
    }
    if (std::find(kVulkanKvUnsupported.begin(), kVulkanKvUnsupported.end(), name) != kVulkanKvUnsupported.end()) {
        const bool kv_op = c.name.rfind("ATTENTION ", 0) == 0 || c.name.rfind("KV_WRITE ", 0) == 0;
        return kv_op && (c.name.find(" " + name) != std::string::npos);
    }
    return c.name.rfind("MATMUL " + name + " ", 0) == 0 || c.name.rfind("GET_ROWS " + name + " ", 0) == 0;
}

bool vulkan_declared_unsupported(const Case& c) {
    if (vulkan_op_gap(c)) return true;
    for (const std::string& name : kVulkanUnsupported) {
        if (vulkan_gap_case(c, name)) return true;
    }
    for (const std::string& name : kVulkanKvUnsupported) {
        if (vulkan_gap_case(c, name)) return true;
    }
    return false;
}

const basalt_backend_iface* vulkan_iface() {
    auto it = plugins().ifaces.find("vulkan");
    return it == plugins().ifaces.end() ? nullptr : it->second;
}

}  // namespace

TEST_CASE("every op case matches the reference on the Vulkan backend", "[backend-ops][.vulkan]") {
    const basalt_backend_iface* iface = vulkan_iface();
    if (iface == nullptr) {
        WARN("backend-vulkan is not built: Vulkan column not run");
        return;
    }
    Instance inst(iface, {});
    if (inst.status == BASALT_ERR_UNSUPPORTED) {
        WARN("Vulkan unavailable here: " << inst.message);
        return;
    }
    INFO(inst.message);
    REQUIRE(inst.status == BASALT_OK);
    const auto cases = all_cases();
    int passed = 0;
    int failed = 0;
    int gap = 0;
    double worst = 0;
    std::string worst_case;
    for (const Case& c : cases) {
        RunResult r = run_case(iface, inst.be, c);
        const bool declared = vulkan_declared_unsupported(c);
        if (r.outcome == RunResult::Unsupported) {
            if (declared) {
                ++gap;
            } else {
                ++failed;
                FAIL_CHECK("vulkan: " << c.name << ": unsupported: " << r.message);
            }
            continue;
        }
        if (declared) FAIL_CHECK("vulkan: " << c.name << " runs but is listed in kVulkanUnsupported");
        if (r.outcome == RunResult::Failed) {
            ++failed;
            FAIL_CHECK("vulkan: " << c.name << ": " << r.message);
            continue;
        }
        const double e = nmse(r.out, c.expected);
        if (c.tol > 0 && e / c.tol > worst) {
            worst = e / c.tol;
            worst_case = c.name;
        }
        if (e <= c.tol) {
            ++passed;
        } else {
            ++failed;
            FAIL_CHECK("vulkan: " << c.name << ": NMSE " << e << " (tolerance " << c.tol << ")");
        }
    }
    std::printf(
        "[backend-ops] vulkan           %4d passed, %d failed, %d declared unsupported (of %zu cases); "
        "worst NMSE/tolerance %.3g (%s)\n",
        passed, failed, gap, cases.size(), worst, worst_case.c_str());
}

// GATED_DELTA's two forms on Vulkan: every case with a chunk hint > 1 or 0 (the chunked form at 16 tokens and more)
// against its "chunk 1" twin (the recurrent form on equal inputs), and both against the float64 recurrence.
TEST_CASE("Vulkan GATED_DELTA: the chunked form equals the recurrent form", "[backend-ops][.vulkan]") {
    const basalt_backend_iface* iface = vulkan_iface();
    if (iface == nullptr) return;
    Instance inst(iface, {});
    if (inst.status == BASALT_ERR_UNSUPPORTED) return;
    REQUIRE(inst.status == BASALT_OK);
    const auto cases = all_cases();
    const std::string recurrent_tag = " chunk 1";
    size_t pairs = 0;
    for (const Case& r : cases) {
        const size_t at = r.name.find(recurrent_tag);
        if (r.name.rfind("GATED_DELTA ", 0) != 0 || at == std::string::npos) continue;
        const std::string head = r.name.substr(0, at + 7), tail = r.name.substr(at + recurrent_tag.size());
        const RunResult rr = run_case(iface, inst.be, r);
        REQUIRE(rr.outcome == RunResult::Ok);
        for (const Case& c : cases) {
            if (&c == &r || c.name.rfind(head, 0) != 0) continue;
            const std::string hint = c.name.substr(head.size(), c.name.size() - head.size() - tail.size());
            if (hint.empty() || hint.find(' ') != std::string::npos ||
                c.name.substr(head.size() + hint.size()) != tail) {
                continue;
            }
            INFO(c.name);
            const RunResult rc = run_case(iface, inst.be, c);
            REQUIRE(rc.outcome == RunResult::Ok);
            const double chunked = nmse(rc.out, c.expected), recurrent = nmse(rr.out, r.expected);
            const double between = nmse(rc.out, rr.out);
            std::printf("[backend-ops] vulkan %s: NMSE vs float64 %.3g (recurrent %.3g), vs the recurrent form %.3g\n",
                        c.name.c_str(), chunked, recurrent, between);
            CHECK(chunked <= c.tol);
            CHECK(between <= 1e-11);
            ++pairs;
        }
    }
    CHECK(pairs == 8);
}

TEST_CASE("Vulkan GATED_DELTA gives each sequence the floats it gets alone, whatever shares its node",
          "[backend-ops][.vulkan]") {
    const basalt_backend_iface* iface = vulkan_iface();
    if (iface == nullptr) return;
    Instance inst(iface, {});
    if (inst.status == BASALT_ERR_UNSUPPORTED) return;
    REQUIRE(inst.status == BASALT_OK);
    check_delta_batch_invariance(iface, inst.be, "vulkan");
}

TEST_CASE("the Vulkan backend's declared gap: these cases fail as unsupported, naming the node",
          "[backend-ops][.vulkan]") {
    const basalt_backend_iface* iface = vulkan_iface();
    if (iface == nullptr) return;
    Instance inst(iface, {});
    if (inst.status == BASALT_ERR_UNSUPPORTED) return;
    REQUIRE(inst.status == BASALT_OK);
    size_t n = 0;
    const auto cases = all_cases();
    for (const Case& c : cases) {
        if (!vulkan_declared_unsupported(c)) continue;
        ++n;
        RunResult r = run_case(iface, inst.be, c);
        std::printf("[backend-ops]   declared unsupported on vulkan: %s\n", c.name.c_str());
        if (vulkan_op_gap(c)) {
            CHECK(vulkan_op_refused(c, r));
        } else {
            CHECK(r.outcome == RunResult::Unsupported);
        }
        CHECK_THAT(r.message, Catch::Matchers::Contains("node0"));
    }
    // Every listed type names cases of the table (a stale entry is an error); an empty list is no gap.
    for (const auto* list : {&kVulkanUnsupported, &kVulkanKvUnsupported, &kVulkanOpsUnsupported}) {
        for (const std::string& name : *list) {
            INFO("declared Vulkan gap entry " << name);
            CHECK(std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return vulkan_gap_case(c, name); }));
        }
    }
    std::printf("[backend-ops]   vulkan declared gap: %zu case(s) of %zu type(s) and %zu op(s)\n", n,
                kVulkanUnsupported.size() + kVulkanKvUnsupported.size(), kVulkanOpsUnsupported.size());
}

TEST_CASE("backend-vulkan describes its devices, parses its parameters and splits big buffers",
          "[backend-ops][.vulkan-split]") {
    const basalt_backend_iface* iface = vulkan_iface();
    if (iface == nullptr) return;
    size_t n = 0;
    REQUIRE(iface->device_count(basalt::host_services(), &n) == BASALT_OK);
    if (n == 0) {
        CHECK_THAT(plugin_message(), Catch::Matchers::Contains("mesa-vulkan-drivers"));
        Instance none(iface, {});
        CHECK(none.status == BASALT_ERR_UNSUPPORTED);
        return;
    }
    basalt_device_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(iface->device_info(0, &info) == BASALT_OK);
    CHECK(std::strlen(info.name) > 0);
    CHECK(iface->device_info(n, &info) == BASALT_ERR_NOT_FOUND);
    Instance bad_key(iface, {{"devize", "0"}});
    CHECK(bad_key.status == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(bad_key.message, Catch::Matchers::Contains("devize"));
    Instance bad_dev(iface, {{"device", std::to_string(n)}});
    CHECK(bad_dev.status == BASALT_ERR_NOT_FOUND);
    Instance inst(iface, {{"device", "0"}});
    REQUIRE(inst.status == BASALT_OK);
    // A weights buffer larger than one allocation chunk (BASALT_VK_MAX_CHUNK makes chunks small in the
    // dedicated CTest run): writes and reads across chunk boundaries round-trip, a matmul on a tensor inside it
    // is right.
    const uint64_t size = 3u << 20;
    basalt_buffer* big = nullptr;
    REQUIRE(iface->buffer_alloc(inst.be, size, BASALT_BUFFER_WEIGHTS, &big) == BASALT_OK);
    std::vector<uint8_t> data(size);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 131) >> 7);
    REQUIRE(iface->buffer_write(inst.be, big, 0, data.data(), data.size()) == BASALT_OK);
    std::vector<uint8_t> back(size);
    REQUIRE(iface->buffer_read(inst.be, big, 0, back.data(), back.size()) == BASALT_OK);
    CHECK(back == data);
    std::vector<float> w(64 * 8);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) - 3.0f;
    const uint64_t woff = size - w.size() * 4 - 4096;
    REQUIRE(iface->buffer_write(inst.be, big, woff, w.data(), w.size() * 4) == BASALT_OK);
    basalt_buffer* io = nullptr;
    REQUIRE(iface->buffer_alloc(inst.be, 64 * 4 + 8 * 4, BASALT_BUFFER_IO, &io) == BASALT_OK);
    std::vector<float> x(64, 0.5f);
    REQUIRE(iface->buffer_write(inst.be, io, 0, x.data(), 64 * 4) == BASALT_OK);
    RawGraph g;
    const int wt = g.tensor(BASALT_DTYPE_F32, {64, 8}, big, "w");
    g.ts[static_cast<size_t>(wt)].offset = woff;
    const int xt = g.tensor(BASALT_DTYPE_F32, {64}, io, "x");
    const int ot = g.tensor(BASALT_DTYPE_F32, {8}, io, "out");
    g.ts[static_cast<size_t>(ot)].offset = 64 * 4;
    g.node(BASALT_OP_MATMUL, "in.a.chunk", ot, {wt, xt});
    basalt::clear_plugin_error();
    REQUIRE(iface->graph_compute(inst.be, g.graph()) == BASALT_OK);
    check_half_matvec(iface, inst.be, io, w);
    // A weight larger than one binding (BASALT_VK_MAX_RANGE in that run): MATMUL and GET_ROWS read it in row windows.
    {
        const int64_t k = 256;
        const int64_t rows_n = 96;
        std::vector<float> w2(static_cast<size_t>(k * rows_n));
        for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<float>((i * 37) % 19) - 9.0f;
        const uint64_t off2 = 1u << 20;
        REQUIRE(iface->buffer_write(inst.be, big, off2, w2.data(), w2.size() * 4) == BASALT_OK);
        basalt_buffer* io2 = nullptr;
        const std::vector<int32_t> ids{95, 0, 50};
        std::vector<float> x2(static_cast<size_t>(k * 3));
        for (size_t i = 0; i < x2.size(); ++i) x2[i] = static_cast<float>(i % 5) * 0.25f;
        const uint64_t ids_off = x2.size() * 4;
        const uint64_t mm_off = ids_off + 16;
        const uint64_t gr_off = mm_off + static_cast<uint64_t>(rows_n * 3 * 4);
        REQUIRE(iface->buffer_alloc(inst.be, gr_off + static_cast<uint64_t>(k * 3 * 4), BASALT_BUFFER_IO, &io2) ==
                BASALT_OK);
        REQUIRE(iface->buffer_write(inst.be, io2, 0, x2.data(), x2.size() * 4) == BASALT_OK);
        REQUIRE(iface->buffer_write(inst.be, io2, ids_off, ids.data(), 12) == BASALT_OK);
        RawGraph g2;
        const int w2t = g2.tensor(BASALT_DTYPE_F32, {k, rows_n}, big, "w2");
        g2.ts[static_cast<size_t>(w2t)].offset = off2;
        const int x2t = g2.tensor(BASALT_DTYPE_F32, {k, 3}, io2, "x2");
        const int idt = g2.tensor(BASALT_DTYPE_I32, {3}, io2, "ids");
        g2.ts[static_cast<size_t>(idt)].offset = ids_off;
        const int mmt = g2.tensor(BASALT_DTYPE_F32, {rows_n, 3}, io2, "mm");
        g2.ts[static_cast<size_t>(mmt)].offset = mm_off;
        const int grt = g2.tensor(BASALT_DTYPE_F32, {k, 3}, io2, "rows");
        g2.ts[static_cast<size_t>(grt)].offset = gr_off;
        g2.node(BASALT_OP_MATMUL, "windowed.matmul", mmt, {w2t, x2t});
        g2.node(BASALT_OP_GET_ROWS, "windowed.get_rows", grt, {w2t, idt});
        basalt::clear_plugin_error();
        REQUIRE(iface->graph_compute(inst.be, g2.graph()) == BASALT_OK);
        std::vector<float> mm(static_cast<size_t>(rows_n * 3));
        std::vector<float> rows(static_cast<size_t>(k * 3));
        REQUIRE(iface->buffer_read(inst.be, io2, mm_off, mm.data(), mm.size() * 4) == BASALT_OK);
        REQUIRE(iface->buffer_read(inst.be, io2, gr_off, rows.data(), rows.size() * 4) == BASALT_OK);
        for (int64_t t = 0; t < 3; ++t) {
            for (int64_t j = 0; j < rows_n; ++j) {
                double s = 0;
                for (int64_t l = 0; l < k; ++l)
                    s += double{w2[static_cast<size_t>(j * k + l)]} * x2[static_cast<size_t>(t * k + l)];
                CHECK(mm[static_cast<size_t>(t * rows_n + j)] == Approx(s).margin(1e-3));
            }
            for (int64_t l = 0; l < k; ++l) {
                CHECK(rows[static_cast<size_t>(t * k + l)] ==
                      w2[static_cast<size_t>(ids[static_cast<size_t>(t)] * k + l)]);
            }
        }
        iface->buffer_free(inst.be, io2);
    }
    // Unknown ops and types fail naming the node, never fall back.
    g.node(99, "blk.0.unknown", ot, {xt});
    basalt::clear_plugin_error();
    CHECK(iface->graph_compute(inst.be, g.graph()) == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(plugin_message(), Catch::Matchers::Contains("blk.0.unknown"));
    iface->buffer_free(inst.be, big);
    iface->buffer_free(inst.be, io);
}
