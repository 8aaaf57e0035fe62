// Beam search (decoder 'beam') through the engine's C API: its n-best hypotheses and scores against a textbook
// beam search written here over log-probabilities recomputed from scratch for every prefix (a fresh session
// sequence per prefix, float64 log-softmax), for widths, length penalties, early_stopping modes, end tokens,
// max_tokens and the context limit; width 1 against greedy sampling; beams sharing an engine's batches with other
// requests; and the parameters it refuses.
#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::last_error;

namespace {

// The golden prompt of tiny-llama (README of the golden data); tests use prefixes of it.
const std::vector<int32_t> kGolden = {1,   472, 294, 373, 501, 360, 310, 308, 289, 347, 260,
                                      312, 424, 321, 296, 334, 323, 312, 504, 334, 484, 261};

std::vector<int32_t> prefix(size_t n) {
    return {kGolden.begin(), kGolden.begin() + static_cast<std::ptrdiff_t>(n)};
}

struct Setting {
    uint32_t width = 4;
    double alpha = 1.0;
    std::string early = "false";  // true | false | never
    uint32_t n_best = 1;
    int32_t max_tokens = 16;
    std::vector<int32_t> stop_tokens;
    uint32_t n_ctx = 128;
    double repeat = 1.0;  // != 1: the chain is penalties:repeat=R,last_n=64;greedy (each beam's own history)

    std::string chain() const {
        if (repeat == 1.0) return "greedy";
        std::ostringstream s;
        s << "penalties:repeat=" << repeat << ",last_n=64;greedy";
        return s.str();
    }
    std::string spec() const {
        std::ostringstream s;
        s << "beam:width=" << width << ",length_penalty=" << alpha << ",early_stopping=" << early
          << ",n_best=" << n_best;
        return s.str();
    }
};

struct Hyp {
    std::vector<int32_t> tokens;
    double score = 0;
};

struct RefResult {
    std::vector<Hyp> best;  // n_best, best first
    int rounds = 0;
    int closed = 0;              // hypotheses closed by an end token
    bool stopped_early = false;  // ended by early_stopping, not by the length limit
    bool best_ended = false;     // the best hypothesis was closed by an end token
    std::map<int32_t, int> top;  // how often each token ranked among a round's W best candidates
};

// Next-token log-probabilities of any prefix, each computed from nothing: the prefix alone on a fresh sequence.
class Oracle {
  public:
    explicit Oracle(basalt_runtime* rt, const std::string& path) {
        REQUIRE(basalt_model_load(rt, path.c_str(), nullptr, &model_) == BASALT_OK);
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = 256;
        p.n_seq_max = 1;
        p.n_threads = 2;
        const basalt_status st = basalt_session_create(rt, model_, &p, &session_);
        INFO(last_error());
        REQUIRE(st == BASALT_OK);
        n_vocab_ = basalt_session_n_vocab(session_);
    }
    ~Oracle() {
        basalt_session_free(session_);
        basalt_model_free(model_);
    }
    Oracle(const Oracle&) = delete;
    Oracle& operator=(const Oracle&) = delete;

    size_t n_vocab() const { return n_vocab_; }
    const basalt_model* model() const { return model_; }

    // The last row's logits of tokens decoded from position 0 of an emptied sequence.
    const std::vector<float>& logits(const std::vector<int32_t>& tokens) {
        auto it = memo_.find(tokens);
        if (it != memo_.end()) return it->second;
        uint32_t held = 0;
        REQUIRE(basalt_session_seq_length(session_, 0, &held) == BASALT_OK);
        if (held > 0) REQUIRE(basalt_session_seq_drop(session_, 0) == BASALT_OK);
        const std::vector<float> rows = test::decode_rows(session_, tokens, 0, 0);
        std::vector<float> last(rows.end() - static_cast<std::ptrdiff_t>(n_vocab_), rows.end());
        return memo_.emplace(tokens, std::move(last)).first->second;
    }

    // log_softmax (float64) of the next-token logits after prompt + generated, the last 64 tokens of prompt +
    // generated penalised as the penalties sampler does with repeat (llama.cpp's rule; the engine accepts the
    // prompt into the chain, so it is history too).
    std::vector<double> logprobs(const std::vector<int32_t>& prompt, const std::vector<int32_t>& generated,
                                 double repeat = 1.0) {
        std::vector<int32_t> all = prompt;
        all.insert(all.end(), generated.begin(), generated.end());
        const std::vector<float>& l = logits(all);
        std::vector<double> x(l.begin(), l.end());
        if (repeat != 1.0) {
            std::vector<bool> seen(n_vocab_, false);
            const size_t from = all.size() > 64 ? all.size() - 64 : 0;
            for (size_t i = from; i < all.size(); ++i) seen[static_cast<size_t>(all[i])] = true;
            for (size_t v = 0; v < n_vocab_; ++v) {
                // The sampler works in float: penalise the float logit as it does.
                if (seen[v])
                    x[v] = l[v] > 0 ? double{l[v] / static_cast<float>(repeat)}
                                    : double{l[v] * static_cast<float>(repeat)};
            }
        }
        const double mx = *std::max_element(x.begin(), x.end());
        double sum = 0;
        for (double v : x) sum += std::exp(v - mx);
        for (double& v : x) v = v - mx - std::log(sum);
        return x;
    }

    // Greedy continuation (argmax, ties: lower id) of n tokens.
    std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, size_t n) {
        std::vector<int32_t> out;
        for (size_t i = 0; i < n; ++i) {
            const auto lp = logprobs(prompt, out);
            out.push_back(static_cast<int32_t>(std::max_element(lp.begin(), lp.end()) - lp.begin()));
        }
        return out;
    }

  private:
    basalt_model* model_ = nullptr;
    basalt_session* session_ = nullptr;
    size_t n_vocab_ = 0;
    std::map<std::vector<int32_t>, std::vector<float>> memo_;
};

// Textbook beam search with Hugging Face's rules (docs/decoding.md): full candidate lists, no cache.
RefResult reference(Oracle& o, const std::vector<int32_t>& prompt, const Setting& s) {
    const size_t w = s.width;
    const int room = static_cast<int>(s.n_ctx) - static_cast<int>(prompt.size()) + 1;
    const int max_len = s.max_tokens < 0 ? room : std::min(s.max_tokens, room);
    auto is_eog = [&](int32_t t) {
        return basalt_token_is_eog(o.model(), t) != 0 ||
               std::find(s.stop_tokens.begin(), s.stop_tokens.end(), t) != s.stop_tokens.end();
    };
    struct Kept {
        Hyp h;
        bool ended;
    };
    std::vector<Kept> fin;
    auto add = [&](const std::vector<int32_t>& toks, double sum, int len, bool ended) {
        const double score = sum / std::pow(double(len), s.alpha);
        if (fin.size() == w && !(score > fin.back().h.score)) return;
        if (fin.size() == w) fin.pop_back();
        auto at = std::find_if(fin.begin(), fin.end(), [&](const Kept& k) { return k.h.score < score; });
        fin.insert(at, Kept{{toks, score}, ended});
    };
    struct Beam {
        std::vector<int32_t> toks;
        double sum;
    };
    struct Cand {
        double sum;
        size_t beam;
        int32_t tok;
    };
    RefResult r;
    std::vector<Beam> beams = {{{}, 0.0}};
    for (int len = 1;; ++len) {
        r.rounds += 1;
        std::vector<Cand> all;
        for (size_t b = 0; b < beams.size(); ++b) {
            const auto lp = o.logprobs(prompt, beams[b].toks, s.repeat);
            for (size_t t = 0; t < lp.size(); ++t) all.push_back({beams[b].sum + lp[t], b, static_cast<int32_t>(t)});
        }
        std::sort(all.begin(), all.end(), [](const Cand& a, const Cand& b) {
            if (a.sum != b.sum) return a.sum > b.sum;
            if (a.beam != b.beam) return a.beam < b.beam;
            return a.tok < b.tok;
        });
        all.resize(2 * w);
        std::vector<Beam> next;
        for (size_t rank = 0; rank < all.size() && next.size() < w; ++rank) {
            const Cand& c = all[rank];
            if (rank < w) r.top[c.tok] += 1;
            if (is_eog(c.tok)) {
                if (rank < w) {
                    add(beams[c.beam].toks, c.sum, len, true);
                    r.closed += 1;
                }
                continue;
            }
            Beam n = beams[c.beam];
            n.toks.push_back(c.tok);
            n.sum = c.sum;
            next.push_back(n);
        }
        if (next.empty() || len >= max_len) {
            for (const Beam& n : next) add(n.toks, n.sum, len, false);
            break;
        }
        if (fin.size() == w) {
            bool done = s.early == "true";
            if (!done) {
                const int bound = s.early == "never" && s.alpha > 0 ? max_len : len;
                done = fin.back().h.score >= next.front().sum / std::pow(double(bound), s.alpha);
            }
            if (done) {
                r.stopped_early = true;
                break;
            }
        }
        beams = next;
    }
    for (size_t i = 0; i < std::min<size_t>(s.n_best, fin.size()); ++i) r.best.push_back(fin[i].h);
    r.best_ended = !fin.empty() && fin[0].ended;
    return r;
}

using test::Engine;
using test::Request;

basalt_engine_params engine_params(uint32_t n_ctx, uint32_t n_seq, uint32_t parallel = 1) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_ctx = n_ctx;
    p.n_parallel = parallel;
    p.n_seq_max = n_seq;
    p.n_threads = 2;
    return p;
}

struct Job {
    std::vector<int32_t> prompt;
    std::string decoder;
    std::string samplers = "greedy";
    int32_t max_tokens = 16;
    std::vector<int32_t> stop_tokens;
};

basalt_request_params request_params(const Job& j) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.tokens = j.prompt.data();
    p.n_tokens = j.prompt.size();
    p.samplers = j.samplers.c_str();
    p.decoder = j.decoder.c_str();
    p.max_tokens = j.max_tokens;
    p.seed = -1;
    p.stop_tokens = j.stop_tokens.empty() ? nullptr : j.stop_tokens.data();
    p.n_stop_tokens = j.stop_tokens.size();
    return p;
}

// What a finished request gave: streamed tokens, every hypothesis with its score, its decoder figures.
struct Outcome {
    int32_t finish = BASALT_FINISH_NONE;
    std::vector<int32_t> streamed;
    std::vector<Hyp> hyps;
    std::map<std::string, double> stats;
    uint64_t engine_steps = 0;  // steps of the engine it ran alone in (solo)
};

Outcome outcome(basalt_request* r) {
    Outcome o;
    o.finish = basalt_request_finish_reason(r);
    INFO(basalt_request_error(r));
    REQUIRE(o.finish != BASALT_FINISH_ERROR);
    for (;;) {
        int32_t t[64];
        size_t n = 0, n_text = 0;
        REQUIRE(basalt_request_read(r, t, 64, &n, nullptr, 0, &n_text) == BASALT_OK);
        if (n == 0) break;
        o.streamed.insert(o.streamed.end(), t, t + n);
    }
    for (size_t h = 0; h < basalt_request_n_hypotheses(r); ++h) {
        size_t n = 0;
        float score = 0;
        REQUIRE(basalt_request_hypothesis(r, h, nullptr, 0, &n, &score) == BASALT_OK);
        Hyp y;
        y.tokens.resize(n);
        REQUIRE(basalt_request_hypothesis(r, h, y.tokens.data(), n, &n, &score) == BASALT_OK);
        y.score = score;
        o.hyps.push_back(y);
    }
    const char* name = nullptr;
    double value = 0;
    for (size_t i = 0; basalt_request_decoder_stat(r, i, &name, &value) == BASALT_OK; ++i) o.stats[name] = value;
    return o;
}

// One request alone in an engine sized for it.
Outcome solo(basalt_runtime* rt, const basalt_model* m, const Job& j, uint32_t n_ctx, uint32_t n_seq) {
    Engine e(rt, m, engine_params(n_ctx, n_seq));
    Request r;
    const basalt_request_params p = request_params(j);
    const basalt_status st = basalt_engine_submit(e.e, &p, &r.r);
    INFO(last_error());
    REQUIRE(st == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    Outcome o = outcome(r.r);
    basalt_engine_stats s{};
    s.struct_size = sizeof(s);
    REQUIRE(basalt_engine_stats_get(e.e, &s) == BASALT_OK);
    o.engine_steps = s.steps;
    return o;
}

Outcome run_beam(basalt_runtime* rt, const basalt_model* m, const std::vector<int32_t>& prompt, const Setting& s) {
    Job j;
    j.prompt = prompt;
    j.decoder = s.spec();
    j.samplers = s.chain();
    j.max_tokens = s.max_tokens;
    j.stop_tokens = s.stop_tokens;
    return solo(rt, m, j, s.n_ctx, s.width);
}

// The plugin's hypotheses, scores and figures against the reference's.
void compare(const Outcome& got, const RefResult& want, const Setting& s) {
    INFO(s.spec() << " chain " << s.chain() << " max_tokens " << s.max_tokens << " n_ctx " << s.n_ctx << " stop tokens "
                  << s.stop_tokens.size());
    REQUIRE(got.hyps.size() == want.best.size());
    for (size_t h = 0; h < want.best.size(); ++h) {
        CAPTURE(h);
        CHECK(got.hyps[h].tokens == want.best[h].tokens);
        CHECK(got.hyps[h].score == Approx(want.best[h].score).margin(1e-4));
    }
    CHECK(got.streamed == want.best[0].tokens);
    CHECK(got.stats.at("steps") == want.rounds);
    CHECK(got.stats.at("finished_hypotheses") == want.closed);
    if (want.best_ended) {
        CHECK(got.finish == BASALT_FINISH_STOP);
    } else {
        CHECK(got.finish == (s.max_tokens >= 0 && static_cast<size_t>(s.max_tokens) == want.best[0].tokens.size()
                                 ? BASALT_FINISH_LENGTH
                                 : BASALT_FINISH_CONTEXT));
    }
}

const std::string kModel = "tiny-llama-f32.gguf";

}  // namespace

TEST_CASE("beam search gives the reference beam search's n-best tokens and scores", "[decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Oracle oracle(rt.rt, test::golden_model(kModel));
    test::Model model(test::golden_model(kModel));

    int cases = 0, with_closed = 0, at_length = 0, stopped_early[3] = {0, 0, 0};
    int never_outlasts_false = 0;  // alpha > 0: 'false' ended early, 'never' searched on (its bound uses max_len)
    const char* const modes[3] = {"true", "false", "never"};
    for (size_t plen : {5u, 9u, 14u}) {
        const std::vector<int32_t> prompt = prefix(plen);
        // End tokens the beams meet often: the tokens ranked most often among the W best of a search without them.
        Setting probe;
        probe.max_tokens = 12;
        const RefResult free_run = reference(oracle, prompt, probe);
        std::vector<std::pair<int, int32_t>> often;
        for (const auto& [tok, n] : free_run.top) often.emplace_back(-n, tok);
        std::sort(often.begin(), often.end());
        REQUIRE(often.size() >= 3);
        const std::vector<std::vector<int32_t>> stop_sets = {
            {}, {often[0].second}, {often[0].second, often[1].second, often[2].second}};
        for (const auto& stops : stop_sets) {
            for (double alpha : {1.0, 0.0, 2.0, -0.5}) {
                for (uint32_t width : {2u, 3u, 4u}) {
                    int rounds[3] = {0, 0, 0};
                    bool early[3] = {false, false, false};
                    for (int m = 0; m < 3; ++m) {
                        Setting s;
                        s.width = width;
                        s.n_best = 1 + static_cast<uint32_t>(cases % width);
                        s.alpha = alpha;
                        s.early = modes[m];
                        s.stop_tokens = stops;
                        s.max_tokens = 12;
                        const RefResult want = reference(oracle, prompt, s);
                        compare(run_beam(rt.rt, model.m, prompt, s), want, s);
                        cases += 1;
                        with_closed += want.closed > 0 ? 1 : 0;
                        stopped_early[m] += want.stopped_early ? 1 : 0;
                        at_length += want.stopped_early ? 0 : 1;
                        rounds[m] = want.rounds;
                        early[m] = want.stopped_early;
                    }
                    if (alpha > 0 && early[1] && rounds[2] > rounds[1]) never_outlasts_false += 1;
                }
            }
        }
    }
    // The end-token paths and every early_stopping mode's early end were exercised, and the length limit too.
    CHECK(with_closed > cases / 3);
    CHECK(stopped_early[0] > 0);
    CHECK(stopped_early[1] > 0);
    CHECK(stopped_early[2] > 0);
    CHECK(never_outlasts_false > 0);
    CHECK(at_length > 0);
}

TEST_CASE("beam search stops at the context and at max_tokens as the reference does", "[decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Oracle oracle(rt.rt, test::golden_model(kModel));
    test::Model model(test::golden_model(kModel));
    const std::vector<int32_t> prompt = prefix(9);
    // Width 6: more feeds than the engine's first plan array holds (the decoder asks for a bigger one).
    for (int32_t max_tokens : {-1, 1, 7}) {
        Setting s;
        s.width = max_tokens == 7 ? 3 : 6;
        s.n_best = 3;
        s.max_tokens = max_tokens;
        s.n_ctx = 16;  // room for 16 - 9 + 1 = 8 generated tokens
        const RefResult want = reference(oracle, prompt, s);
        const Outcome got = run_beam(rt.rt, model.m, prompt, s);
        compare(got, want, s);
        if (max_tokens < 0) CHECK(got.hyps[0].tokens.size() == 8);
    }
}

TEST_CASE("each beam's chain keeps its own history through forks (repetition penalty)", "[decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Oracle oracle(rt.rt, test::golden_model(kModel));
    test::Model model(test::golden_model(kModel));
    int changed = 0;  // cases where the penalty changes the best hypothesis
    for (size_t plen : {2u, 6u, 10u}) {
        const std::vector<int32_t> prompt = prefix(plen);
        for (double repeat : {1.5, 3.0}) {
            Setting s;
            s.width = 3;
            s.n_best = 3;
            s.max_tokens = 20;
            s.repeat = repeat;
            const RefResult want = reference(oracle, prompt, s);
            compare(run_beam(rt.rt, model.m, prompt, s), want, s);
            Setting plain = s;
            plain.repeat = 1.0;
            changed += reference(oracle, prompt, plain).best[0].tokens != want.best[0].tokens ? 1 : 0;
        }
    }
    CHECK(changed > 0);
}

TEST_CASE("length_penalty changes the winner, as in the reference", "[decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Oracle oracle(rt.rt, test::golden_model(kModel));
    test::Model model(test::golden_model(kModel));
    // Find a prompt and end tokens where alpha = -1 (shorter wins) and alpha = 2 (longer wins) pick different bests.
    bool found = false;
    for (size_t plen = 3; plen <= kGolden.size() && !found; plen += 2) {
        const std::vector<int32_t> prompt = prefix(plen);
        const std::vector<int32_t> g = oracle.greedy(prompt, 8);
        for (size_t k = 1; k < g.size() && !found; ++k) {
            Setting shorter, longer;
            shorter.width = longer.width = 3;
            shorter.n_best = longer.n_best = 2;
            shorter.early = longer.early = "never";
            shorter.max_tokens = longer.max_tokens = 12;
            shorter.stop_tokens = longer.stop_tokens = {g[k]};
            shorter.alpha = -1.0;
            longer.alpha = 2.0;
            const RefResult a = reference(oracle, prompt, shorter);
            const RefResult b = reference(oracle, prompt, longer);
            // Different winners, the shorter one under the negative penalty.
            if (a.best[0].tokens.size() >= b.best[0].tokens.size()) continue;
            found = true;
            INFO("prompt of " << plen << " tokens, end token " << g[k]);
            compare(run_beam(rt.rt, model.m, prompt, shorter), a, shorter);
            compare(run_beam(rt.rt, model.m, prompt, longer), b, longer);
        }
    }
    CHECK(found);
}

TEST_CASE("beam search of width 1 is greedy decoding", "[decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Oracle oracle(rt.rt, test::golden_model(kModel));
    test::Model model(test::golden_model(kModel));
    for (size_t plen : {1u, 4u, 11u}) {
        const std::vector<int32_t> prompt = prefix(plen);
        const std::vector<int32_t> g = oracle.greedy(prompt, 12);
        for (const std::string chain : {"greedy", "penalties:repeat=1.3,last_n=16;greedy"}) {
            for (const std::vector<int32_t>& stops : {std::vector<int32_t>{}, std::vector<int32_t>{g[5]}}) {
                Job sample{prompt, "sample", chain, 24, stops};
                Job beam{prompt, "beam:width=1", chain, 24, stops};
                const Outcome want = solo(rt.rt, model.m, sample, 128, 1);
                const Outcome got = solo(rt.rt, model.m, beam, 128, 1);
                INFO("prompt of " << plen << " tokens, chain " << chain << ", " << stops.size() << " stop tokens");
                CHECK(got.streamed == want.streamed);
                CHECK(got.finish == want.finish);
                REQUIRE(got.hyps.size() == 1);
                CHECK(got.hyps[0].tokens == want.streamed);
            }
        }
        // Until the context is full: the last token is emitted, not fed, for both.
        Job sample{prompt, "sample", "greedy", -1, {}};
        Job beam{prompt, "beam:width=1", "greedy", -1, {}};
        const Outcome want = solo(rt.rt, model.m, sample, 24, 1);
        const Outcome got = solo(rt.rt, model.m, beam, 24, 1);
        CHECK(got.streamed == want.streamed);
        CHECK(want.finish == BASALT_FINISH_CONTEXT);
        CHECK(got.finish == BASALT_FINISH_CONTEXT);
    }
}

TEST_CASE("beams of one request share batches with other requests, each getting its solo output", "[decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model model(test::golden_model(kModel));
    const std::vector<Job> jobs = {
        {prefix(5), "beam:width=4,n_best=3", "greedy", 14, {}},
        {prefix(9), "sample", "greedy", 20, {}},
        {prefix(3), "beam:width=3,n_best=2,length_penalty=0,early_stopping=true", "greedy", 18, {}},
        {prefix(7), "sample", "top_k:40;temp:0.8;dist:seed=3", 20, {}},
        {prefix(11), "beam:width=2,n_best=2,early_stopping=never", "penalties:repeat=1.2;greedy", 12, {}},
    };
    const uint32_t widths[] = {4, 1, 3, 1, 2};
    std::vector<Outcome> want;
    uint64_t solo_steps = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        want.push_back(solo(rt.rt, model.m, jobs[i], 64, widths[i]));
        solo_steps += want.back().engine_steps;
    }

    for (uint32_t chunk : {0u, 4u}) {
        basalt_engine_params p = engine_params(64, 4 + 1 + 3 + 1 + 2, 5);
        p.prefill_chunk = chunk;
        p.max_batch_tokens = 16;
        Engine e(rt.rt, model.m, p);
        std::vector<Request> r(jobs.size());
        std::vector<basalt_request_params> rp;
        for (const Job& j : jobs) rp.push_back(request_params(j));
        for (size_t i = 0; i < jobs.size(); ++i) REQUIRE(basalt_engine_submit(e.e, &rp[i], &r[i].r) == BASALT_OK);
        REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
        for (size_t i = 0; i < jobs.size(); ++i) {
            CAPTURE(chunk, i, jobs[i].decoder);
            const Outcome got = outcome(r[i].r);
            CHECK(got.finish == want[i].finish);
            CHECK(got.streamed == want[i].streamed);
            REQUIRE(got.hyps.size() == want[i].hyps.size());
            for (size_t h = 0; h < got.hyps.size(); ++h) {
                CHECK(got.hyps[h].tokens == want[i].hyps[h].tokens);
                CHECK(got.hyps[h].score == want[i].hyps[h].score);
            }
            CHECK(got.stats == want[i].stats);
        }
        basalt_engine_stats s{};
        s.struct_size = sizeof(s);
        REQUIRE(basalt_engine_stats_get(e.e, &s) == BASALT_OK);
        // The requests' rounds ran in shared steps (alone they take solo_steps), a beam request's W feeds in one.
        CHECK(s.steps * 2 < solo_steps);
    }
}

TEST_CASE("beam search refuses bad parameters naming them, and states what it needs", "[decoder][beam]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model model(test::golden_model(kModel));
    struct Bad {
        const char* spec;
        std::vector<std::string> says;
    };
    const Bad bad[] = {
        {"beam:width=0", {"decoder 'beam'", "'width' = '0'", "1..1024"}},
        {"beam:width=four", {"'width' = 'four'", "an integer"}},
        {"beam:n_best=5", {"'n_best' = '5'", "1..width (4)"}},
        {"beam:width=2,n_best=0", {"'n_best' = '0'", "1..width (2)"}},
        {"beam:early_stopping=maybe", {"'early_stopping' = 'maybe'", "true, false, never"}},
        {"beam:length_penalty=inf", {"'length_penalty' = 'inf'", "finite"}},
        {"beam:beams=3", {"unknown parameter 'beams'", "width, length_penalty, early_stopping, n_best"}},
    };
    Engine e(rt.rt, model.m, engine_params(64, 8));
    for (const Bad& b : bad) {
        CAPTURE(b.spec);
        Job j{prefix(4), b.spec, "greedy", 4, {}};
        const basalt_request_params p = request_params(j);
        Request r;
        CHECK(basalt_engine_submit(e.e, &p, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
        for (const auto& s : b.says) CHECK_THAT(last_error(), Contains(s));
        basalt_decoder_needs needs{};
        needs.struct_size = sizeof(needs);
        CHECK(basalt_decoder_requirements(rt.rt, b.spec, &needs) == BASALT_ERR_INVALID_ARGUMENT);
    }
    basalt_decoder_needs needs{};
    needs.struct_size = sizeof(needs);
    REQUIRE(basalt_decoder_requirements(rt.rt, "beam:width=6,n_best=2", &needs) == BASALT_OK);
    CHECK(needs.n_seq == 6);
    CHECK(needs.n_models == 1);
    CHECK(needs.n_outputs == 2);
    REQUIRE(basalt_decoder_requirements(rt.rt, "beam", &needs) == BASALT_OK);
    CHECK(needs.n_seq == 4);
    CHECK(needs.n_outputs == 1);
    // More beams than the engine has sequences: refused at submit, naming both.
    Job wide{prefix(4), "beam:width=9", "greedy", 4, {}};
    const basalt_request_params p = request_params(wide);
    Request r;
    CHECK(basalt_engine_submit(e.e, &p, &r.r) == BASALT_ERR_CAPACITY);
    CHECK_THAT(last_error(), Contains("decoder 'beam' needs 9 sequences") && Contains("8 (n_seq_max)"));
}
