// bench-grammar: the grammar sampler's cost per token. For a vocabulary (any GGUF with a tokenizer: a model or a
// vocab-only file such as bench/make-grammar-vocab.py writes; token texts as the host hands them to the sampler)
// and a synthetic 262k one, and JSON Schemas of several shapes: the compile time, then a seeded random walk
// through the grammar (each step picks an allowed token) timing per step the mask as the sampler sees it (cached
// per parse state, computed on a miss), the mask applied to the whole vocabulary's candidate array (the
// sampler's apply, comparable to llama.cpp's grammar sampler apply), and the mask walk without the mask cache.
// Times are the thread's CPU time (the machine is shared), mean and p99 in microseconds. The user-facing benchmark
// is `basalt bench --mode grammar` (the sampler through the C API); this program times the engine's internals
// (the mask cache's hits and misses apart, the walk without the cache) and converts its walks' schemas for llama.cpp.
//   bench-grammar VOCAB.gguf [STEPS] [WALK_DIR]
//   bench-grammar --gbnf WALK_DIR
// WALK_DIR: also writes each schema's GBNF (<i>.gbnf) and the walk's tokens (<i>.tokens, -1 = restart) there, for
// bench/llama-cpp-grammar.cpp to replay the same steps through llama.cpp's sampler. --gbnf writes <i>.gbnf beside
// each <i>.json (a JSON Schema, as `basalt bench --mode grammar --walk-dir` writes them), for the same replay.
#include <basalt/plugin_sampler.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar-source.hpp"
#include "mask-apply.hpp"
#include "matcher.hpp"
#include "model/gguf.hpp"
#include "token-trie.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocab-view.hpp"

namespace g = basalt::grammar;

namespace {

double cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

struct Synthetic {
    std::vector<std::string> texts;
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    std::vector<uint32_t> flags;
    basalt_vocab_view view{};
};

// n tokens: every byte, then random pieces of 2..12 characters from a JSON-ish and multilingual alphabet.
void synthetic_vocab(size_t n, Synthetic& v) {
    std::mt19937_64 rng(7);
    const std::vector<std::string> alphabet = {"a",
                                               "b",
                                               "c",
                                               "d",
                                               "e",
                                               "i",
                                               "n",
                                               "o",
                                               "r",
                                               "s",
                                               "t",
                                               " ",
                                               "\"",
                                               ":",
                                               ",",
                                               "{",
                                               "}",
                                               "[",
                                               "]",
                                               "0",
                                               "1",
                                               "5",
                                               "9",
                                               "-",
                                               "_",
                                               ".",
                                               "\n",
                                               "\t",
                                               "\xc3\xa9",
                                               "\xe4\xb8\xad",
                                               "\xf0\x9f\x98\x80",
                                               "A",
                                               "Z"};
    v.texts.push_back("");
    v.flags.push_back(BASALT_VOCAB_TOKEN_EOG);
    for (int b = 0; b < 256; ++b) {
        v.texts.emplace_back(1, static_cast<char>(b));
        v.flags.push_back(0);
    }
    while (v.texts.size() < n) {
        std::string s;
        const size_t len = 2 + rng() % 11;
        for (size_t i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
        v.texts.push_back(s);
        v.flags.push_back(0);
    }
    for (const auto& t : v.texts) {
        v.ptrs.push_back(t.data());
        v.lens.push_back(t.size());
    }
    v.view.struct_size = sizeof(v.view);
    v.view.n_tokens = v.texts.size();
    v.view.texts = v.ptrs.data();
    v.view.text_lens = v.lens.data();
    v.view.token_flags = v.flags.data();
    v.view.fingerprint = 2;
}

struct Figures {
    double mean = 0, p99 = 0;
};

Figures summarise(std::vector<double>& us) {
    Figures f;
    if (us.empty()) return f;
    for (double x : us) f.mean += x;
    f.mean /= static_cast<double>(us.size());
    std::sort(us.begin(), us.end());
    f.p99 = us[std::min(us.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(us.size())))];
    return f;
}

void run(const char* vocab_name, const std::shared_ptr<const g::TokenTrie>& trie, int index, const char* schema_name,
         const std::string& schema, int steps, const std::string& walk_dir) {
    const double t0 = cpu_us();
    auto grammar = std::make_shared<const g::Grammar>(g::compile_source("json_schema", schema));
    g::Matcher m(grammar, trie);
    const double compile_ms = (cpu_us() - t0) / 1000;
    std::mt19937_64 rng(11);
    std::vector<double> mask, apply, cold;
    std::vector<uint64_t> scratch;
    const size_t n_vocab = trie->n_vocab;
    std::vector<basalt_token_data> data(n_vocab);
    std::vector<int32_t> walk;
    g::State s = m.initial();
    for (int i = 0; i < steps; ++i) {
        double a = cpu_us();
        m.with_mask(s, [&](const std::vector<uint64_t>& words) { scratch.assign(1, words[0]); });
        mask.push_back(cpu_us() - a);
        for (size_t t = 0; t < data.size(); ++t) data[t] = basalt_token_data{static_cast<int32_t>(t), 0.f, 0.f};
        basalt_candidates c{};
        c.struct_size = sizeof(c);
        c.data = data.data();
        c.size = data.size();
        c.selected = -1;
        a = cpu_us();
        m.with_mask(s, [&](const std::vector<uint64_t>& words) { g::apply_mask(words, n_vocab, c); });
        apply.push_back(mask.back() + cpu_us() - a);  // the cache hit adds a lookup only
        a = cpu_us();
        m.compute_mask_uncached(s, scratch);
        cold.push_back(cpu_us() - a);
        // Prefer a non-EOG token so the walk goes deep (restart when only end-of-generation is left).
        std::vector<int32_t> text;
        for (const basalt_token_data& d : data) {
            if (d.logit == 0.f && trie->is_eog[static_cast<size_t>(d.id)] == 0) text.push_back(d.id);
        }
        if (text.empty()) {
            s = m.initial();
            walk.push_back(-1);
            continue;
        }
        const int32_t pick = text[rng() % text.size()];
        g::State next;
        m.accept_token(s, pick, next);
        s = next;
        walk.push_back(pick);
    }
    const Figures fm = summarise(mask), fa = summarise(apply), fc = summarise(cold);
    std::printf("| %s (%zu) | %s | %.2f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", vocab_name, n_vocab,
                schema_name, compile_ms, fm.mean, fm.p99, fa.mean, fa.p99, fc.mean, fc.p99);
    if (!walk_dir.empty()) {
        std::ofstream(walk_dir + "/" + std::to_string(index) + ".gbnf") << g::source_to_gbnf("json_schema", schema);
        std::ofstream out(walk_dir + "/" + std::to_string(index) + ".tokens");
        for (const int32_t t : walk) out << t << '\n';
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench-grammar VOCAB.gguf [STEPS] [WALK_DIR] | bench-grammar --gbnf WALK_DIR\n");
        return 2;
    }
    if (std::string(argv[1]) == "--gbnf") {
        if (argc < 3) return 2;
        int n = 0;
        for (;; ++n) {
            const std::string base = std::string(argv[2]) + "/" + std::to_string(n);
            std::ifstream in(base + ".json");
            if (!in) break;
            const std::string schema((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            std::ofstream(base + ".gbnf") << g::source_to_gbnf("json_schema", schema);
        }
        std::printf("%d schemas converted\n", n);
        return n > 0 ? 0 : 1;
    }
    const int steps = argc > 2 ? std::atoi(argv[2]) : 300;
    const std::string walk_dir = argc > 3 ? argv[3] : "";
    const std::pair<const char*, std::string> schemas[] = {
        {"flat object",
         R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"}},"required":["name","age"],"additionalProperties":false})"},
        {"nested + arrays",
         R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":999},"tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":4}},"required":["id","tags"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false})"},
        {"enum + formats",
         R"({"type":"object","properties":{"kind":{"enum":["alpha","beta","gamma"]},"when":{"type":"string","format":"date-time"},"uid":{"type":"string","format":"uuid"}},"required":["kind","when","uid"],"additionalProperties":false})"},
        {"any JSON", R"({})"},
    };
    std::unique_ptr<basalt::Tokenizer> tok;
    std::unique_ptr<basalt::VocabView> view;
    try {
        const auto mapped = basalt::gguf::open(argv[1]);
        tok = basalt::Tokenizer::create(mapped.file);
        view = std::make_unique<basalt::VocabView>(*tok);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-grammar: %s\n", e.what());
        return 1;
    }
    Synthetic big;
    synthetic_vocab(262144, big);
    std::printf(
        "| vocabulary | schema | compile ms | mask us mean | p99 | mask + apply us mean | p99 | uncached walk us mean "
        "| p99 |\n|---|---|---|---|---|---|---|---|---|\n");
    // The token trie is built once per vocabulary (when a model is loaded), not per grammar: timed apart.
    double t0 = cpu_us();
    const auto file_trie = g::TokenTrie::build(*view->view());
    const double file_trie_ms = (cpu_us() - t0) / 1000;
    t0 = cpu_us();
    const auto big_trie = g::TokenTrie::build(big.view);
    const double big_trie_ms = (cpu_us() - t0) / 1000;
    int index = 0;
    for (const auto& [name, schema] : schemas) run("file", file_trie, index++, name, schema, steps, walk_dir);
    for (const auto& [name, schema] : schemas) run("synthetic", big_trie, index++, name, schema, steps, "");
    std::printf("\ntoken trie (once per vocabulary): file %.1f ms (%zu nodes), synthetic %.1f ms (%zu nodes)\n",
                file_trie_ms, file_trie->byte.size(), big_trie_ms, big_trie->byte.size());
    return 0;
}
