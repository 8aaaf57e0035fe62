// Engine benchmarks (`basalt bench --mode ...`), each measured side by side in one process with interleaved
// rounds:
//  ragged   one ragged batch of prompts {16, 64, 256, 1024} against the same rows padded to the longest (the
//           padded rows computed, as a dense batch would): time per real token;
//  chunked  4 streams decoding while a 2,000-token prompt arrives: the streams' p50/p99 inter-token latency
//           with chunking off, at the chunks given (no step-time budget) and under the step-time budgets given,
//           against no arrival, and the long request's TTFT against its prefill alone;
//  streams  aggregate decode tokens/s with 1, 4 and 16 concurrent requests;
//  prefix   time to first token of a request whose long prompt prefix (--long-prompt) another request computed
//           before (a prefix-cache hit) against the same request on an empty cache (a miss);
//  decoders one request's decode tokens/s with plain sampling and with each --decoders spec (speculative with
//           --draft), the ratio to plain, and the decoder's figures (acceptance rate).
#include "bench-engine.hpp"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine-setup.hpp"
#include "request-spec.hpp"

namespace basalt::cli {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

double median(std::vector<double> v) {
    return percentile(std::move(v), 0.5);
}

// Random prompt tokens (benchmark models have random weights; the ids only need to be valid).
std::vector<int32_t> random_tokens(size_t n, size_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(n_vocab) - 1);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = d(rng);
    return t;
}

bool check(basalt_status st) {
    if (st != BASALT_OK) print_error(basalt_last_error());
    return st == BASALT_OK;
}

// ---- ragged vs padded ----------------------------------------------------------------------------------------

int bench_ragged(const po::variables_map& vm, const cpp::Model& model, const cpp::Runtime& rt) {
    const std::vector<size_t> lengths = {16, 64, 256, 1024};
    const size_t longest = 1024, n_real = 16 + 64 + 256 + 1024;
    cpp::SessionParams sp = session_params(vm);
    sp.n_ctx = static_cast<uint32_t>(longest * lengths.size());
    sp.n_seq_max = static_cast<uint32_t>(lengths.size());
    if (sp.n_batch == 0) sp.n_batch = 512;
    const cpp::Session session(rt, model, sp);
    const size_t n_vocab = basalt_session_n_vocab(session.get());
    const int reps = static_cast<int>(vm["repetitions"].as<long long>());
    // One batch of every sequence's rows; padded: each sequence filled to `longest` with copies of its last token.
    auto make = [&](bool padded, std::vector<int32_t>& tok, std::vector<int32_t>& pos, std::vector<int32_t>& seq,
                    std::vector<int8_t>& want) {
        tok.clear(), pos.clear(), seq.clear(), want.clear();
        for (size_t s = 0; s < lengths.size(); ++s) {
            const auto t = random_tokens(lengths[s], n_vocab, static_cast<uint32_t>(s + 1));
            const size_t n = padded ? longest : lengths[s];
            for (size_t i = 0; i < n; ++i) {
                tok.push_back(t[std::min(i, t.size() - 1)]);
                pos.push_back(static_cast<int32_t>(i));
                seq.push_back(static_cast<int32_t>(s));
                want.push_back(i + 1 == lengths[s] ? 1 : 0);  // logits of each real last row
            }
        }
    };
    std::vector<double> t_ragged, t_padded;
    for (int r = 0; r < reps + 1; ++r) {  // round 0 warms up
        for (int variant = 0; variant < 2; ++variant) {
            const bool padded = (variant + r) % 2 == 1;  // alternate which goes first
            std::vector<int32_t> tok, pos, seq;
            std::vector<int8_t> want;
            make(padded, tok, pos, seq, want);
            for (size_t s = 0; s < lengths.size(); ++s) basalt_session_seq_drop(session.get(), static_cast<int32_t>(s));
            basalt_batch b{};
            b.struct_size = sizeof(b);
            b.n_tokens = tok.size();
            b.tokens = tok.data();
            b.positions = pos.data();
            b.seq_ids = seq.data();
            b.want_logits = want.data();
            const auto t0 = Clock::now();
            if (!check(basalt_session_decode(session.get(), &b))) return kExitError;
            const double s = since(t0);
            if (r > 0) (padded ? t_padded : t_ragged).push_back(s);
        }
    }
    const double rag = median(t_ragged), pad = median(t_padded);
    if (vm["json"].as<bool>()) {
        std::cout << "{\"mode\":\"ragged\",\"real_tokens\":" << n_real << ",\"padded_tokens\":" << longest * 4
                  << ",\"ragged_s\":" << rag << ",\"padded_s\":" << pad
                  << ",\"ragged_ms_per_real_token\":" << 1e3 * rag / n_real
                  << ",\"padded_ms_per_real_token\":" << 1e3 * pad / n_real << "}\n";
    } else {
        std::cout << std::fixed << std::setprecision(3) << "prompts {16, 64, 256, 1024}: " << n_real
                  << " real tokens; padded to 1024: " << longest * 4 << " rows (median of " << reps << ")\n"
                  << "  ragged  " << rag * 1e3 << " ms  " << 1e3 * rag / n_real << " ms per real token\n"
                  << "  padded  " << pad * 1e3 << " ms  " << 1e3 * pad / n_real << " ms per real token  (" << pad / rag
                  << "x)\n";
    }
    return kExitOk;
}

// ---- engine helpers -------------------------------------------------------------------------------------------

basalt_request* submit(basalt_engine* e, const std::vector<int32_t>& prompt, int32_t max_tokens) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.tokens = prompt.data();
    p.n_tokens = prompt.size();
    p.samplers = "greedy";
    p.max_tokens = max_tokens;
    p.seed = -1;
    p.flags = BASALT_REQUEST_IGNORE_EOG;  // random weights: an end token must not end a stream early
    basalt_request* r = nullptr;
    if (!check(basalt_engine_submit(e, &p, &r))) return nullptr;
    return r;
}

std::vector<double> itls(basalt_request* r) {
    size_t n = 0;
    basalt_request_itl(r, nullptr, 0, &n);
    std::vector<double> v(n);
    basalt_request_itl(r, v.data(), v.size(), &n);
    return v;
}

basalt_request_stats stats_of(basalt_request* r) {
    basalt_request_stats s{};
    s.struct_size = sizeof(s);
    basalt_request_stats_get(r, &s);
    return s;
}

// ---- chunked prefill ------------------------------------------------------------------------------------------

struct ChunkConfig {
    std::string label;
    bool streams = true, arrival = true;  // no arrival: the streams alone; solo: the long prompt alone
    uint32_t chunk = 0;
    double max_step_ms = -1, max_step_factor = 0;  // the step-time budget (-1: none)
    std::vector<double> itl, ttft;
};

// The configurations: the streams alone, the long prompt alone, each chunk without a step-time budget, each budget
// (whole prompts, cut by the budget alone).
std::vector<ChunkConfig> chunk_configs(const po::variables_map& vm) {
    std::vector<long long> chunks = {0, 256, 64};
    if (vm.count("chunks") != 0) chunks = vm["chunks"].as<std::vector<long long>>();
    std::vector<std::string> budgets = {"auto"};
    if (vm.count("step-budgets") != 0) budgets = vm["step-budgets"].as<std::vector<std::string>>();
    std::vector<ChunkConfig> configs(2);
    configs[0].label = "no arrival";
    configs[0].arrival = false;
    configs[1].label = "solo prompt";
    configs[1].streams = false;
    for (const long long c : chunks) {
        ChunkConfig cc;
        cc.label = c == 0 ? "chunk off" : "chunk " + std::to_string(c);
        cc.chunk = static_cast<uint32_t>(c);
        configs.push_back(cc);
    }
    for (const std::string& b : budgets) {
        ChunkConfig cc;
        cc.label = "budget " + b;
        max_step(b, cc.max_step_ms, cc.max_step_factor);
        configs.push_back(cc);
    }
    return configs;
}

int bench_chunked(const po::variables_map& vm, const cpp::Model& model, const cpp::Runtime& rt) {
    const size_t n_long = static_cast<size_t>(vm["long-prompt"].as<long long>());
    const int n_streams = 4, reps = static_cast<int>(vm["repetitions"].as<long long>());
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    basalt_model_describe(model.get(), &info);
    const size_t n_vocab = info.n_vocab;
    const auto long_prompt = random_tokens(n_long, n_vocab, 7);
    const int arrive_after = 8;  // stream tokens before the long prompt arrives
    std::vector<ChunkConfig> results = chunk_configs(vm);
    for (int r = 0; r < reps; ++r) {
        for (ChunkConfig& cfg : results) {
            cpp::EngineParams ep = engine_params(vm);
            ep.n_ctx = static_cast<uint32_t>(n_long + 64);
            ep.n_parallel = n_streams + 1;
            ep.prefill_chunk = cfg.chunk;
            ep.max_step_ms = cfg.max_step_ms;
            ep.max_step_factor = cfg.max_step_factor;
            cpp::Engine engine(rt, model, ep);
            if (!cfg.streams) {  // the long prompt's prefill alone, on an idle engine
                basalt_request* big = submit(engine.get(), long_prompt, 1);
                if (big == nullptr || !check(basalt_engine_run(engine.get()))) return kExitError;
                cfg.ttft.push_back(stats_of(big).ttft_ms);
                basalt_request_free(big);
                continue;
            }
            std::vector<basalt_request*> streams;
            for (int s = 0; s < n_streams; ++s) {
                streams.push_back(submit(engine.get(), random_tokens(16, n_vocab, 100 + s), 1 << 20));
                if (streams.back() == nullptr) return kExitError;
            }
            basalt_request* big = nullptr;
            size_t base_tokens = 0, steps_after = 0, active = 1;
            bool long_done = false, arrived = false;
            while (active > 0) {
                if (!check(basalt_engine_step(engine.get(), &active))) return kExitError;
                const uint64_t made = stats_of(streams[0]).generated_tokens;
                if (!arrived && made >= arrive_after) {
                    arrived = true;
                    base_tokens = made;
                    if (cfg.arrival) {
                        big = submit(engine.get(), long_prompt, 1);
                        if (big == nullptr) return kExitError;
                    }
                    steps_after = 0;
                    if (!cfg.arrival) long_done = true;
                }
                if (big != nullptr && !long_done && basalt_request_finish_reason(big) != BASALT_FINISH_NONE) {
                    long_done = true;
                    steps_after = 0;
                }
                // Keep the streams going 8 tokens past the long request's first token, then cancel them.
                if (long_done && ++steps_after > 8 + (cfg.arrival ? 0 : 24)) {
                    for (auto* s : streams) basalt_request_cancel(s);
                }
            }
            for (auto* s : streams) {
                const auto l = itls(s);
                // ITL k separates tokens k and k+1: keep those from the arrival on.
                for (size_t k = base_tokens > 0 ? base_tokens - 1 : 0; k < l.size(); ++k) {
                    cfg.itl.push_back(l[k]);
                }
                basalt_request_free(s);
            }
            if (big != nullptr) {
                cfg.ttft.push_back(stats_of(big).ttft_ms);
                basalt_request_free(big);
            }
        }
    }
    const double base_p99 = percentile(results[0].itl, 0.99);
    const double solo_ttft = median(results[1].ttft);
    const bool json = vm["json"].as<bool>();
    if (!json) {
        std::cout << n_streams << " streams decoding; a " << n_long << "-token prompt arrives after " << arrive_after
                  << " tokens (" << reps << " rounds, configurations interleaved)\n"
                  << std::left << std::setw(14) << "config" << std::right << std::setw(10) << "ITL p50" << std::setw(10)
                  << "ITL p99" << std::setw(12) << "p99/base" << std::setw(13) << "long TTFT" << std::setw(12)
                  << "TTFT/solo\n";
    }
    for (const auto& res : results) {
        const double p50 = percentile(res.itl, 0.5), p99 = percentile(res.itl, 0.99);
        const double ttft = res.ttft.empty() ? 0 : median(res.ttft);
        if (json) {
            std::cout << "{\"mode\":\"chunked\",\"config\":\"" << res.label << "\",\"itl_p50_ms\":" << p50
                      << ",\"itl_p99_ms\":" << p99 << ",\"p99_vs_baseline\":" << p99 / base_p99
                      << ",\"long_ttft_ms\":" << ttft << ",\"ttft_vs_solo\":" << ttft / solo_ttft
                      << ",\"itl_samples\":" << res.itl.size() << "}\n";
        } else {
            std::ostringstream line;
            line << std::left << std::setw(14) << res.label << std::right << std::fixed;
            if (res.streams) {
                line << std::setprecision(1) << std::setw(8) << p50 << "ms" << std::setw(8) << p99 << "ms"
                     << std::setw(11) << std::setprecision(2) << p99 / base_p99 << "x";
            } else {
                line << std::setw(10) << "-" << std::setw(10) << "-" << std::setw(12) << "-";
            }
            if (res.ttft.empty()) {
                line << std::setw(13) << "-" << std::setw(12) << "-";
            } else {
                line << std::setprecision(1) << std::setw(11) << ttft << "ms" << std::setw(11) << std::setprecision(2)
                     << ttft / solo_ttft << "x";
            }
            std::cout << line.str() << "\n";
        }
    }
    return kExitOk;
}

// ---- concurrent streams ---------------------------------------------------------------------------------------

int bench_streams(const po::variables_map& vm, const cpp::Model& model, const cpp::Runtime& rt) {
    std::vector<long long> counts = {1, 4, 16};
    if (vm.count("streams") != 0) counts = vm["streams"].as<std::vector<long long>>();
    const auto n_gen = static_cast<int32_t>(vm["n-gen"].as<long long>());
    const int reps = static_cast<int>(vm["repetitions"].as<long long>());
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    basalt_model_describe(model.get(), &info);
    std::vector<std::vector<double>> tps(counts.size());
    for (int r = 0; r < reps; ++r) {
        for (size_t c = 0; c < counts.size(); ++c) {
            const auto n = static_cast<uint32_t>(counts[c]);
            cpp::EngineParams ep = engine_params(vm);
            ep.n_ctx = static_cast<uint32_t>(16 + n_gen + 16);
            ep.n_parallel = n;
            cpp::Engine engine(rt, model, ep);
            std::vector<basalt_request*> reqs;
            for (uint32_t i = 0; i < n; ++i) {
                reqs.push_back(submit(engine.get(), random_tokens(16, info.n_vocab, 200 + i), n_gen));
                if (reqs.back() == nullptr) return kExitError;
            }
            // Time the decode phase: from the step after every prompt is in to the end.
            size_t active = 1;
            if (!check(basalt_engine_step(engine.get(), &active))) return kExitError;  // the prefills (+1 token)
            uint64_t before = 0;
            for (auto* q : reqs) before += stats_of(q).generated_tokens;
            const auto t0 = Clock::now();
            while (active > 0) {
                if (!check(basalt_engine_step(engine.get(), &active))) return kExitError;
            }
            const double s = since(t0);
            uint64_t after = 0;
            for (auto* q : reqs) {
                after += stats_of(q).generated_tokens;
                basalt_request_free(q);
            }
            tps[c].push_back(static_cast<double>(after - before) / s);
        }
    }
    const double one = median(tps[0]);
    for (size_t c = 0; c < counts.size(); ++c) {
        const double t = median(tps[c]);
        if (vm["json"].as<bool>()) {
            std::cout << "{\"mode\":\"streams\",\"streams\":" << counts[c] << ",\"tokens_per_s\":" << t
                      << ",\"vs_one\":" << t / one << "}\n";
        } else {
            std::cout << std::setw(3) << counts[c] << " streams  " << std::fixed << std::setprecision(1) << std::setw(8)
                      << t << " t/s aggregate  (" << std::setprecision(2) << t / one << "x one stream)\n";
        }
    }
    return kExitOk;
}

}  // namespace

// ---- decoders ---------------------------------------------------------------------------------------------------

int bench_decoders(const po::variables_map& vm, const cpp::Model& model, const cpp::Runtime& rt) {
    std::vector<std::string> specs = {"sample"};
    if (vm.count("decoders") != 0) {
        for (const auto& d : vm["decoders"].as<std::vector<std::string>>()) specs.push_back(d);
    } else {
        specs.push_back("speculative:k=4");
    }
    for (size_t d = 1; d < specs.size(); ++d) specs[d] = with_draft_adaptive(specs[d], draft_adaptive(vm));
    cpp::Model second;
    if (vm.count("draft") != 0) second = cpp::Model(vm["draft"].as<std::string>(), &rt);
    const auto n_gen = static_cast<int32_t>(vm["n-gen"].as<long long>());
    const int reps = static_cast<int>(vm["repetitions"].as<long long>());
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    basalt_model_describe(model.get(), &info);
    // A text prompt when the model has a vocabulary (trained pairs accept more on real text), else random ids.
    std::vector<int32_t> prompt;
    const std::string text = vm["prompt"].as<std::string>();
    size_t n_text = 0;
    if (!text.empty() && basalt_tokenize(model.get(), text.data(), text.size(), BASALT_TOKENIZE_ADD_SPECIAL, nullptr, 0,
                                         &n_text) == BASALT_ERR_CAPACITY) {
        prompt.resize(n_text);
        basalt_tokenize(model.get(), text.data(), text.size(), BASALT_TOKENIZE_ADD_SPECIAL, prompt.data(),
                        prompt.size(), &n_text);
    }
    if (prompt.empty()) prompt = random_tokens(16, info.n_vocab, 300);
    struct Row {
        std::vector<double> tps;
        std::vector<std::pair<std::string, double>> figures;
    };
    std::vector<Row> rows(specs.size());
    for (int r = 0; r < reps; ++r) {
        for (size_t d = 0; d < specs.size(); ++d) {  // interleaved: every decoder once per round
            cpp::EngineParams ep = engine_params(vm);
            ep.n_ctx = static_cast<uint32_t>(prompt.size() + n_gen + 80);
            ep.second_model = second.get();
            cpp::Engine engine(rt, model, ep);
            basalt_request_params p{};
            p.struct_size = sizeof(p);
            p.tokens = prompt.data();
            p.n_tokens = prompt.size();
            p.samplers = "greedy";
            p.decoder = specs[d].c_str();
            p.max_tokens = n_gen;
            p.seed = -1;
            p.flags = BASALT_REQUEST_IGNORE_EOG;
            const cpp::Request q = engine.submit(p);
            if (!check(basalt_engine_run(engine.get()))) return kExitError;
            if (basalt_request_finish_reason(q.get()) == BASALT_FINISH_ERROR) {
                print_error(basalt_request_error(q.get()));
                return kExitError;
            }
            rows[d].tps.push_back(stats_of(q.get()).tokens_per_s);
            rows[d].figures.clear();
            const char* name = nullptr;
            double value = 0;
            for (size_t i = 0; basalt_request_decoder_stat(q.get(), i, &name, &value) == BASALT_OK; ++i)
                rows[d].figures.emplace_back(name, value);
        }
    }
    const double plain = median(rows[0].tps);
    for (size_t d = 0; d < specs.size(); ++d) {
        const double t = median(rows[d].tps);
        std::vector<double> ratios;
        for (int r = 0; r < reps; ++r)
            ratios.push_back(rows[d].tps[static_cast<size_t>(r)] / rows[0].tps[static_cast<size_t>(r)]);
        if (vm["json"].as<bool>()) {
            std::cout << "{\"mode\":\"decoders\",\"decoder\":\"" << specs[d] << "\",\"tokens_per_s\":" << t
                      << ",\"vs_plain\":" << median(ratios);
            for (const auto& [k, v] : rows[d].figures) std::cout << ",\"" << k << "\":" << v;
            std::cout << "}\n";
        } else {
            std::cout << std::left << std::setw(34) << specs[d] << std::right << std::fixed << std::setprecision(1)
                      << std::setw(9) << t << " t/s  (" << std::setprecision(2) << median(ratios) << "x plain";
            for (const auto& [k, v] : rows[d].figures) {
                if (k == "acceptance_rate" || k == "tokens_per_verify") std::cout << ", " << k << " " << v;
            }
            std::cout << ")\n";
        }
    }
    (void)plain;
    return kExitOk;
}

// ---- prefix cache -----------------------------------------------------------------------------------------------

int bench_prefix(const po::variables_map& vm, const cpp::Model& model, const cpp::Runtime& rt) {
    const auto n_prefix = static_cast<size_t>(vm["long-prompt"].as<long long>());
    const int reps = static_cast<int>(vm["repetitions"].as<long long>());
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    basalt_model_describe(model.get(), &info);
    const std::vector<int32_t> prefix = random_tokens(n_prefix, info.n_vocab, 400);
    auto with_suffix = [&](uint32_t seed) {
        std::vector<int32_t> t = prefix;
        for (int32_t x : random_tokens(16, info.n_vocab, seed)) t.push_back(x);
        return t;
    };
    std::vector<double> miss, hit, ratio;
    uint64_t cached = 0;
    for (int r = 0; r < reps; ++r) {
        cpp::EngineParams ep = engine_params(vm);
        ep.n_ctx = static_cast<uint32_t>(n_prefix + 16 + 8);
        cpp::Engine engine(rt, model, ep);
        // The miss: the first request on an empty cache. The hit: another suffix after the same prefix.
        double ttft[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            basalt_request* q = submit(engine.get(), with_suffix(500 + static_cast<uint32_t>(r * 2 + k)), 1);
            if (q == nullptr || !check(basalt_engine_run(engine.get()))) return kExitError;
            const basalt_request_stats s = stats_of(q);
            ttft[k] = s.ttft_ms;
            if (k == 1) cached = s.cached_tokens;
            basalt_request_free(q);
        }
        miss.push_back(ttft[0]);
        hit.push_back(ttft[1]);
        ratio.push_back(ttft[1] / ttft[0]);
    }
    if (vm["json"].as<bool>()) {
        std::cout << "{\"mode\":\"prefix\",\"prefix_tokens\":" << n_prefix << ",\"cached_tokens\":" << cached
                  << ",\"ttft_miss_ms\":" << median(miss) << ",\"ttft_hit_ms\":" << median(hit)
                  << ",\"hit_vs_miss\":" << median(ratio) << "}\n";
    } else {
        std::cout << std::fixed << std::setprecision(2) << "prefix " << n_prefix << " tokens + 16: TTFT miss "
                  << median(miss) << " ms, hit " << median(hit) << " ms (" << cached << " tokens reused), hit/miss "
                  << std::setprecision(3) << median(ratio) << " (median of " << reps << " interleaved rounds)\n";
    }
    return kExitOk;
}

int run_engine_bench(const po::variables_map& vm, const GlobalOptions& g) {
    using Bench = int (*)(const po::variables_map&, const cpp::Model&, const cpp::Runtime&);
    const std::string mode = vm["mode"].as<std::string>();
    const Bench run_mode = mode == "ragged"     ? bench_ragged
                           : mode == "chunked"  ? bench_chunked
                           : mode == "streams"  ? bench_streams
                           : mode == "decoders" ? bench_decoders
                           : mode == "prefix"   ? bench_prefix
                                                : nullptr;
    if (run_mode == nullptr) {
        throw UsageError("basalt bench: unknown --mode '" + mode +
                         "' (pp-tg, ragged, chunked, streams, decoders, prefix, grammar)");
    }
    const cpp::Runtime rt(runtime_options(g));
    const cpp::Model model(vm["model"].as<std::string>(), &rt);
    return run_mode(vm, model, rt);
}

}  // namespace basalt::cli
