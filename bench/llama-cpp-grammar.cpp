// llama-cpp-grammar: llama.cpp's grammar sampler on the same work as bench-grammar, for the side-by-side figure
// in docs/structured-output.md. Outside CTest and the CMake build: compiled by hand against the pinned llama.cpp
// (tests/golden/README.md says where it is), like the golden dumper:
//   cache=~/.cache/basalt-llama-cpp
//   g++ -O2 -std=c++17 -I$cache/llama.cpp-v0.5.0/include -I$cache/llama.cpp-v0.5.0/ggml/include \
//       bench/llama-cpp-grammar.cpp $cache/build-v0.5.0/src/libllama.a $cache/build-v0.5.0/ggml/src/libggml.a \
//       $cache/build-v0.5.0/ggml/src/libggml-cpu.a $cache/build-v0.5.0/ggml/src/libggml-base.a \
//       -fopenmp -lpthread -ldl -o /tmp/llama-cpp-grammar
//   llama-cpp-grammar VOCAB.gguf WALK_DIR N [N ...]
// Loads VOCAB.gguf's vocabulary only (vocab_only), then for each walk N that bench-grammar wrote into WALK_DIR
// (N.gbnf: the schema's GBNF; N.tokens: the tokens it accepted, -1 = restart): llama_sampler_init_grammar on the
// GBNF (timed: the compile), then per step llama_sampler_apply on the whole vocabulary's candidate array (as a
// sampler chain hands it over: every token, in id order) and llama_sampler_accept of the walk's token. Prints the
// thread's CPU time per apply, mean and p99 in microseconds.
#include <llama.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: llama-cpp-grammar VOCAB.gguf WALK_DIR N [N ...]\n");
        return 2;
    }
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (model == nullptr) {
        std::fprintf(stderr, "llama-cpp-grammar: cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    std::printf("| vocabulary | walk | compile ms | apply us mean | p99 | steps |\n|---|---|---|---|---|---|\n");
    for (int a = 3; a < argc; ++a) {
        const std::string base = std::string(argv[2]) + "/" + argv[a];
        std::ifstream gin(base + ".gbnf");
        std::stringstream gbnf;
        gbnf << gin.rdbuf();
        std::vector<llama_token> walk;
        std::ifstream tin(base + ".tokens");
        for (long t; tin >> t;) walk.push_back(static_cast<llama_token>(t));
        const double t0 = cpu_us();
        llama_sampler* smpl = llama_sampler_init_grammar(vocab, gbnf.str().c_str(), "root");
        const double compile_ms = (cpu_us() - t0) / 1000;
        if (smpl == nullptr) {
            std::fprintf(stderr, "llama-cpp-grammar: llama.cpp refused the grammar %s.gbnf\n", base.c_str());
            return 1;
        }
        std::vector<llama_token_data> data(static_cast<size_t>(n_vocab));
        std::vector<double> us;
        for (const llama_token t : walk) {
            for (int32_t i = 0; i < n_vocab; ++i) data[static_cast<size_t>(i)] = llama_token_data{i, 0.f, 0.f};
            llama_token_data_array arr{data.data(), data.size(), -1, false};
            const double s = cpu_us();
            llama_sampler_apply(smpl, &arr);
            us.push_back(cpu_us() - s);
            if (t < 0) {
                llama_sampler_reset(smpl);
            } else {
                llama_sampler_accept(smpl, t);
            }
        }
        llama_sampler_free(smpl);
        double mean = 0;
        for (const double x : us) mean += x;
        mean /= static_cast<double>(std::max<size_t>(us.size(), 1));
        std::sort(us.begin(), us.end());
        const double p99 =
            us.empty() ? 0 : us[std::min(us.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(us.size())))];
        std::printf("| llama.cpp (%d) | %s | %.2f | %.1f | %.1f | %zu |\n", n_vocab, argv[a], compile_ms, mean, p99,
                    us.size());
    }
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
