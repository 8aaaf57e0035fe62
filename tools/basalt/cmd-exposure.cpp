// `basalt exposure -m MODEL -f TEXT`: the exposure-bias diagnostic of docs/decoding.md. For N reference segments
// of the text (a prefix of P tokens and the L tokens after it) the model free-runs L tokens from the prefix (greedy
// or --samplers) and, at each step l, its loss on the reference token is measured twice: conditioned on the
// reference prefix (teacher forcing) and on its own l - 1 generated tokens. Their accumulated ratio is the
// accumulated-error figure of Arora et al. 2022 with the reference text standing in for the oracle; with --oracle the
// per-step error is their KL(oracle || model) on both kinds of context, as in the paper.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "engine-setup.hpp"

namespace basalt::cli {
namespace {

// Log-softmax of one logits row, in double.
void log_softmax(const float* logits, size_t n, std::vector<double>& out) {
    out.resize(n);
    double mx = -INFINITY;
    for (size_t v = 0; v < n; ++v) mx = std::max(mx, static_cast<double>(logits[v]));
    double sum = 0;
    for (size_t v = 0; v < n; ++v) sum += std::exp(static_cast<double>(logits[v]) - mx);
    const double lse = mx + std::log(sum);
    for (size_t v = 0; v < n; ++v) out[v] = static_cast<double>(logits[v]) - lse;
}

// KL(o || p) of two log-probability rows (terms with o = 0 contribute nothing).
double kl(const std::vector<double>& log_o, const std::vector<double>& log_p) {
    double s = 0;
    for (size_t v = 0; v < log_o.size(); ++v) {
        if (!std::isfinite(log_o[v])) continue;
        s += std::exp(log_o[v]) * (log_o[v] - log_p[v]);
    }
    return s;
}

// Decodes tokens as sequence 0 of a fresh cache from position 0, logits for rows [first_row, n) kept as
// log-probabilities in rows (one vector each). False after printing the library's message.
bool decode_rows(basalt_session* s, const std::vector<int32_t>& tokens, size_t first_row,
                 std::vector<std::vector<double>>& rows) {
    basalt_session_seq_drop(s, 0);
    const size_t n = tokens.size();
    std::vector<int32_t> pos(n), seq(n, 0);
    std::vector<int8_t> want(n, 0);
    for (size_t i = 0; i < n; ++i) {
        pos[i] = static_cast<int32_t>(i);
        want[i] = i >= first_row ? 1 : 0;
    }
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = n;
    b.tokens = tokens.data();
    b.positions = pos.data();
    b.seq_ids = seq.data();
    b.want_logits = want.data();
    if (basalt_session_decode(s, &b) != BASALT_OK) {
        print_error(basalt_last_error());
        return false;
    }
    const size_t nv = basalt_session_n_vocab(s);
    rows.resize(n - first_row);
    for (size_t r = 0; r < rows.size(); ++r) {
        const float* l = nullptr;
        if (basalt_session_logits(s, r, &l) != BASALT_OK) {
            print_error(basalt_last_error());
            return false;
        }
        log_softmax(l, nv, rows[r]);
    }
    return true;
}

// Appends one token to sequence 0 at position pos and returns its logits row as log-probabilities.
bool decode_one(basalt_session* s, int32_t token, int32_t pos, std::vector<float>& logits) {
    int32_t seq = 0;
    int8_t want = 1;
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = 1;
    b.tokens = &token;
    b.positions = &pos;
    b.seq_ids = &seq;
    b.want_logits = &want;
    const float* l = nullptr;
    if (basalt_session_decode(s, &b) != BASALT_OK || basalt_session_logits(s, 0, &l) != BASALT_OK) {
        print_error(basalt_last_error());
        return false;
    }
    logits.assign(l, l + basalt_session_n_vocab(s));
    return true;
}

// Per-step sums over the segments.
struct StepSums {
    double tf_nll = 0, fr_nll = 0, ctl_nll = 0, tf_kl = 0, fr_kl = 0;
    size_t same_prefix = 0, match = 0;
};

// A JSON number, or null where the value is not finite (a ratio over zero).
nlohmann::json num(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

int run_exposure(const po::variables_map& vm, const GlobalOptions& g) {
    const cpp::SessionParams sp = session_params(vm);  // a bad option value exits before anything loads
    const std::string path = vm["file"].as<std::string>();
    std::ifstream is(path, std::ios::binary);
    if (!is) {
        print_error("cannot open '" + path + "'");
        return kExitError;
    }
    std::stringstream ss;
    ss << is.rdbuf();
    const size_t P = static_cast<size_t>(vm["prefix"].as<long long>());
    const size_t L = static_cast<size_t>(vm["steps"].as<long long>());
    const size_t N = static_cast<size_t>(vm["segments"].as<long long>());
    const std::string chain_text = vm["samplers"].as<std::string>();
    const bool with_oracle = vm.count("oracle") != 0;

    const cpp::Runtime rt(runtime_options(g));
    const cpp::Model model(vm["model"].as<std::string>());
    cpp::Model oracle;
    if (with_oracle) oracle = cpp::Model(vm["oracle"].as<std::string>());
    std::vector<int32_t> ids;
    ids = model.tokenize(ss.str(), BASALT_TOKENIZE_ADD_SPECIAL);
    const size_t span = P + L;
    if (ids.size() < span) {
        print_error("'" + path + "' has " + std::to_string(ids.size()) +
                    " tokens, fewer than --prefix + --steps = " + std::to_string(span));
        return kExitError;
    }
    const cpp::Session session(rt, model, sp);
    cpp::Session osession;
    if (with_oracle) osession = cpp::Session(rt, oracle, sp);
    const size_t n_vocab = basalt_session_n_vocab(session.get());
    if (osession && basalt_session_n_vocab(osession.get()) != n_vocab) {
        print_error("the oracle's vocabulary has " + std::to_string(basalt_session_n_vocab(osession.get())) +
                    " tokens, the model's " + std::to_string(n_vocab) + ": they must share the tokenizer");
        return kExitError;
    }
    const size_t n_ctx = basalt_session_n_ctx(session.get());
    if (span > n_ctx || (osession && span > basalt_session_n_ctx(osession.get()))) {
        print_error("--prefix + --steps = " + std::to_string(span) + " positions do not fit the context of " +
                    std::to_string(n_ctx) + " (--ctx)");
        return kExitUsage;
    }
    basalt_sampler_chain* chain = nullptr;
    if (basalt_sampler_chain_create(rt.get(), chain_text.c_str(), &chain) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitUsage;
    }
    std::unique_ptr<basalt_sampler_chain, void (*)(basalt_sampler_chain*)> chain_owner(chain,
                                                                                       basalt_sampler_chain_destroy);

    std::vector<StepSums> sums(L);
    std::vector<std::vector<double>> tf_rows, fr_rows, ctl_rows, o_rows;
    std::vector<float> logits;
    std::vector<std::string> samples;  // the first free runs, for the text output
    const size_t room = ids.size() - span;
    for (size_t k = 0; k < N; ++k) {
        // Evenly spaced starts over the whole file (overlapping when N segments do not fit side by side).
        const size_t start = N > 1 ? room * k / (N - 1) : 0;
        const std::vector<int32_t> ref(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                       ids.begin() + static_cast<std::ptrdiff_t>(start + span));
        // Teacher forcing: rows P-1 .. P+L-2 of the reference predict ref[P .. P+L-1].
        const std::vector<int32_t> tf_in(ref.begin(), ref.end() - 1);
        if (!decode_rows(session.get(), tf_in, P - 1, tf_rows)) return kExitError;
        // Free running from the reference prefix; the chain sees the prefix as accepted history (as the engine's).
        if (basalt_sampler_chain_reset(chain) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
        for (size_t i = 0; i < P; ++i) {
            if (basalt_sampler_chain_accept(chain, ref[i]) != BASALT_OK) {
                print_error(basalt_last_error());
                return kExitError;
            }
        }
        const std::vector<int32_t> prefix(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(P));
        if (!decode_rows(session.get(), prefix, P - 1, fr_rows)) return kExitError;
        const float* l0 = nullptr;
        if (basalt_session_logits(session.get(), 0, &l0) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
        logits.assign(l0, l0 + n_vocab);
        std::vector<int32_t> gen;
        fr_rows.resize(L);
        for (size_t i = 0; i < L; ++i) {
            log_softmax(logits.data(), n_vocab, fr_rows[i]);
            int32_t y = -1;
            if (basalt_sampler_chain_sample(chain, logits.data(), n_vocab, &y) != BASALT_OK) {
                print_error(basalt_last_error());
                return kExitError;
            }
            gen.push_back(y);
            if (i + 1 < L && !decode_one(session.get(), y, static_cast<int32_t>(P + i), logits)) return kExitError;
        }
        bool same = true;  // the free run has reproduced the reference so far
        for (size_t i = 0; i < L; ++i) {
            StepSums& s = sums[i];
            const int32_t want = ref[P + i];
            s.tf_nll += -tf_rows[i][static_cast<size_t>(want)];
            s.fr_nll += -fr_rows[i][static_cast<size_t>(want)];
            if (same) s.same_prefix += 1;
            if (gen[i] == want) s.match += 1;
            same = same && gen[i] == want;
        }
        // Control: the same prefix followed by the reference continuation of another segment, a human-written
        // context as far from this segment's as the free run's (it separates misalignment from the model's own
        // prefix).
        if (N > 1) {
            const size_t other = room * ((k + 1) % N) / (N - 1) + P;
            std::vector<int32_t> ctl_in = prefix;
            ctl_in.insert(ctl_in.end(), ids.begin() + static_cast<std::ptrdiff_t>(other),
                          ids.begin() + static_cast<std::ptrdiff_t>(other + L - 1));
            if (!decode_rows(session.get(), ctl_in, P - 1, ctl_rows)) return kExitError;
            for (size_t i = 0; i < L; ++i) sums[i].ctl_nll += -ctl_rows[i][static_cast<size_t>(ref[P + i])];
        }
        if (osession) {
            if (!decode_rows(osession.get(), tf_in, P - 1, o_rows)) return kExitError;
            for (size_t i = 0; i < L; ++i) sums[i].tf_kl += kl(o_rows[i], tf_rows[i]);
            std::vector<int32_t> fr_in = prefix;
            fr_in.insert(fr_in.end(), gen.begin(), gen.end() - 1);
            if (!decode_rows(osession.get(), fr_in, P - 1, o_rows)) return kExitError;
            for (size_t i = 0; i < L; ++i) sums[i].fr_kl += kl(o_rows[i], fr_rows[i]);
        }
        if (samples.size() < 3) {
            std::string text;
            for (int32_t t : gen) text += model.piece(t, false);
            samples.push_back(text);
        }
    }

    // Per-step means, then the accumulated figures: R(l) = sum of the own-prefix errors up to l, eps(l) = the mean
    // teacher-forced error up to l, AccErr(l) = R(l) / eps(l), %ExAccErr(l) = 100 (R(l) - l eps(l)) / (l eps(l)).
    const double n_seg = static_cast<double>(N);
    nlohmann::json table = nlohmann::json::array();
    double cum_tf = 0, cum_fr = 0, cum_tf_kl = 0, cum_fr_kl = 0;
    for (size_t i = 0; i < L; ++i) {
        const StepSums& s = sums[i];
        const double l = static_cast<double>(i + 1);
        const double tf = s.tf_nll / n_seg, fr = s.fr_nll / n_seg;
        cum_tf += tf;
        cum_fr += fr;
        nlohmann::json step = {{"l", i + 1},
                               {"tf_nll", num(tf)},
                               {"fr_nll", num(fr)},
                               {"gap_nll", num(fr - tf)},
                               {"ctl_nll", N > 1 ? num(s.ctl_nll / n_seg) : nlohmann::json(nullptr)},
                               {"acc_err_nll", num(l * cum_fr / cum_tf)},
                               {"excess_nll_pct", num(100.0 * (cum_fr - cum_tf) / cum_tf)},
                               {"same_prefix", num(static_cast<double>(s.same_prefix) / n_seg)},
                               {"match", num(static_cast<double>(s.match) / n_seg)}};
        if (osession) {
            const double tk = s.tf_kl / n_seg, fk = s.fr_kl / n_seg;
            cum_tf_kl += tk;
            cum_fr_kl += fk;
            step["tf_kl"] = num(tk);
            step["fr_kl"] = num(fk);
            step["acc_err_kl"] = num(l * cum_fr_kl / cum_tf_kl);
            step["excess_kl_pct"] = num(100.0 * (cum_fr_kl - cum_tf_kl) / cum_tf_kl);
        }
        table.push_back(step);
    }

    if (vm["json"].as<bool>()) {
        nlohmann::json out;
        out["model"] = vm["model"].as<std::string>();
        out["oracle"] = with_oracle ? nlohmann::json(vm["oracle"].as<std::string>()) : nlohmann::json(nullptr);
        out["file"] = path;
        out["file_tokens"] = ids.size();
        out["prefix"] = P;
        out["steps"] = L;
        out["segments"] = N;
        out["samplers"] = chain_text;
        out["per_step"] = table;
        std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        return kExitOk;
    }
    std::cout << "exposure: " << N << " segments of '" << path << "' (" << ids.size() << " tokens), prefix " << P
              << ", " << L << " free-running steps, samplers '" << chain_text << "'"
              << (with_oracle ? ", oracle '" + vm["oracle"].as<std::string>() + "'" : std::string()) << "\n";
    std::cout << "   l  tf_nll  fr_nll     gap ctl_nll  same%  match%  AccErr  %ExAccErr";
    if (osession) std::cout << "   tf_kl   fr_kl  AccErr_kl  %ExAccErr_kl";
    std::cout << '\n' << std::fixed;
    auto col = [](const nlohmann::json& v, int width, int prec) {
        std::ostringstream os;
        os << std::fixed << std::setprecision(prec) << std::setw(width);
        if (v.is_null())
            os << "-";
        else
            os << v.get<double>();
        return os.str();
    };
    for (const auto& s : table) {
        std::cout << std::setw(4) << s["l"].get<size_t>() << col(s["tf_nll"], 8, 3) << col(s["fr_nll"], 8, 3)
                  << col(s["gap_nll"], 8, 3) << col(s["ctl_nll"], 8, 3)
                  << col(100.0 * s["same_prefix"].get<double>(), 7, 1) << col(100.0 * s["match"].get<double>(), 8, 1)
                  << col(s["acc_err_nll"], 8, 2) << col(s["excess_nll_pct"], 11, 1);
        if (osession) {
            std::cout << col(s["tf_kl"], 8, 3) << col(s["fr_kl"], 8, 3) << col(s["acc_err_kl"], 11, 2)
                      << col(s["excess_kl_pct"], 14, 1);
        }
        std::cout << '\n';
    }
    for (const auto& t : samples) std::cout << "free run: " << nlohmann::json(t).dump() << '\n';
    return kExitOk;
}

const Registrar kExposure{Command{
    "exposure", "exposure-bias diagnostic: loss on a reference text after the model's own prefix vs the reference's",
    "basalt exposure -m MODEL -f TEXT [--prefix P] [--steps L] [--segments N] [--samplers CHAIN] [--oracle MODEL] "
    "[--json]",
    [](po::options_description& d, po::positional_options_description&) {
        d.add_options()("model,m", po::value<std::string>()->default_value("target"),
                        "GGUF model file or shipped model name (the model that free-runs)")(
            "file,f", po::value<std::string>()->required(), "UTF-8 reference text")(
            "prefix", int_option("prefix", 1, INT32_MAX)->default_value(32), "reference tokens before free running")(
            "steps", int_option("steps", 1, INT32_MAX)->default_value(32), "free-running steps L per segment")(
            "segments", int_option("segments", 1, 1000000)->default_value(50),
            "reference segments, evenly spaced over the file")(
            "samplers", po::value<std::string>()->default_value("greedy"), "sampler chain of the free run")(
            "oracle", po::value<std::string>(),
            "oracle model (same tokenizer): per-step error KL(oracle || model), as Arora et al. 2022")(
            "json", po::bool_switch(), "print JSON: the settings and a per_step table of L entries");
        add_session_options(d);
    },
    run_exposure}};

}  // namespace
}  // namespace basalt::cli
