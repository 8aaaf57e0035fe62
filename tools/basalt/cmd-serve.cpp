// `basalt serve`: an OpenAI-compatible HTTP server on the engine (tools/basalt/serve/, docs/server.md).
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cli.hpp"
#include "engine-setup.hpp"
#include "serve/control-vectors.hpp"
#include "serve/served-model.hpp"
#include "serve/server.hpp"

namespace basalt::cli {
namespace {

std::chrono::milliseconds seconds_option(const po::variables_map& vm, const char* name) {
    return std::chrono::milliseconds(static_cast<long long>(vm[name].as<double>() * 1000.0));
}

// The longest timeout taken, in seconds (about 3 years): a larger one (or inf) would overflow the clocks' nanoseconds
// and expire at once.
constexpr double kMaxTimeoutSeconds = 1e8;

int run_serve(const po::variables_map& vm, const GlobalOptions& g) {
    for (const char* k : {"request-timeout", "read-timeout", "idle-timeout", "write-timeout", "shutdown-grace"}) {
        const double v = vm[k].as<double>();
        if (!(v > 0)) {
            print_error(std::string("basalt serve: --") + k + " must be above 0 seconds");
            return kExitUsage;
        }
        if (!(v <= kMaxTimeoutSeconds)) {
            std::ostringstream os;
            os << "basalt serve: --" << k << " must be at most " << kMaxTimeoutSeconds << " seconds, not " << v;
            print_error(os.str());
            return kExitUsage;
        }
    }
    // An empty key would turn authentication off without a word: refused (omit the key to serve without one).
    std::string api_key;
    if (vm.count("api-key") != 0) {
        api_key = vm["api-key"].as<std::string>();
        if (api_key.empty()) {
            print_error("basalt serve: --api-key must not be empty (omit it to serve without authentication)");
            return kExitUsage;
        }
    } else if (const char* k = std::getenv("BASALT_API_KEY"); k != nullptr) {
        api_key = k;
        if (api_key.empty()) {
            print_error("basalt serve: BASALT_API_KEY is set but empty (unset it to serve without authentication)");
            return kExitUsage;
        }
    }
    cpp::EngineOptions options = engine_options(vm, g);
    const std::string model_arg = options.model;
    const auto parallel = options.params.n_parallel;
    options.params.flags |= BASALT_ENGINE_OWN_THREAD;
    const auto max_request_seqs = static_cast<uint32_t>(vm["max-request-seqs"].as<long long>());
    options.params.n_seq_max = parallel * max_request_seqs;
    std::string id = vm.count("model-name") != 0 ? vm["model-name"].as<std::string>() : model_arg;
    if (vm.count("model-name") == 0 && std::filesystem::exists(model_arg))
        id = std::filesystem::path(model_arg).stem().string();
    serve::ServedModel served;
    const std::string tmpl = vm.count("chat-template") != 0 ? vm["chat-template"].as<std::string>() : "";
    served.trust_client_special_tokens = vm["trust-client-special-tokens"].as<bool>();
    const std::string reasoning_format = vm["reasoning-format"].as<std::string>();
    if (reasoning_format != "none" && reasoning_format != "auto" && reasoning_format != "deepseek")
        throw UsageError("basalt serve: --reasoning-format must be none, auto or deepseek, not '" + reasoning_format +
                         "'");
    served.split_reasoning = reasoning_format != "none";
    if (vm.count("chat-template-kwargs") != 0) {
        try {
            served.chat.kwargs = serve::parse_template_kwargs(vm["chat-template-kwargs"].as<std::string>());
        } catch (const std::invalid_argument& err) {
            throw UsageError(std::string("basalt serve: ") + err.what());
        }
    }
    options.prepare = [&](const cpp::Runtime&, const cpp::Model& model, cpp::EngineParams& p) {
        if (auto why = serve::describe_served_model(model.get(), id, tmpl, p.n_ctx, served); !why.empty()) {
            if (!tmpl.empty()) throw UsageError("basalt serve: " + why);  // an unknown --chat-template
            throw std::runtime_error("basalt serve: " + why);
        }
        p.n_ctx = served.n_ctx;
        // By default the cache holds a full context for every running request; beams (several sequences) share it.
        if (p.n_kv_slots == 0) p.n_kv_slots = served.n_ctx * parallel;
    };
    cpp::OpenEngine e = cpp::open_engine(std::move(options));
    served.max_request_seqs = max_request_seqs;
    served.decoder_seqs = [&runtime = e.runtime, &model = e.model](const std::string& spec) {
        return decoder_sequences(runtime, model, spec);
    };
    served.draft_adaptive = draft_adaptive(vm);
    // The operator's control vectors, loaded now: a request's "steer" only names them.
    const auto named = vm.count("control-vector") != 0 ? vm["control-vector"].as<std::vector<std::string>>()
                                                       : std::vector<std::string>{};
    const std::string steer_dir = vm.count("steer-dir") != 0 ? vm["steer-dir"].as<std::string>() : "";
    if (auto why = serve::load_control_vectors(e.engine.get(), named, steer_dir, served.control_vectors);
        !why.empty()) {
        print_error("basalt serve: " + why);
        return kExitError;
    }

    serve::ServerConfig cfg;
    cfg.host = vm["host"].as<std::string>();
    cfg.port = static_cast<unsigned short>(vm["port"].as<long long>());
    if (vm.count("port-file") != 0) cfg.port_file = vm["port-file"].as<std::string>();
    cfg.api_key = api_key;
    cfg.http_threads = static_cast<int>(vm["http-threads"].as<long long>());
    cfg.max_queue = static_cast<size_t>(vm["max-queue"].as<long long>());
    cfg.n_parallel = parallel;
    cfg.request_timeout = seconds_option(vm, "request-timeout");
    cfg.shutdown_grace = seconds_option(vm, "shutdown-grace");
    cfg.limits.read_timeout = seconds_option(vm, "read-timeout");
    cfg.limits.idle_timeout = seconds_option(vm, "idle-timeout");
    cfg.limits.write_timeout = seconds_option(vm, "write-timeout");
    cfg.limits.body_bytes = static_cast<size_t>(vm["max-body"].as<long long>());
    cfg.limits.header_bytes = static_cast<size_t>(vm["max-header"].as<long long>());
    cfg.limits.stream_buffer_bytes = static_cast<size_t>(vm["max-stream-buffer"].as<long long>());
    try {
        serve::Server server(cfg, e.engine.get(), e.model.get(), served);
        return server.run() == 0 ? kExitOk : kExitError;
    } catch (const std::exception& err) {
        print_error("basalt serve: cannot listen on " + cfg.host + ":" + std::to_string(cfg.port) + ": " + err.what());
        return kExitError;
    }
}

const Registrar kServe{Command{
    "serve", "OpenAI-compatible HTTP server (completions, chat, streaming) on the engine",
    "basalt serve [-m MODEL] [--host ADDR] [--port N] [--api-key KEY] [--parallel N] [--max-queue N] ...",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->default_value("target"),
                        "GGUF model file, or a shipped model's name (target, draft)")(
            "model-name", po::value<std::string>(),
            "the id clients pass as \"model\" (default: the file's stem, or the shipped name)")(
            "host", po::value<std::string>()->default_value("127.0.0.1"),
            "address to listen on (0.0.0.0: every interface)")(
            "port", int_option("port", 0, 65535)->default_value(8080), "TCP port (0: any free port, see --port-file)")(
            "port-file", po::value<std::string>(), "write the bound port to this file once listening")(
            "api-key", po::value<std::string>(),
            "require 'Authorization: Bearer KEY' on /v1/* (401 without it); default $BASALT_API_KEY, else none")(
            "control-vector", po::value<std::vector<std::string>>(),
            "NAME=FILE: load a control vector at start; requests steer with \"steer\": \"NAME[:SCALE[:A-B]]\" "
            "(repeatable)")("steer-dir", po::value<std::string>(),
                            "load every regular *.gguf control vector in DIR at start, each named by its file's stem")(
            "chat-template", po::value<std::string>(),
            "chat template: a family (plain, chatml, llama3, gemma, mistral, phi3: Basalt's native renderer) or a "
            "Jinja template FILE (default: the model's tokenizer.chat_template, rendered by the Jinja interpreter; "
            "plain when it has none)")("chat-template-kwargs", po::value<std::string>(),
                                       "JSON object of template variables for every chat, e.g. "
                                       "'{\"enable_thinking\": false}' (a request's chat_template_kwargs add to it)")(
            "reasoning-format", po::value<std::string>()->default_value("auto"),
            "auto or deepseek: a chat reply's reasoning (<think>...</think> and the template family's equivalents) "
            "goes to reasoning_content; none: it stays in content (a request's reasoning_format overrides it)")(
            "parallel", int_option("parallel", 1, 4096)->default_value(8), "requests the engine runs at once")(
            "max-queue", int_option("max-queue", 0, 1 << 20)->default_value(256),
            "generations that may wait beyond the running ones; more answer 429 with Retry-After")(
            "max-request-seqs", int_option("max-request-seqs", 1, 64)->default_value(4),
            "cache sequences one request may use (beam width)")(
            "chunk", int_option("chunk", 0, 1 << 20)->default_value(256),
            "longest prefill piece per request and step (0: whole prompts)")(
            "max-batch-tokens", int_option("max-batch-tokens", 1, 1 << 20),
            "token budget of one engine step (default: --batch, 512)")(
            "draft", po::value<std::string>(), "draft model for \"decoder\": \"speculative:...\" requests")(
            "amateur", po::value<std::string>(), "amateur model for \"decoder\": \"contrastive:...\" requests")(
            "draft-adaptive", po::value<std::string>(),
            "on|off: the adaptive draft length of \"speculative\" requests that do not set adaptive (default on)")(
            "no-prefix-cache", po::bool_switch(), "compute every prompt in full (no reuse of cached K/V)")(
            "prefix-state-mib", int_option("prefix-state-mib", 1, 1 << 20),
            "hybrid models: MiB of host memory for the prefix cache's recurrent-state checkpoints (default: 16 "
            "states, or 2 per running request)")("http-threads", int_option("http-threads", 1, 256)->default_value(2),
                                                 "threads running the HTTP connections (asio; the engine has its own)")(
            "request-timeout", po::value<double>()->default_value(600),
            "seconds a generation may take; then it is cancelled and answered 504")(
            "read-timeout", po::value<double>()->default_value(10),
            "seconds for a whole request (headers and body) to arrive; then the connection is closed without a "
            "response, as nginx and llama-server do (counted as 408 in /metrics)")(
            "idle-timeout", po::value<double>()->default_value(60), "seconds a kept-alive connection may stay idle")(
            "write-timeout", po::value<double>()->default_value(30),
            "seconds one write may wait for a client that does not read")(
            "max-stream-buffer", int_option("max-stream-buffer", 1024, 1LL << 32)->default_value(1 << 20),
            "bytes of a stream queued for a client that does not read; beyond them its request is cancelled")(
            "max-body", int_option("max-body", 1, 1LL << 32)->default_value(4 << 20),
            "largest request body in bytes (413 beyond)")(
            "max-header", int_option("max-header", 256, 1 << 20)->default_value(16 << 10),
            "largest request head (request line + headers) in bytes (431 beyond)")(
            "shutdown-grace", po::value<double>()->default_value(10),
            "on SIGTERM/SIGINT: seconds running requests may finish before they are cancelled")(
            "trust-client-special-tokens", po::bool_switch(),
            "parse control-token text in chat message content (\"<|im_end|>\" ends the turn); default: only the "
            "template's markup gives control tokens (trusted clients only)");
        add_max_step_option(d);
        add_session_options(d);
        add_admission_options(d);
    },
    run_serve}};

}  // namespace
}  // namespace basalt::cli
