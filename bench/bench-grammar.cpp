// bench-grammar: the grammar sampler's mask computation per token. For a model's vocabulary (token pieces through
// the C API) and a synthetic large one, and for JSON Schemas of several shapes: the compile time, then a
// seeded random walk through the grammar (each step picks an allowed token) timing the mask of every step both
// as the sampler sees it (cached per parse state) and cold (the trie walk alone). Prints mean and p99 in
// microseconds. bench-grammar MODEL.gguf [STEPS]
#include <basalt/basalt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "grammar-source.hpp"
#include "matcher.hpp"
#include "token-trie.hpp"

namespace g = basalt::grammar;
using Clock = std::chrono::steady_clock;

namespace {

struct Vocab {
    std::vector<std::string> texts;
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    std::vector<uint32_t> flags;
    basalt_vocab_view view{};

    void finish(uint64_t fingerprint) {
        for (const auto& t : texts) {
            ptrs.push_back(t.data());
            lens.push_back(t.size());
        }
        view.struct_size = sizeof(view);
        view.n_tokens = texts.size();
        view.texts = ptrs.data();
        view.text_lens = lens.data();
        view.token_flags = flags.data();
        view.fingerprint = fingerprint;
    }
};

bool model_vocab(const char* path, Vocab& v) {
    basalt_model* m = nullptr;
    if (basalt_model_load(nullptr, path, nullptr, &m) != BASALT_OK) {
        std::fprintf(stderr, "%s\n", basalt_last_error());
        return false;
    }
    basalt_special_tokens sp{};
    sp.struct_size = sizeof(sp);
    basalt_model_special_tokens(m, &sp);
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    basalt_model_describe(m, &info);
    const auto n = static_cast<int32_t>(info.n_vocab);
    for (int32_t i = 0; i < n; ++i) {
        char buf[512];
        size_t len = 0;
        basalt_token_to_piece(m, i, 0, buf, sizeof(buf), &len);
        v.texts.emplace_back(buf, len);
        v.flags.push_back(i == sp.eos ? BASALT_VOCAB_TOKEN_EOG : 0);
    }
    basalt_model_free(m);
    v.finish(1);
    return true;
}

// n tokens: every byte, then random pieces of 2..12 characters from a JSON-ish and multilingual alphabet.
void synthetic_vocab(size_t n, Vocab& v) {
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
    v.finish(2);
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

void run(const char* vocab_name, const Vocab& v, const char* schema_name, const std::string& schema, int steps) {
    const auto t0 = Clock::now();
    auto grammar = std::make_shared<const g::Grammar>(g::compile_source("json_schema", schema));
    const double compile_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    auto trie = g::TokenTrie::shared(v.view);
    g::Matcher m(grammar, trie);
    std::mt19937_64 rng(11);
    std::vector<double> hot, cold;
    std::vector<uint64_t> scratch;
    g::State s = m.initial();
    for (int i = 0; i < steps; ++i) {
        const auto a = Clock::now();
        std::vector<int32_t> allowed;
        m.with_mask(s, [&](const std::vector<uint64_t>& words) {
            for (size_t w = 0; w < words.size(); ++w) {
                for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1)
                    allowed.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
            }
        });
        hot.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
        const auto b = Clock::now();
        m.compute_mask_uncached(s, scratch);
        cold.push_back(std::chrono::duration<double, std::micro>(Clock::now() - b).count());
        // Prefer a non-EOG token so the walk goes deep (end only when nothing else is allowed).
        std::vector<int32_t> text;
        for (int32_t t : allowed) {
            if (!trie->is_eog[static_cast<size_t>(t)]) text.push_back(t);
        }
        if (text.empty()) {  // complete: start over
            s = m.initial();
            continue;
        }
        g::State next;
        m.accept_token(s, text[rng() % text.size()], next);
        s = next;
    }
    const Figures h = summarise(hot), c = summarise(cold);
    std::printf("| %s (%zu) | %s | %.2f | %.1f | %.1f | %.1f | %.1f |\n", vocab_name, v.view.n_tokens, schema_name,
                compile_ms, h.mean, h.p99, c.mean, c.p99);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench-grammar MODEL.gguf [STEPS]\n");
        return 2;
    }
    const int steps = argc > 2 ? std::atoi(argv[2]) : 300;
    const std::pair<const char*, std::string> schemas[] = {
        {"flat object",
         R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"}},"required":["name","age"],"additionalProperties":false})"},
        {"nested + arrays",
         R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":999},"tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":4}},"required":["id","tags"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false})"},
        {"enum + formats",
         R"({"type":"object","properties":{"kind":{"enum":["alpha","beta","gamma"]},"when":{"type":"string","format":"date-time"},"uid":{"type":"string","format":"uuid"}},"required":["kind","when","uid"],"additionalProperties":false})"},
        {"any JSON", R"({})"},
    };
    Vocab model;
    if (!model_vocab(argv[1], model)) return 1;
    Vocab big;
    synthetic_vocab(262144, big);
    std::printf(
        "| vocabulary | schema | compile ms | mask us mean | p99 | cold walk us mean | p99 "
        "|\n|---|---|---|---|---|---|---|\n");
    for (const auto& [name, schema] : schemas) run("model", model, name, schema, steps);
    for (const auto& [name, schema] : schemas) run("synthetic", big, name, schema, steps);
    return 0;
}
