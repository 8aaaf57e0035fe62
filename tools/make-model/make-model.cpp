// make-model: writes a random-weight llama-architecture GGUF at a real model's shape, for benchmarks
// (`basalt bench`) that anyone can reproduce without downloading a model.
//   make-model --shape smollm2-135m --type q8_0 -o perf-smollm2-135m-q8_0.gguf [--seed 1]
// Shapes: SmolLM2-135M and -360M (tied embeddings), TinyLlama-1.1B (its own output matrix), and a tiny one for tests.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "model/dtype.hpp"
#include "model/gguf.hpp"
#include "model/quantize-model.hpp"
#include "model/quantize.hpp"
#include "support/error.hpp"

namespace {

struct Shape {
    const char* name;
    uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
    float rope_base;
    bool tied;
};

const Shape kShapes[] = {
    {"smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000.f, true},
    {"smollm2-360m", 960, 32, 15, 5, 2560, 49152, 8192, 100000.f, true},
    {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.f, false},
    {"tiny", 64, 2, 4, 2, 192, 512, 256, 10000.f, false},
};

// splitmix64 + Box-Muller: reproducible normal samples independent of the platform's <random>.
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    float normal() {
        const double u1 = (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0;
        const double u2 = static_cast<double>(next() >> 11) / 9007199254740992.0;
        return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }
};

void add(basalt::gguf::Writer& w, Rng& rng, const std::string& name, std::vector<int64_t> ne, basalt_dtype type,
         float std_dev, bool ones = false) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = ones ? 1.f : std_dev * rng.normal();
    const bool matrix = ne.size() >= 2 && basalt::is_quantizable_weight(name, static_cast<uint32_t>(ne.size()));
    const basalt_dtype t = matrix ? type : BASALT_DTYPE_F32;
    std::vector<uint8_t> bytes(*basalt::dtype_bytes(t, static_cast<uint64_t>(n)));
    const int64_t row = ne[0];
    const uint64_t row_bytes = *basalt::dtype_bytes(t, static_cast<uint64_t>(row));
    for (int64_t r = 0; r < n / row; ++r) {
        basalt::quantize_row(t, x.data() + r * row, bytes.data() + row_bytes * static_cast<uint64_t>(r), row);
    }
    w.add_tensor(name, t, ne, bytes.data(), bytes.size());
}

int usage() {
    std::string shapes;
    for (const Shape& s : kShapes) shapes += (shapes.empty() ? "" : "|") + std::string(s.name);
    std::fprintf(stderr,
                 "usage: make-model --shape %s --type f32|f16|bf16|q8_0|q4_0|q4_k|q6_k -o OUT.gguf [--seed N]\n",
                 shapes.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string shape_name = "smollm2-135m", type_name = "q8_0", out;
    uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        if (a == "--shape") {
            shape_name = argv[++i];
        } else if (a == "--type") {
            type_name = argv[++i];
        } else if (a == "-o") {
            out = argv[++i];
        } else if (a == "--seed") {
            const char* v = argv[++i];
            char* end = nullptr;
            errno = 0;
            seed = std::strtoull(v, &end, 10);
            if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
                std::fprintf(stderr, "make-model: error: --seed wants a non-negative integer, not '%s'\n", v);
                return usage();
            }
        } else {
            return usage();
        }
    }
    const Shape* shape = nullptr;
    for (const auto& s : kShapes) {
        if (shape_name == s.name) shape = &s;
    }
    const basalt::DtypeTraits* type = basalt::dtype_from_name(type_name);
    if (shape == nullptr) std::fprintf(stderr, "make-model: error: unknown shape '%s'\n", shape_name.c_str());
    if (type == nullptr) std::fprintf(stderr, "make-model: error: unknown type '%s'\n", type_name.c_str());
    if (out.empty()) std::fprintf(stderr, "make-model: error: no output file (-o OUT.gguf)\n");
    if (shape == nullptr || type == nullptr || out.empty()) return usage();
    try {
        basalt::gguf::Writer w;
        const Shape& s = *shape;
        w.set_string("general.architecture", "llama");
        w.set_string("general.name", std::string("random-") + s.name);
        w.set_u32("llama.context_length", s.n_ctx);
        w.set_u32("llama.embedding_length", s.n_embd);
        w.set_u32("llama.block_count", s.n_layer);
        w.set_u32("llama.feed_forward_length", s.n_ff);
        w.set_u32("llama.attention.head_count", s.n_head);
        w.set_u32("llama.attention.head_count_kv", s.n_head_kv);
        w.set_f32("llama.rope.freq_base", s.rope_base);
        w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
        w.set_u32("llama.vocab_size", s.n_vocab);
        Rng rng{seed};
        const int64_t E = s.n_embd, hd = s.n_embd / s.n_head, kv = hd * s.n_head_kv;
        const auto t = static_cast<basalt_dtype>(type->id);
        add(w, rng, "token_embd.weight", {E, s.n_vocab}, t, 1.0f);
        for (uint32_t il = 0; il < s.n_layer; ++il) {
            const std::string p = "blk." + std::to_string(il) + ".";
            add(w, rng, p + "attn_norm.weight", {E}, t, 0, true);
            add(w, rng, p + "attn_q.weight", {E, E}, t, 0.05f);
            add(w, rng, p + "attn_k.weight", {E, kv}, t, 0.05f);
            add(w, rng, p + "attn_v.weight", {E, kv}, t, 0.05f);
            add(w, rng, p + "attn_output.weight", {E, E}, t, 0.05f);
            add(w, rng, p + "ffn_norm.weight", {E}, t, 0, true);
            add(w, rng, p + "ffn_gate.weight", {E, s.n_ff}, t, 0.05f);
            add(w, rng, p + "ffn_up.weight", {E, s.n_ff}, t, 0.05f);
            add(w, rng, p + "ffn_down.weight", {s.n_ff, E}, t, 0.05f);
        }
        add(w, rng, "output_norm.weight", {E}, t, 0, true);
        if (!s.tied) add(w, rng, "output.weight", {E, s.n_vocab}, t, 0.05f);
        w.write(out);
        std::printf("wrote %s (%s, %s)\n", out.c_str(), s.name, type->name);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make-model: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
