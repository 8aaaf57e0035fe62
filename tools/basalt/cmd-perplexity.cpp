// `basalt perplexity -m MODEL -f FILE`: exp(mean negative log-likelihood) of a text, in non-overlapping chunks
// of n_ctx tokens; within each chunk every token after the first is predicted from the ones before it.
// --stream: the whole text as one sequence, fed --stream-chunk tokens at a time, every token after the first
// scored: with a streaming KV cache (--kv-cache sink:...) it runs past the context with bounded memory.
// --recompute W: the baseline for streaming caches: each token predicted from the (up to) W tokens before it, the
// window recomputed from scratch at positions 0.. for every token (--parallel windows per forward pass).
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli.hpp"
#include "engine-setup.hpp"
#include "moe-stats.hpp"
#include "progress-bar.hpp"

namespace basalt::cli {
namespace {

int run_perplexity(const po::variables_map& vm, const GlobalOptions& g) {
    const cpp::SessionParams sp = session_params(vm);  // a bad option value exits before anything loads
    const std::string path = vm["file"].as<std::string>();
    std::ifstream is(path, std::ios::binary);
    if (!is) {
        print_error("cannot open '" + path + "'");
        return kExitError;
    }
    std::stringstream ss;
    ss << is.rdbuf();
    const cpp::Runtime rt(runtime_options(g));
    const cpp::Model model(vm["model"].as<std::string>());
    std::vector<int32_t> ids;
    ids = model.tokenize(ss.str(), BASALT_TOKENIZE_ADD_SPECIAL);
    const cpp::Session session(rt, model, sp);
    const bool moe_stats = vm["moe-stats"].as<bool>();
    if (moe_stats && basalt_session_set_moe_stats(session.get(), 1) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    const size_t n_ctx = basalt_session_n_ctx(session.get());
    const size_t n_vocab = basalt_session_n_vocab(session.get());
    if (ids.size() < 2) {
        print_error("'" + path + "' has fewer than 2 tokens");
        return kExitError;
    }
    if (n_ctx < 2) {
        print_error("a context of " + std::to_string(n_ctx) +
                    " token scores nothing: perplexity needs --ctx 2 or more");
        return kExitUsage;
    }
    const size_t limit =
        vm["max-tokens"].as<long long>() > 0 ? static_cast<size_t>(vm["max-tokens"].as<long long>()) : ids.size();
    if (ids.size() > limit) ids.resize(limit);
    double nll = 0;
    size_t scored = 0, chunks = 0;
    // -log softmax(l)[target] in double.
    auto nll_of = [n_vocab](const float* l, int32_t target) {
        double mx = l[0];
        for (size_t v = 1; v < n_vocab; ++v) mx = std::max(mx, static_cast<double>(l[v]));
        double sum = 0;
        for (size_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(l[v]) - mx);
        return std::log(sum) + mx - l[target];
    };
    const bool stream = vm["stream"].as<bool>();
    const long long recompute = vm["recompute"].as<long long>();
    if (stream || recompute > 0) {
        if (stream && recompute > 0) {
            print_error("give --stream or --recompute, not both");
            return kExitUsage;
        }
        if (moe_stats) {
            print_error("--moe-stats reports the chunked run only, not --stream or --recompute");
            return kExitUsage;
        }
        const auto parallel = static_cast<size_t>(recompute > 0 ? vm["parallel"].as<long long>() : 1);
        const cpp::Session* use = &session;
        cpp::Session wide;
        if (recompute > 0) {  // a session holding `parallel` windows of W tokens
            cpp::SessionParams wp = sp;
            wp.n_ctx = static_cast<uint32_t>(recompute) * static_cast<uint32_t>(parallel);
            wp.n_seq_max = static_cast<uint32_t>(parallel);
            wp.n_batch = wp.n_ctx;
            wide = cpp::Session(rt, model, wp);
            use = &wide;
        }
        tools::ProgressBar bar("perplexity", ids.size(), tools::ProgressBar::Unit::kCount, "tokens");
        std::vector<int32_t> toks, pos, seq;
        std::vector<int8_t> want;
        auto decode = [&]() {
            basalt_batch b{};
            b.struct_size = sizeof(b);
            b.n_tokens = toks.size();
            b.tokens = toks.data();
            b.positions = pos.data();
            b.seq_ids = seq.data();
            b.want_logits = want.data();
            if (basalt_session_decode(use->get(), &b) == BASALT_OK) return true;
            print_error(basalt_last_error());
            return false;
        };
        auto row = [&](size_t r, const float** l) {
            if (basalt_session_logits(use->get(), r, l) == BASALT_OK) return true;
            print_error(basalt_last_error());
            return false;
        };
        if (stream) {
            const auto chunk = static_cast<size_t>(vm["stream-chunk"].as<long long>());
            for (size_t begin = 0; begin + 1 < ids.size(); begin += chunk) {
                const size_t len = std::min(chunk, ids.size() - 1 - begin);  // the last token predicts nothing
                toks.assign(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                            ids.begin() + static_cast<std::ptrdiff_t>(begin + len));
                pos.resize(len);
                for (size_t i = 0; i < len; ++i) pos[i] = static_cast<int32_t>(begin + i);
                seq.assign(len, 0);
                want.assign(len, 1);
                if (!decode()) return kExitError;
                for (size_t i = 0; i < len; ++i) {
                    const float* l = nullptr;
                    if (!row(i, &l)) return kExitError;
                    nll += nll_of(l, ids[begin + i + 1]);
                    ++scored;
                }
                ++chunks;
                bar.update(begin + len + 1);
            }
        } else {
            const auto W = static_cast<size_t>(recompute);
            for (size_t next = 1; next < ids.size();) {  // tokens next .. next + parallel - 1 are predicted
                toks.clear();
                pos.clear();
                seq.clear();
                want.clear();
                size_t n_win = 0;
                for (; n_win < parallel && next + n_win < ids.size(); ++n_win) {
                    const size_t target = next + n_win;
                    const size_t from = target > W ? target - W : 0;
                    basalt_session_seq_drop(use->get(), static_cast<int32_t>(n_win));
                    for (size_t i = from; i < target; ++i) {
                        toks.push_back(ids[i]);
                        pos.push_back(static_cast<int32_t>(i - from));
                        seq.push_back(static_cast<int32_t>(n_win));
                        want.push_back(i + 1 == target ? 1 : 0);
                    }
                }
                if (!decode()) return kExitError;
                for (size_t w = 0; w < n_win; ++w) {
                    const float* l = nullptr;
                    if (!row(w, &l)) return kExitError;
                    nll += nll_of(l, ids[next + w]);
                    ++scored;
                }
                next += n_win;
                ++chunks;
                bar.update(next);
            }
        }
        bar.finish();
        basalt_memory_plan mem{};
        mem.struct_size = sizeof(mem);
        basalt_session_memory(use->get(), &mem);
        const double ppl = std::exp(nll / static_cast<double>(scored));
        if (vm["json"].as<bool>()) {
            Json j(std::cout);
            j.begin_object();
            j.key("perplexity").value(std::to_string(ppl));
            j.key("tokens_scored").value(static_cast<long long>(scored));
            j.key("mode").value(stream ? "stream" : "recompute");
            j.key("window").value(static_cast<long long>(recompute > 0 ? recompute : 0));
            j.key("kv_bytes").value(static_cast<long long>(mem.kv_bytes));
            j.end_object();
            std::cout << '\n';
        } else {
            std::cout << "perplexity " << ppl << " over " << scored << " tokens ("
                      << (stream ? "streamed as one sequence"
                                 : "each from the " + std::to_string(recompute) + " tokens before it, recomputed")
                      << ", KV " << mem.kv_bytes << " bytes)\n";
        }
        return kExitOk;
    }
    tools::ProgressBar bar("perplexity", ids.size(), tools::ProgressBar::Unit::kCount, "tokens");
    for (size_t begin = 0; begin + 1 < ids.size(); begin += n_ctx) {
        const size_t len = std::min(n_ctx, ids.size() - begin);
        if (len < 2) break;
        basalt_session_seq_drop(session.get(), 0);
        std::vector<int32_t> pos(len), seq(len, 0);
        std::vector<int8_t> want(len, 1);
        want[len - 1] = 0;  // the last token predicts nothing inside the chunk
        for (size_t i = 0; i < len; ++i) pos[i] = static_cast<int32_t>(i);
        basalt_batch b{};
        b.struct_size = sizeof(b);
        b.n_tokens = len;
        b.tokens = ids.data() + begin;
        b.positions = pos.data();
        b.seq_ids = seq.data();
        b.want_logits = want.data();
        if (basalt_session_decode(session.get(), &b) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
        for (size_t i = 0; i + 1 < len; ++i) {
            const float* l = nullptr;
            if (basalt_session_logits(session.get(), i, &l) != BASALT_OK) {
                print_error(basalt_last_error());
                return kExitError;
            }
            double mx = l[0];
            for (size_t v = 1; v < n_vocab; ++v) mx = std::max(mx, static_cast<double>(l[v]));
            double sum = 0;
            for (size_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(l[v]) - mx);
            nll += std::log(sum) + mx - l[ids[begin + i + 1]];
            ++scored;
        }
        ++chunks;
        bar.update(begin + len);
    }
    bar.finish();
    const double ppl = std::exp(nll / static_cast<double>(scored));
    const nlohmann::json moe =
        moe_stats ? moe_stats_json(session.get(), model, sp.compute.moe_router) : nlohmann::json();
    if (vm["json"].as<bool>()) {
        if (moe_stats) {
            nlohmann::json out = {{"perplexity", std::to_string(ppl)},
                                  {"tokens_scored", scored},
                                  {"chunks", chunks},
                                  {"n_ctx", n_ctx},
                                  {"moe_stats", moe}};
            std::cout << out.dump() << '\n';
        } else {
            Json j(std::cout);
            j.begin_object();
            j.key("perplexity").value(std::to_string(ppl));
            j.key("tokens_scored").value(static_cast<long long>(scored));
            j.key("chunks").value(static_cast<long long>(chunks));
            j.key("n_ctx").value(static_cast<long long>(n_ctx));
            j.end_object();
            std::cout << '\n';
        }
    } else {
        std::cout << "perplexity " << ppl << " over " << scored << " tokens (" << chunks << " chunks of up to " << n_ctx
                  << ")\n";
        if (moe_stats) print_moe_stats(moe, std::cout);
    }
    return kExitOk;
}

const Registrar kPerplexity{Command{
    "perplexity", "perplexity of a text file",
    "basalt perplexity -m MODEL -f FILE [--ctx N] [--stream | --recompute W] [--json]",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->required(), "GGUF model file or shipped model name")(
            "file,f", po::value<std::string>()->required(), "UTF-8 text file")("json", po::bool_switch(), "print JSON")(
            "moe-stats", po::bool_switch(), "MoE routing statistics per layer (with --json: moe_stats)")(
            "stream", po::bool_switch(),
            "one sequence through the whole text (past the context with a streaming cache: --kv-cache sink:...)")(
            "stream-chunk", int_option("stream-chunk", 1, INT32_MAX)->default_value(64),
            "tokens per pass with --stream")("recompute", int_option("recompute", 0, INT32_MAX)->default_value(0),
                                             "baseline: each token from the W tokens before it, recomputed (0: off)")(
            "parallel", int_option("parallel", 1, 4096)->default_value(16), "windows per pass with --recompute")(
            "max-tokens", int_option("max-tokens", 0, INT64_MAX)->default_value(0),
            "score only the text's first N tokens (0: all)");
        add_session_options(d);
    },
    run_perplexity}};

}  // namespace
}  // namespace basalt::cli
