// `basalt run`: generate text from a prompt through the engine (one request), streaming it, with prefill/decode
// speed on stderr.
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "engine-setup.hpp"
#include "grammar-options.hpp"
#include "request-spec.hpp"

namespace basalt::cli {
namespace {

// The chain the --temp/--top-k/--top-p/--seed shorthands stand for ("greedy" when temp <= 0).
std::string shorthand_chain(float temp, long long top_k, float top_p, long long seed) {
    if (temp <= 0.f) return "greedy";
    std::ostringstream os;
    os << "top_k:k=" << top_k << ";top_p:p=" << top_p << ";temp:t=" << temp << ";dist:seed=" << seed;
    return os.str();
}

// The chain text from --samplers or from the --temp/--top-k/--top-p/--seed shorthands (not both).
int sampler_chain_text(const po::variables_map& vm, std::string& out) {
    const bool shorthand = vm.count("temp") + vm.count("top-k") + vm.count("top-p") + vm.count("seed") > 0;
    if (!shorthand) {
        out = vm["samplers"].as<std::string>();
        return kExitOk;
    }
    if (!vm["samplers"].defaulted()) {
        print_error("give either --samplers or the shorthands --temp/--top-k/--top-p/--seed, not both");
        return kExitUsage;
    }
    out = shorthand_chain(
        vm.count("temp") ? vm["temp"].as<float>() : 0.8f, vm.count("top-k") ? vm["top-k"].as<long long>() : 40,
        vm.count("top-p") ? vm["top-p"].as<float>() : 0.95f, vm.count("seed") ? vm["seed"].as<long long>() : -1);
    return kExitOk;
}

// Text of tokens (for n-best hypotheses, which are not streamed).
std::string text_of(const cpp::Model& model, const std::vector<int32_t>& tokens) {
    std::string out;
    for (int32_t t : tokens) out += model.piece(t, false);
    return out;
}

// Collects the streamed text (for --json).
void collect_text(basalt_request* /*request*/, const int32_t* /*tokens*/, size_t /*n_tokens*/, const char* text,
                  size_t text_len, int32_t /*finish_reason*/, void* user_data) {
    static_cast<std::string*>(user_data)->append(text, text_len);
}

// Prints each piece of text as the engine streams it.
void print_text(basalt_request* /*request*/, const int32_t* /*tokens*/, size_t /*n_tokens*/, const char* text,
                size_t text_len, int32_t /*finish_reason*/, void* /*user_data*/) {
    if (text_len > 0) std::cout.write(text, static_cast<std::streamsize>(text_len)).flush();
}

const char* stop_text(int32_t reason) {
    switch (reason) {
        case BASALT_FINISH_STOP:
            return "end of text";
        case BASALT_FINISH_LENGTH:
            return "length";
        case BASALT_FINISH_CONTEXT:
            return "context full";
        case BASALT_FINISH_CANCELLED:
            return "cancelled";
        default:
            return "error";
    }
}

int run_run(const po::variables_map& vm, const GlobalOptions& g) {
    std::string chain_text;
    const int chain_rc = sampler_chain_text(vm, chain_text);
    if (chain_rc != kExitOk) return chain_rc;
    const std::string decoder = with_draft_adaptive(vm["decoder"].as<std::string>(), draft_adaptive(vm));
    cpp::EngineOptions options = engine_options(vm, g);
    std::vector<int32_t> prompt;
    options.prepare = [&](const cpp::Runtime& rt, const cpp::Model& model, cpp::EngineParams& p) {
        prompt = model.tokenize(vm["prompt"].as<std::string>(), BASALT_TOKENIZE_ADD_SPECIAL);
        if (prompt.empty()) throw UsageError("the prompt tokenizes to nothing; give some text with -p");
        try {  // beams: one cache sequence each; snapshots (the KV slots follow: n_ctx x n_seq_max)
            p.n_seq_max = decoder_sequences(rt, model, decoder);
        } catch (const cpp::Error& e) {
            throw UsageError(e.what());  // an unknown decoder or a refused parameter of it
        }
        try {  // a malformed chain is a usage error; submit's other refusals (a steering file) are runtime errors
            const cpp::SamplerChain check(rt, chain_text);
        } catch (const cpp::Error& e) {
            if (e.status() == BASALT_ERR_FORMAT) throw UsageError(e.what());
        }
    };
    cpp::OpenEngine e = cpp::open_engine(std::move(options));
    const cpp::Model& model = e.model;

    const bool as_json = vm["json"].as<bool>();
    std::string streamed;
    cpp::RequestParams rq;
    rq.tokens = prompt;
    rq.has_tokens = true;
    rq.samplers = chain_text;
    rq.decoder = decoder;
    rq.max_tokens = static_cast<int32_t>(vm["n-predict"].as<long long>());
    if (vm["ignore-eos"].as<bool>()) rq.flags |= BASALT_REQUEST_IGNORE_EOG;
    rq.seed = vm.count("seed") != 0 ? vm["seed"].as<long long>() : -1;
    if (vm.count("stop") != 0) rq.stop = vm["stop"].as<std::vector<std::string>>();
    if (vm.count("steer") != 0) rq.steer = vm["steer"].as<std::vector<std::string>>();
    apply_grammar_options(vm, rq);
    // The chain and decoder were checked above: what submit refuses now (a corrupt steering file, a prompt too
    // long) is a runtime error, as every other load failure.
    cpp::Request request = e.engine.submit(rq, as_json ? collect_text : print_text, &streamed);
    if (vm["echo"].as<bool>() && !as_json) {
        for (int32_t t : prompt) std::cout << model.piece(t, false);
        std::cout.flush();
    }
    try {
        e.engine.run();
    } catch (const cpp::Error&) {
        if (request.finish_reason() == BASALT_FINISH_NONE) throw;  // else the request says why
    }
    const int32_t reason = request.finish_reason();
    if (reason == BASALT_FINISH_ERROR) {
        if (!as_json) std::cout << '\n';
        print_error(request.error());
        return kExitError;
    }
    const basalt_request_stats st = request.stats();
    if (as_json) {
        nlohmann::json out;
        out["text"] = streamed;
        out["finish_reason"] = basalt_finish_reason_name(reason);
        nlohmann::json hyps = nlohmann::json::array();
        for (size_t h = 0; h < request.n_hypotheses(); ++h) {
            float score = 0.f;
            const std::vector<int32_t> toks = request.hypothesis(h, &score);
            if (h == 0) out["tokens"] = toks;
            hyps.push_back({{"tokens", toks}, {"text", h == 0 ? streamed : text_of(model, toks)}, {"score", score}});
        }
        if (!out.contains("tokens")) out["tokens"] = nlohmann::json::array();
        out["hypotheses"] = hyps;
        nlohmann::json dstats = nlohmann::json::object();
        for (const auto& [name, value] : request.decoder_stats()) dstats[name] = value;
        out["decoder"] = {{"spec", decoder}, {"stats", dstats}};
        out["usage"] = {{"prompt_tokens", st.prompt_tokens}, {"completion_tokens", st.generated_tokens}};
        out["timings"] = {{"ttft_ms", st.ttft_ms}, {"total_ms", st.total_ms}, {"tokens_per_s", st.tokens_per_s}};
        if (st.source_tokens > 0) {  // encoder-decoder: where the time went
            out["timings"]["source_tokens"] = st.source_tokens;
            out["timings"]["encode_ms"] = st.encode_ms;
            out["timings"]["decode_ms_per_token"] = st.itl_mean_ms;
        }
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        return kExitOk;
    }
    std::cout << '\n';
    if (vm["timings"].as<bool>()) {
        // Where the time went: queueing, the encoder (encoder-decoder models), the prompt, each generated token.
        std::cerr << "timings: queue " << st.queue_ms << " ms";
        if (st.source_tokens > 0) {
            std::cerr << "; encode " << st.source_tokens << " source tokens " << st.encode_ms << " ms ("
                      << (st.encode_ms > 0 ? 1e3 * static_cast<double>(st.source_tokens) / st.encode_ms : 0.0)
                      << " t/s)";
        }
        std::cerr << "; first token " << (st.ttft_ms - st.queue_ms - st.encode_ms) << " ms after "
                  << (st.source_tokens > 0 ? "encoding" : "admission") << " (" << st.prompt_tokens
                  << (st.source_tokens > 0 ? " decoder prompt" : " prompt") << " tokens); decode "
                  << (st.generated_tokens > 1 ? st.generated_tokens - 1 : 0) << " tokens " << st.itl_mean_ms
                  << " ms/token (p50 " << st.itl_p50_ms << ", p99 " << st.itl_p99_ms << ")\n";
    }
    const double prefill_s = st.ttft_ms / 1e3;
    const double decode_s = (st.total_ms - st.ttft_ms) / 1e3;
    std::cerr << "prompt " << prompt.size() << " tokens in " << prefill_s * 1e3 << " ms ("
              << (prefill_s > 0 ? static_cast<double>(prompt.size()) / prefill_s : 0.0) << " t/s prefill); generated "
              << st.generated_tokens << " tokens in " << decode_s * 1e3 << " ms (" << (st.tokens_per_s)
              << " t/s decode); stop: " << stop_text(reason) << '\n';
    return kExitOk;
}

const Registrar kRun{Command{
    "run", "generate text from a prompt",
    "basalt run [-m MODEL] [-p TEXT] [-n N] [--samplers CHAIN | --temp T --top-k K --top-p P --seed S] "
    "[--decoder NAME:k=v,...] [--draft|--amateur MODEL] [--json] [--backend cpu]",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->default_value("target"),
                        "GGUF model file, or a shipped model's name (target, draft)")(
            "prompt,p", po::value<std::string>()->default_value(""), "prompt text (default: none, start at BOS)")(
            "n-predict,n", int_option("n-predict", 0, INT32_MAX)->default_value(64), "tokens to generate")(
            "samplers", po::value<std::string>()->default_value("greedy"),
            "sampler chain, e.g. \"penalties:repeat=1.1,last_n=64;top_k:40;top_p:0.9;temp:0.7;dist\"")(
            "temp", po::value<float>(), "shorthand: top_k;top_p;temp;dist chain with this temperature (0: greedy)")(
            "top-k", po::value<long long>(), "shorthand: top-k of that chain (default 40)")(
            "top-p", po::value<float>(), "shorthand: top-p of that chain (default 0.95)")(
            "seed", po::value<long long>(), "shorthand: seed of that chain's dist (default random)")(
            "echo", po::bool_switch(), "print the prompt before the generated text")(
            "ignore-eos", po::bool_switch(), "keep generating past end-of-generation tokens (until -n or a stop)")(
            "timings", po::bool_switch(),
            "print where the time went on stderr: queue, encode (encoder-decoder models: the source), the first "
            "token, and ms per generated token")("stop", po::value<std::vector<std::string>>(),
                                                 "stop string (repeatable): the text ends before it")(
            "steer", po::value<std::vector<std::string>>(),
            "VEC.gguf[:SCALE[:A-B]] (repeatable; the vectors sum): add a llama.cpp control vector, times SCALE "
            "(default 1), to the residual stream after layers A..B (counted from 0; default every layer it has)")(
            "json", po::bool_switch(),
            "print one JSON object instead of streaming: text, tokens, finish_reason, hypotheses (n-best with "
            "scores), decoder figures, usage, timings");
        add_decoder_options(d);
        add_admission_options(d);
        add_max_step_option(d);
        add_grammar_options(d);
        add_session_options(d);
    },
    run_run}};

}  // namespace
}  // namespace basalt::cli
