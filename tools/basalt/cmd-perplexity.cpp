// `basalt perplexity -m MODEL -f FILE`: exp(mean negative log-likelihood) of a text, in non-overlapping chunks
// of n_ctx tokens; within each chunk every token after the first is predicted from the ones before it.
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "handles.hpp"
#include "progress-bar.hpp"

namespace basalt::cli {
namespace {

int run_perplexity(const po::variables_map& vm, const GlobalOptions& g) {
    const std::string path = vm["file"].as<std::string>();
    std::ifstream is(path, std::ios::binary);
    if (!is) {
        print_error("cannot open '" + path + "'");
        return kExitError;
    }
    std::stringstream ss;
    ss << is.rdbuf();
    Runtime rt(g);
    if (!rt.ok()) return kExitError;
    Model model(vm["model"].as<std::string>());
    if (!model.ok()) return kExitError;
    std::vector<int32_t> ids;
    if (!tokenize(model.get(), ss.str(), BASALT_TOKENIZE_ADD_SPECIAL, ids)) return kExitError;
    SessionStrings keep;
    const basalt_session_params sp = session_params(vm, keep);
    Session session(rt.get(), model.get(), sp);
    if (!session.ok()) return kExitError;
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
    double nll = 0;
    size_t scored = 0, chunks = 0;
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
    nlohmann::json moe;
    if (moe_stats && !moe_stats_json(session.get(), model.get(), keep.moe_router, moe)) return kExitError;
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
    "perplexity", "perplexity of a text file", "basalt perplexity -m MODEL -f FILE [--ctx N] [--json]",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->required(), "GGUF model file or shipped model name")(
            "file,f", po::value<std::string>()->required(), "UTF-8 text file")("json", po::bool_switch(), "print JSON")(
            "moe-stats", po::bool_switch(), "MoE routing statistics per layer (with --json: moe_stats)");
        add_session_options(d);
    },
    run_perplexity}};

}  // namespace
}  // namespace basalt::cli
