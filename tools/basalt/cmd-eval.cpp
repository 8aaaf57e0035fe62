// `basalt eval`: logits at every position of a token list, for verification against other engines.
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "engine-setup.hpp"
#include "moe-stats.hpp"

namespace basalt::cli {
namespace {

int run_eval(const po::variables_map& vm, const GlobalOptions& g) {
    const cpp::SessionParams sp = session_params(vm);  // a bad option value exits before anything loads
    std::vector<int32_t> ids;
    if (!parse_ids(vm["tokens"].as<std::string>(), ids)) return kExitUsage;
    if (ids.empty()) {
        print_error("--tokens is empty");
        return kExitUsage;
    }
    const cpp::Runtime rt(runtime_options(g));
    const cpp::Model model(vm["model"].as<std::string>());
    const cpp::Session session(rt, model, sp);
    const bool moe_stats = vm["moe-stats"].as<bool>();
    if (moe_stats && basalt_session_set_moe_stats(session.get(), 1) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    // Encoder-decoder models: the source first (one encoder pass); --tokens are then the decoder's tokens.
    std::vector<int32_t> source;
    if (vm.count("encoder-tokens") != 0U) {
        if (!parse_ids(vm["encoder-tokens"].as<std::string>(), source)) return kExitUsage;
        if (source.empty()) {
            print_error("--encoder-tokens is empty");
            return kExitUsage;
        }
        std::vector<int32_t> spos(source.size()), sseq(source.size(), 0);
        for (size_t i = 0; i < source.size(); ++i) spos[i] = static_cast<int32_t>(i);
        basalt_batch eb{};
        eb.struct_size = sizeof(eb);
        eb.n_tokens = source.size();
        eb.tokens = source.data();
        eb.positions = spos.data();
        eb.seq_ids = sseq.data();
        if (basalt_session_encode(session.get(), &eb) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
    } else if (const char* start = nullptr;
               basalt_model_meta(model.get(), "t5.decoder_start_token_id", &start) == BASALT_OK) {
        print_error(
            "this is an encoder-decoder model: give its source with --encoder-tokens (--tokens are the "
            "decoder's, starting with the decoder start token " +
            std::string(start) + ")");
        return kExitUsage;
    }
    const size_t n_vocab = basalt_session_n_vocab(session.get());
    std::vector<float> all;
    all.reserve(ids.size() * n_vocab);
    const bool seq = vm["seq"].as<bool>();
    const bool as_json = vm["json"].as<bool>();
    std::vector<int32_t> pos(ids.size()), seqs(ids.size(), 0);
    std::vector<int8_t> want(ids.size(), 1);
    for (size_t i = 0; i < ids.size(); ++i) pos[i] = static_cast<int32_t>(i);
    const size_t step = seq ? 1 : ids.size();
    for (size_t b = 0; b < ids.size(); b += step) {
        basalt_batch batch{};
        batch.struct_size = sizeof(batch);
        batch.n_tokens = std::min(step, ids.size() - b);
        batch.tokens = ids.data() + b;
        batch.positions = pos.data() + b;
        batch.seq_ids = seqs.data() + b;
        batch.want_logits = want.data() + b;
        if (basalt_session_decode(session.get(), &batch) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
        for (size_t r = 0; r < basalt_session_n_outputs(session.get()); ++r) {
            const float* l = nullptr;
            if (basalt_session_logits(session.get(), r, &l) != BASALT_OK) {
                print_error(basalt_last_error());
                return kExitError;
            }
            all.insert(all.end(), l, l + n_vocab);
        }
    }
    if (vm.count("logits") != 0U) {
        const std::string path = vm["logits"].as<std::string>();
        std::ofstream os(path, std::ios::binary);
        os.write(reinterpret_cast<const char*>(all.data()), static_cast<std::streamsize>(all.size() * sizeof(float)));
        if (!os) {
            print_error("cannot write '" + path + "'");
            return kExitError;
        }
        if (!as_json) std::cerr << "wrote " << ids.size() << " x " << n_vocab << " logits to " << path << '\n';
    }
    const nlohmann::json moe =
        moe_stats ? moe_stats_json(session.get(), model, sp.compute.moe_router) : nlohmann::json();
    nlohmann::json positions = nlohmann::json::array();
    for (size_t i = 0; i < ids.size(); ++i) {
        const float* row = all.data() + i * n_vocab;
        size_t best = 0;
        for (size_t v = 1; v < n_vocab; ++v) {
            if (row[v] > row[best]) best = v;
        }
        if (as_json) {
            positions.push_back({{"pos", i}, {"token", ids[i]}, {"argmax", best}, {"logit", row[best]}});
        } else {
            std::cout << "pos " << i << " token " << ids[i] << " -> argmax " << best << " (" << row[best] << ")\n";
        }
    }
    if (as_json) {
        nlohmann::json out;
        out["model"] = vm["model"].as<std::string>();
        out["n_vocab"] = n_vocab;
        out["seq"] = seq;
        out["tokens"] = ids;
        if (!source.empty()) out["encoder_tokens"] = source;
        out["positions"] = positions;
        out["logits_file"] =
            vm.count("logits") != 0U ? nlohmann::json(vm["logits"].as<std::string>()) : nlohmann::json();
        if (moe_stats) out["moe_stats"] = moe;
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    } else if (moe_stats) {
        print_moe_stats(moe, std::cout);
    }
    return kExitOk;
}

const Registrar kEval{Command{
    "eval", "logits at every position of a token list",
    "basalt eval -m MODEL --tokens 1,2,3 [--encoder-tokens 4,5,6] [--logits OUT.f32] [--seq] [--json] "
    "[--moe-router SPEC] [--moe-stats]",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->required(), "GGUF model file or shipped model name")(
            "tokens", po::value<std::string>()->required(),
            "token ids, comma-separated (encoder-decoder models: the decoder's, starting with its start token)")(
            "encoder-tokens", po::value<std::string>(),
            "encoder-decoder models (t5): the source token ids the encoder reads first, comma-separated")(
            "logits", po::value<std::string>(), "write raw little-endian f32 logits, one row per position")(
            "seq", po::bool_switch(), "feed one token per decode instead of one batch")(
            "json", po::bool_switch(),
            "print one JSON object instead of the lines: model, n_vocab, seq, tokens, positions (pos, token, argmax, "
            "logit) and logits_file (null without --logits)")(
            "moe-stats", po::bool_switch(),
            "MoE routing statistics per layer (assignments per expert, dropped, rerouted, imbalance); with --json "
            "in moe_stats");
        add_session_options(d);
    },
    run_eval}};

}  // namespace
}  // namespace basalt::cli
