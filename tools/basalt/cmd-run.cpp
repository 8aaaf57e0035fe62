// `basalt run`: generate text from a prompt, streaming it, with prefill/decode speed on stderr.
#include <chrono>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "handles.hpp"

namespace basalt::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Owns a sampler chain of the C API (basalt_sampler_chain_*: parsing, creation, sample + accept).
struct SamplerChain {
    basalt_sampler_chain* chain = nullptr;
    SamplerChain() = default;
    SamplerChain(const SamplerChain&) = delete;
    SamplerChain& operator=(const SamplerChain&) = delete;
    ~SamplerChain() { basalt_sampler_chain_destroy(chain); }
};

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

int run_run(const po::variables_map& vm, const GlobalOptions& g) {
    Runtime rt(g);
    if (!rt.ok()) return kExitError;
    Model model(vm["model"].as<std::string>());
    if (!model.ok()) return kExitError;
    std::vector<int32_t> prompt;
    if (!tokenize(model.get(), vm["prompt"].as<std::string>(), BASALT_TOKENIZE_ADD_SPECIAL, prompt)) return kExitError;
    if (prompt.empty()) {
        print_error("the prompt tokenizes to nothing; give some text with -p");
        return kExitUsage;
    }
    SessionStrings keep;
    const basalt_session_params sp = session_params(vm, keep);
    Session session(rt.get(), model.get(), sp);
    if (!session.ok()) return kExitError;
    const uint32_t n_ctx = basalt_session_n_ctx(session.get());
    if (prompt.size() > n_ctx) {
        print_error("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                    std::to_string(n_ctx) + " (use --ctx)");
        return kExitError;
    }
    std::string chain_text;
    const int chain_rc = sampler_chain_text(vm, chain_text);
    if (chain_rc != kExitOk) return chain_rc;
    SamplerChain chain;
    if (const basalt_status st = basalt_sampler_chain_create(rt.get(), chain_text.c_str(), &chain.chain);
        st != BASALT_OK) {
        print_error(basalt_last_error());
        return st == BASALT_ERR_FORMAT ? kExitUsage : kExitError;  // a malformed chain is a command-line error
    }

    const size_t n_vocab = basalt_session_n_vocab(session.get());
    auto sample = [&](int32_t& out) -> bool {
        const float* logits = nullptr;
        if (basalt_session_logits(session.get(), 0, &logits) != BASALT_OK) return false;
        return basalt_sampler_chain_sample(chain.chain, logits, n_vocab, &out) == BASALT_OK;
    };

    if (vm["echo"].as<bool>()) {
        for (int32_t t : prompt) std::cout << piece(model.get(), t, false);
        std::cout.flush();
    }
    std::vector<int32_t> pos(prompt.size()), seqs(prompt.size(), 0);
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = static_cast<int32_t>(i);
    basalt_batch batch{};
    batch.struct_size = sizeof(batch);
    batch.n_tokens = prompt.size();
    batch.tokens = prompt.data();
    batch.positions = pos.data();
    batch.seq_ids = seqs.data();
    batch.want_logits = nullptr;  // last row only
    const auto t_prefill = Clock::now();
    if (basalt_session_decode(session.get(), &batch) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    const double prefill_s = seconds_since(t_prefill);

    const auto n_predict = static_cast<int>(vm["n-predict"].as<long long>());
    int32_t token = 0;
    int generated = 0;
    auto t_decode = Clock::now();
    std::string stop_reason = "length";
    int32_t position = static_cast<int32_t>(prompt.size());
    while (generated < n_predict) {
        if (!sample(token)) {
            print_error(basalt_last_error());
            return kExitError;
        }
        if (basalt_token_is_eog(model.get(), token) != 0) {
            stop_reason = "end of text";
            break;
        }
        std::cout << piece(model.get(), token, false) << std::flush;
        ++generated;
        if (generated >= n_predict) break;
        if (static_cast<uint32_t>(position) >= n_ctx) {
            stop_reason = "context full";
            break;
        }
        int32_t seq0 = 0;
        basalt_batch one{};
        one.struct_size = sizeof(one);
        one.n_tokens = 1;
        one.tokens = &token;
        one.positions = &position;
        one.seq_ids = &seq0;
        if (basalt_session_decode(session.get(), &one) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
        ++position;
    }
    const double decode_s = seconds_since(t_decode);
    std::cout << '\n';
    std::cerr << "prompt " << prompt.size() << " tokens in " << prefill_s * 1e3 << " ms ("
              << (prefill_s > 0 ? static_cast<double>(prompt.size()) / prefill_s : 0.0) << " t/s prefill); generated "
              << generated << " tokens in " << decode_s * 1e3 << " ms (" << (decode_s > 0 ? generated / decode_s : 0.0)
              << " t/s decode); stop: " << stop_reason << '\n';
    return kExitOk;
}

const Registrar kRun{Command{
    "run", "generate text from a prompt",
    "basalt run [-m MODEL] [-p TEXT] [-n N] [--samplers CHAIN | --temp T --top-k K --top-p P --seed S] [--backend cpu]",
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
            "echo", po::bool_switch(), "print the prompt before the generated text");
        add_session_options(d);
    },
    run_run}};

}  // namespace
}  // namespace basalt::cli
