// `basalt bench`: prompt processing (pp) and generation (tg) speed in the style of llama-bench (median of
// repetitions, optionally after --depth tokens already in the context), plus the machine's measured memory
// bandwidth and decode as a percentage of that roofline (every weight byte, of a MoE model's expert tensors the
// share of the experts a token uses, and the K/V rows each step attends to, read once per generated token).
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <thread>
#include <vector>

#include "bandwidth-probe.hpp"
#include "bench-engine.hpp"
#include "bench-grammar.hpp"
#include "cli.hpp"
#include "engine-setup.hpp"

namespace basalt::cli {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int run_bench(const po::variables_map& vm, const GlobalOptions& g) {
    show_library_progress(false);                // a bar drawn during timed work would be measured with it
    cpp::SessionParams sp = session_params(vm);  // every mode: a bad option value exits before anything loads
    if (vm["mode"].as<std::string>() == "grammar") return run_grammar_bench(vm, g);
    if (vm["mode"].as<std::string>() != "pp-tg") return run_engine_bench(vm, g);
    const auto n_prompt = static_cast<int>(vm["n-prompt"].as<long long>());
    const auto n_gen = static_cast<int>(vm["n-gen"].as<long long>());
    const auto reps = static_cast<int>(vm["repetitions"].as<long long>());
    if (n_prompt == 0 && n_gen == 0) {
        print_error("basalt bench: -p and -n are both 0: nothing to measure");
        return kExitUsage;
    }
    const cpp::Runtime rt(runtime_options(g));
    const cpp::Model model(vm["model"].as<std::string>(), &rt);
    const auto depth = static_cast<int>(vm["depth"].as<long long>());
    if (sp.n_ctx == 0) sp.n_ctx = static_cast<uint32_t>(depth + std::max(n_prompt, n_gen) + 1);
    const cpp::Session session(rt, model, sp);
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    basalt_model_describe(model.get(), &info);
    const auto vocab = static_cast<int32_t>(basalt_session_n_vocab(session.get()));

    auto decode = [&](const std::vector<int32_t>& toks, int32_t pos0) {
        std::vector<int32_t> pos(toks.size()), seq(toks.size(), 0);
        for (size_t i = 0; i < toks.size(); ++i) pos[i] = pos0 + static_cast<int32_t>(i);
        basalt_batch b{};
        b.struct_size = sizeof(b);
        b.n_tokens = toks.size();
        b.tokens = toks.data();
        b.positions = pos.data();
        b.seq_ids = seq.data();
        return basalt_session_decode(session.get(), &b) == BASALT_OK;
    };
    uint32_t rng = 12345;
    auto random_token = [&] {
        rng = rng * 1664525u + 1013904223u;
        return static_cast<int32_t>(rng % static_cast<uint32_t>(vocab));
    };
    // The context each measurement starts from: `depth` random tokens, decoded untimed.
    auto fill_context = [&] {
        basalt_session_seq_drop(session.get(), 0);
        if (depth == 0) return true;
        std::vector<int32_t> toks(static_cast<size_t>(depth));
        for (auto& t : toks) t = random_token();
        return decode(toks, 0);
    };
    const unsigned threads =
        sp.compute.n_threads != 0 ? sp.compute.n_threads : std::max(1u, std::thread::hardware_concurrency());
    basalt::bench::BandwidthProbe probe(threads);
    std::vector<double> pp, tg;
    for (int r = 0; r < reps + 1; ++r) {  // the first repetition warms up and is not counted
        if (r == 0) probe.measure(8);     // before the warm-up repetition, which absorbs its after-effects
        std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
        for (auto& t : prompt) t = random_token();
        if (n_prompt > 0 && !fill_context()) {
            print_error(basalt_last_error());
            return kExitError;
        }
        auto t0 = Clock::now();
        if (n_prompt > 0 && !decode(prompt, depth)) {
            print_error(basalt_last_error());
            return kExitError;
        }
        const double pp_s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (n_gen > 0 && !fill_context()) {
            print_error(basalt_last_error());
            return kExitError;
        }
        t0 = Clock::now();
        for (int i = 0; i < n_gen; ++i) {
            if (!decode({random_token()}, depth + i)) {
                print_error(basalt_last_error());
                return kExitError;
            }
        }
        const double tg_s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (r == 0) continue;
        if (n_prompt > 0) pp.push_back(n_prompt / pp_s);
        if (n_gen > 0) tg.push_back(n_gen / tg_s);
    }
    const double bw = probe.measure(8);
    // Bytes read per generated token: every weight once (the embedding table only when it is also the output); of
    // a MoE model's expert tensors ([.., .., n_expert]) only the n_expert_used experts a token is routed to.
    uint64_t bytes_per_token = info.weight_bytes, embd_bytes = 0;
    bool tied = true;
    for (size_t i = 0; i < basalt_model_tensor_count(model.get()); ++i) {
        basalt_model_tensor t{};
        t.struct_size = sizeof(t);
        basalt_model_tensor_info(model.get(), i, &t);
        const std::string name = t.name;
        if (name == "output.weight") tied = false;
        if (name == "token_embd.weight") embd_bytes = t.n_bytes;
        if (info.n_expert > 1 && info.n_expert_used > 0 && info.n_expert_used < info.n_expert && t.n_dims == 3 &&
            t.ne[2] == static_cast<int64_t>(info.n_expert)) {
            bytes_per_token -= t.n_bytes - t.n_bytes / info.n_expert * info.n_expert_used;
        }
    }
    if (!tied) bytes_per_token -= embd_bytes;
    const uint64_t weight_bytes = bytes_per_token;
    // The K/V rows a generated token attends to (every cached row of its sequence, itself included; on a model
    // with sliding-window layers every layer is counted at the window, which undercounts its global layers).
    uint64_t kv_bytes = 0;
    {
        basalt_plan_params pq{};
        pq.struct_size = sizeof(pq);
        pq.n_ctx = basalt_session_n_ctx(session.get());
        int32_t k_type = -1, v_type = -1;
        basalt_dtype_from_name(sp.compute.kv_params.find("k_type")->c_str(), &k_type);
        basalt_dtype_from_name(sp.compute.kv_params.find("v_type")->c_str(), &v_type);
        pq.k_type = static_cast<basalt_dtype>(k_type);
        pq.v_type = static_cast<basalt_dtype>(v_type);
        pq.kv_residual = static_cast<uint32_t>(vm["kv-residual"].as<long long>());
        basalt_memory_plan plan{};
        plan.struct_size = sizeof(plan);
        if (n_gen > 0 && basalt_model_plan(model.get(), &pq, &plan) == BASALT_OK) {
            uint64_t visible = 0;  // summed over the generated tokens
            for (int i = 0; i < n_gen; ++i) {
                const auto v = static_cast<uint64_t>(depth + i + 1);
                visible += info.sliding_window > 0 ? std::min<uint64_t>(v, info.sliding_window) : v;
            }
            kv_bytes = plan.kv_bytes_per_token * visible / static_cast<uint64_t>(n_gen);
        }
    }
    bytes_per_token += kv_bytes;
    const double roofline = bw / static_cast<double>(bytes_per_token);
    const double pp_med = pp.empty() ? 0 : median(pp), tg_med = tg.empty() ? 0 : median(tg);
    if (vm["json"].as<bool>()) {
        Json j(std::cout);
        j.begin_object();
        j.key("model").value(vm["model"].as<std::string>());
        j.key("backend").value(sp.compute.backend);
        j.key("threads").value(static_cast<long long>(threads));
        j.key("n_prompt").value(static_cast<long long>(n_prompt));
        j.key("n_gen").value(static_cast<long long>(n_gen));
        j.key("depth").value(static_cast<long long>(depth));
        j.key("repetitions").value(static_cast<long long>(reps));
        j.key("pp_tokens_per_s").value(std::to_string(pp_med));
        j.key("tg_tokens_per_s").value(std::to_string(tg_med));
        j.key("bandwidth_gb_per_s").value(std::to_string(bw / 1e9));
        j.key("bytes_per_token").value(static_cast<long long>(bytes_per_token));
        j.key("weight_bytes_per_token").value(static_cast<long long>(weight_bytes));
        j.key("kv_bytes_per_token").value(static_cast<long long>(kv_bytes));
        j.key("tg_roofline_tokens_per_s").value(std::to_string(roofline));
        j.key("tg_percent_of_roofline").value(std::to_string(100.0 * tg_med / roofline));
        j.end_object();
        std::cout << '\n';
        return kExitOk;
    }
    const std::string at_depth = depth > 0 ? " @ d" + std::to_string(depth) : "";
    std::cout << std::fixed << std::setprecision(2) << "model " << vm["model"].as<std::string>() << ", backend "
              << sp.compute.backend << ", " << threads << " threads, median of " << reps << "\n"
              << "  pp" << n_prompt << at_depth << "  " << pp_med << " t/s\n"
              << "  tg" << n_gen << at_depth << "   " << tg_med << " t/s  (" << 100.0 * tg_med / roofline
              << " % of the " << roofline << " t/s roofline: " << bw / 1e9 << " GB/s measured, " << bytes_per_token
              << " bytes per token: " << weight_bytes << " of weights, " << kv_bytes << " of K/V)\n";
    return kExitOk;
}

const Registrar kBench{Command{
    "bench", "prompt-processing and generation speed, with the memory-bandwidth roofline",
    "basalt bench -m MODEL [-p 128] [-n 64] [-r 3] [-d 0] [--threads N] [--json] [--mode "
    "pp-tg|ragged|chunked|streams|decoders|prefix|grammar]",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->required(), "GGUF model file or shipped model name")(
            "n-prompt,p", int_option("n-prompt", 0, 1 << 20)->default_value(128), "prompt tokens (pp)")(
            "n-gen,n", int_option("n-gen", 0, 1 << 20)->default_value(64), "generated tokens (tg)")(
            "repetitions,r", int_option("repetitions", 1, 1000)->default_value(3), "repetitions (median reported)")(
            "depth,d", int_option("depth", 0, 1 << 20)->default_value(0),
            "tokens already in the context when pp and tg start (decoded untimed before each)")(
            "json", po::bool_switch(), "print JSON")(
            "mode", po::value<std::string>()->default_value("pp-tg"),
            "pp-tg (llama-bench style), or an engine benchmark: ragged (ragged vs padded batch), chunked (streams' "
            "latency while a long prompt arrives), streams (aggregate decode at several concurrencies), decoders (one "
            "request's decode speed per decoding "
            "strategy), prefix (a prefix-cache hit's TTFT), grammar (the grammar sampler's mask, apply and accept per "
            "token on JSON Schemas; -m and --vocab name the vocabularies)")(
            "long-prompt", int_option("long-prompt", 1, 1 << 20)->default_value(2000),
            "chunked: the arriving prompt; prefix: the shared prefix")(
            "chunks", po::value<std::vector<long long>>()->multitoken(), "chunked: chunk sizes (default 0 256 64)")(
            "streams", po::value<std::vector<long long>>()->multitoken(), "streams: concurrencies (default 1 4 16)")(
            "decoders", po::value<std::vector<std::string>>()->multitoken(),
            "decoders: specs measured against plain sampling (default speculative:k=4)")(
            "draft", po::value<std::string>(), "decoders: the draft model (the bench model's own file drafts itself)")(
            "draft-adaptive", po::value<std::string>(),
            "decoders: on|off, the speculative decoder's adaptive draft length for specs that do not set "
            "adaptive (default: the decoder's own, on)")(
            "prompt", po::value<std::string>()->default_value("Once upon a time"),
            "decoders: prompt text (random ids when the model has no vocabulary)")(
            "steps", int_option("steps", 1, 1 << 20)->default_value(200), "grammar: tokens per walk")(
            "vocab", po::value<std::vector<std::string>>()->multitoken(),
            "grammar: more vocabularies (GGUF files with a tokenizer, vocab-only ones too) after the model's")(
            "walk-dir", po::value<std::string>(),
            "grammar: writes each schema (N.json) and walk (N.tokens) of the first round there, for "
            "bench/llama-cpp-grammar.cpp")(
            "step-budgets", po::value<std::vector<std::string>>()->multitoken(),
            "chunked: step-time budgets compared, each as --max-step-ms takes it (default auto); the chunk "
            "configurations run without one");
        add_max_step_option(d);
        add_session_options(d);
        add_admission_options(d);
    },
    run_bench}};

}  // namespace
}  // namespace basalt::cli
