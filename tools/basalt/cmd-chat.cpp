// `basalt chat`: an interactive terminal chat over the engine with the server's chat templates
// (tools/basalt/serve/chat-template.*): the reply streams as it is generated; the conversation is kept across
// turns; /reset forgets it, /exit (or end of input) quits. Reads stdin line by line, so it can be piped.
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli.hpp"
#include "engine-setup.hpp"
#include "grammar-options.hpp"
#include "request-spec.hpp"
#include "serve/chat-tokens.hpp"
#include "serve/served-model.hpp"

namespace basalt::cli {
namespace {

void print_piece(basalt_request*, const int32_t*, size_t, const char* text, size_t len, int32_t, void* user) {
    auto* reply = static_cast<std::string*>(user);
    reply->append(text, len);
    std::cout.write(text, static_cast<std::streamsize>(len));
    std::cout.flush();
}

int run_chat(const po::variables_map& vm, const GlobalOptions& g) {
    cpp::EngineOptions options = engine_options(vm, g);
    serve::ServedModel served;
    const std::string tmpl = vm.count("chat-template") != 0 ? vm["chat-template"].as<std::string>() : "";
    if (vm.count("chat-template-kwargs") != 0) {
        try {
            served.chat.kwargs = serve::parse_template_kwargs(vm["chat-template-kwargs"].as<std::string>());
        } catch (const std::invalid_argument& err) {
            throw UsageError(std::string("basalt chat: ") + err.what());
        }
    }
    options.prepare = [&](const cpp::Runtime& rt, const cpp::Model& model, cpp::EngineParams& p) {
        try {  // refused at start, not at the first turn
            const cpp::SamplerChain check(rt, vm["samplers"].as<std::string>());
        } catch (const cpp::Error& e) {
            throw UsageError(std::string("basalt chat: --samplers: ") + e.what());
        }
        if (auto why = serve::describe_served_model(model.get(), "chat", tmpl, p.n_ctx, served); !why.empty()) {
            if (!tmpl.empty()) throw UsageError("basalt chat: " + why);  // an unknown --chat-template
            throw std::runtime_error("basalt chat: " + why);
        }
        p.n_ctx = served.n_ctx;
    };
    cpp::OpenEngine e = cpp::open_engine(std::move(options));

    std::vector<serve::ChatMessage> history;
    if (vm.count("system") != 0) history.push_back({"system", vm["system"].as<std::string>()});
    const size_t kept = history.size();
    const bool tty = isatty(0) != 0;
    std::cerr << "basalt chat: model " << vm["model"].as<std::string>() << ", template " << served.chat.name()
              << "; /reset forgets the conversation, /exit quits" << std::endl;
    std::string line;
    long long turn = 0;
    bool first_line = true;
    for (;;) {
        if (tty) std::cout << "> " << std::flush;
        if (!std::getline(std::cin, line)) break;
        // Lines end at "\n" or "\r\n" (a file from Windows, a terminal sending CR), and a UTF-8 byte-order mark
        // that starts the input is no part of the first line: "/exit\r" quits.
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (first_line && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
        first_line = false;
        if (line == "/exit" || line == "/quit") break;
        if (line == "/reset") {
            history.resize(kept);
            std::cout << "(conversation reset)" << std::endl;
            continue;
        }
        if (line.empty()) continue;
        if (!line.empty() && line[0] == '/') {
            std::cout << "(unknown command '" << line << "': /reset, /exit)" << std::endl;
            continue;
        }
        history.push_back({"user", line});
        RequestSpec spec;
        spec.has_tokens = true;
        spec.samplers = vm["samplers"].as<std::string>();
        spec.seed = vm["seed"].as<long long>() < 0 ? -1 : vm["seed"].as<long long>() + turn;
        spec.max_tokens = static_cast<int32_t>(vm["max-tokens"].as<long long>());
        spec.stop = served.chat.stop_strings();
        spec.stop_tokens = served.chat_stop_tokens;
        apply_grammar_options(vm, spec);
        std::string reply;
        cpp::Request req;
        try {
            // Special tokens only from the template: a typed "<|im_end|>" is text (serve/chat-tokens.hpp).
            spec.tokens = serve::tokenize_chat(e.model.get(), served.chat.render_pieces(history, true));
            req = e.engine.submit(spec, &print_piece, &reply);
        } catch (const std::runtime_error& err) {
            std::cout << "(" << err.what() << "; /reset starts over)" << std::endl;
            history.pop_back();
            continue;
        }
        e.engine.run();
        if (req.finish_reason() == BASALT_FINISH_ERROR) {
            print_error(req.error());
            return kExitError;
        }
        std::cout << std::endl;
        history.push_back({"assistant", reply});
        ++turn;
    }
    return kExitOk;
}

const Registrar kChat{
    Command{"chat", "interactive chat in the terminal (streaming, multi-turn; /reset, /exit)",
            "basalt chat [-m MODEL] [--chat-template NAME|FILE] [--chat-template-kwargs JSON] [--system TEXT] "
            "[--samplers CHAIN] [--seed N] [-n N]",
            [](po::options_description& d, po::positional_options_description&) {
                d.add_options()("model,m", po::value<std::string>()->default_value("target"),
                                "GGUF model file, or a shipped model's name (target, draft)")(
                    "chat-template", po::value<std::string>(),
                    "chat template: a family (plain, chatml, llama3, gemma, mistral, phi3) or a Jinja template FILE "
                    "(default: the model's tokenizer.chat_template; plain when "
                    "it has none)")("chat-template-kwargs", po::value<std::string>(),
                                    "JSON object of template variables, e.g. '{\"enable_thinking\": false}'")(
                    "system", po::value<std::string>(), "a system message that opens the conversation")(
                    "samplers", po::value<std::string>()->default_value("top_k:40;top_p:0.95;temp:0.8;dist"),
                    "sampler chain (docs/samplers.md); \"greedy\" for deterministic replies")(
                    "seed", int_option("seed", -1, INT64_MAX)->default_value(-1),
                    "seed of the first reply's draws (the n-th reply uses seed + n); -1: random")(
                    "max-tokens,n", int_option("max-tokens", -1, INT32_MAX)->default_value(256),
                    "longest reply in tokens (-1: until the context is full)");
                add_grammar_options(d);
                add_session_options(d);
            },
            run_chat}};

}  // namespace
}  // namespace basalt::cli
