// cpp-generate: text generation from C++ through basalt.hpp, the header-only wrapper over the public C API.
//
//   cpp-generate MODEL PROMPT [N_PREDICT [SAMPLER_CHAIN]]
//
// The same program as examples/c-generate, in C++: open_engine loads the plugins and MODEL and creates an engine,
// one request streams its text through a callback, and every failure arrives as a basalt::cpp::Error carrying the
// C status and message; the RAII handles free everything in the right order on every path. The output is what
// `basalt run -m MODEL -p PROMPT -n N_PREDICT --samplers CHAIN` prints on stdout.
// Exit status: 0 success, 1 a Basalt call failed (its status and message are printed), 2 bad command line.
#include <basalt/basalt.hpp>

#include <charconv>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

// Called by the engine after each step with the request's new text (complete UTF-8; borrowed for the call).
void on_output(basalt_request* /*request*/, const int32_t* /*tokens*/, size_t /*n_tokens*/, const char* text,
               size_t text_len, int32_t /*finish_reason*/, void* /*user_data*/) {
    std::fwrite(text, 1, text_len, stdout);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc > 5) {
        std::cerr << "usage: cpp-generate MODEL PROMPT [N_PREDICT [SAMPLER_CHAIN]]\n";
        return 2;
    }
    basalt::cpp::RequestParams request;
    request.prompt = argv[2];  // tokenized with BOS as the vocabulary asks
    request.max_tokens = 32;
    if (argc >= 4) {
        const std::string n = argv[3];
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), request.max_tokens);
        if (ec != std::errc() || end != n.data() + n.size() || request.max_tokens < 0) {
            std::cerr << "cpp-generate: N_PREDICT '" << n << "' is not a count\n";
            return 2;
        }
    }
    if (argc == 5) request.samplers = argv[4];
    try {
        basalt::cpp::EngineOptions options;  // plugins beside libbasalt and in $BASALT_PLUGIN_PATH; cpu
        options.model = argv[1];
        basalt::cpp::OpenEngine e = basalt::cpp::open_engine(options);
        const basalt::cpp::Request r = e.engine.submit(request, on_output);
        e.engine.run();  // this thread runs the engine's loop until every request has finished
        if (r.finish_reason() == BASALT_FINISH_ERROR) {
            std::cerr << "cpp-generate: the request failed: " << r.error() << '\n';
            return 1;
        }
        std::cout << '\n';
        return 0;
    } catch (const basalt::cpp::Error& err) {
        std::cerr << "cpp-generate: " << err.status_name() << ": " << err.what() << '\n';
        return 1;
    }
}
