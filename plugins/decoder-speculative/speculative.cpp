// decoder-speculative: speculative decoding, component decoder 'speculative'. A draft proposes k tokens, the
// target (model 0) checks them in one multi-row forward, and the accepted ones plus one token of the target's
// own are emitted per verification. Draft sources: the engine's second model (source=model) or prompt lookup
// (source=ngram: the tokens that followed the latest earlier occurrence of the context's last n-gram).
// Verification: greedy (accept while the target's chain picks the same token) or stochastic (accept x with
// probability min(1, p(x)/q(x)), else sample norm(max(0, p - q)); a bonus token when all k pass), where p and q
// are the target's and the draft's distributions after the request's chain: the output follows exactly the
// distribution the chain alone gives. Rejected tokens are truncated from both caches; a model with a recurrent state
// (a hybrid model), which cannot be cut back, is snapshotted before the tokens it may reject are fed, the snapshot is
// restored on a rejection and the kept tokens are fed again: the target's beside the draft's first step of the next
// round (prompt lookup: by a round without drafts). Adaptive (the default): before
// each round the draft length, 0 (plain decoding) included, that maximises expected tokens per second from the
// running acceptance and the measured step costs (speculation-policy.hpp). docs/decoding.md.
#include <basalt/sdk/decoder-plugin.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "speculation-policy.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using basalt::speculative::ProbeSchedule;
using basalt::speculative::SpeculationPolicy;

using basalt::sdk::check_host;

constexpr int32_t kSnap = 1;  // the snapshot sequence of each model (granted on a model with a recurrent state)

constexpr basalt::sdk::decoder_spec kSpeculative = {
    "speculative",
    "speculative decoding: a draft model or prompt-lookup n-grams propose k tokens, the target verifies them in one "
    "forward (greedy or distribution-exact stochastic acceptance)",
};

enum class Source { Model, Ngram };
enum class Verify { Auto, Greedy, Stochastic, AcceptAll };
enum class Phase { Prefill, Draft, Verify, Done };

struct Config {
    Source source = Source::Model;
    Verify verify = Verify::Auto;
    int k = 4;  // draft length (the largest, when adaptive)
    bool adaptive = true;
    int ngram_max = 3, ngram_min = 1;
};

// Reads and checks the parameters.
Config parse(const basalt::sdk::params& p) {
    p.expect_only({"k", "adaptive", "source", "verify", "ngram_max", "ngram_min"});
    Config c;
    c.k = static_cast<int>(p.get_int("k", 4));
    if (c.k < 1 || c.k > 64) p.bad("k", *p.find("k"), "a draft length from 1 to 64");
    c.adaptive = p.get_bool("adaptive", true);
    if (auto v = p.find("source")) {
        if (*v == "model")
            c.source = Source::Model;
        else if (*v == "ngram")
            c.source = Source::Ngram;
        else
            p.bad("source", *v, "'model' (the engine's second model drafts) or 'ngram' (prompt lookup)");
    }
    if (auto v = p.find("verify")) {
        if (*v == "auto")
            c.verify = Verify::Auto;
        else if (*v == "greedy")
            c.verify = Verify::Greedy;
        else if (*v == "stochastic")
            c.verify = Verify::Stochastic;
        else if (*v == "accept_all")
            c.verify = Verify::AcceptAll;
        else
            p.bad("verify", *v, "auto, greedy, stochastic or accept_all (a broken verifier, for tests)");
    }
    c.ngram_max = static_cast<int>(p.get_int("ngram_max", 3));
    c.ngram_min = static_cast<int>(p.get_int("ngram_min", 1));
    if (c.ngram_min < 1 || c.ngram_max < c.ngram_min || c.ngram_max > 32) {
        p.bad("ngram_max", p.find("ngram_max").value_or(std::to_string(c.ngram_max)),
              "a length from ngram_min (>= 1) to 32");
    }
    return c;
}

struct Speculative {
    Config cfg;
    const basalt_decoder_host* host = nullptr;
    bool greedy = true;        // the verification in use (Auto resolved at begin)
    std::vector<int32_t> ctx;  // prompt + emitted tokens
    size_t prompt_len = 0;
    uint32_t target_len = 0;  // tokens of ctx in the target's cache (all but the last once decoding)
    uint32_t draft_len = 0;   // tokens of ctx (then drafts) in the draft's cache
    int32_t max_tokens = 0;
    size_t emitted = 0;
    int k = 4;  // draft length of the next round
    Phase phase = Phase::Prefill;
    int32_t finish = BASALT_FINISH_NONE;

    std::vector<int32_t> drafts;        // proposed this round
    std::vector<std::vector<float>> q;  // the draft's distribution at each proposal (stochastic, model source)
    std::vector<int32_t> feed;          // tokens of the current plan's feed(s)
    std::vector<int32_t> draft_feed;    // tokens fed to the draft this round
    std::vector<float> p, residual;     // scratch, n_vocab
    std::mt19937_64 rng;

    // Models with a recurrent state (ABI 1.8): sequence kSnap holds the snapshot taken before tokens that may be
    // rejected were fed (snap_len tokens), restored instead of a truncation.
    bool recurrent[2] = {false, false};
    bool snap_held[2] = {false, false};
    uint32_t snap_len[2] = {0, 0};

    uint64_t drafted = 0, accepted = 0, verifies = 0, target_tokens = 0, refed = 0;
    uint64_t plain_rounds = 0, probes = 0;
    // Adaptive: the policy, its probes, the start of the step in flight, the rows other requests put into the
    // last step, and whether the round in flight is a probe.
    std::optional<SpeculationPolicy> policy;
    ProbeSchedule probe{128, 2048};  // a model draft's probe pays a draft catch-up: rare; prompt lookup's: cheap
    Clock::time_point planned_at{};
    uint32_t others = 0;
    bool probing = false;
    int context = 0;       // the round's acceptance context: prompt lookup's matched n-gram length (0: a model draft)
    size_t tentative = 0;  // drafts accepted into the chain ahead of verification (rolled back before it)

    explicit Speculative(const basalt::sdk::params& params) : cfg(parse(params)) {}
    basalt::sdk::decoder_needs requirements() const {
        return {1, cfg.source == Source::Model ? 2u : 1u, 1,
                BASALT_DECODER_NEEDS_DRAFT_SAFE | BASALT_DECODER_SNAPSHOTS_RECURRENT, 1};
    }
    void begin(const basalt_decoder_host& h, const basalt_decoder_request& request);
    void plan(basalt_decoder_plan& plan, int32_t& out_finish);
    void consume(const basalt_decoder_result* results, size_t n_results);
};

// A uniform double in [0, 1) from 53 random bits (the same on every platform, unlike std distributions).
double uniform(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

// Draws an index from weights w (not necessarily normalised; sum > 0).
int32_t draw(const std::vector<float>& w, std::mt19937_64& rng) {
    double sum = 0;
    for (float x : w) sum += x;
    double u = uniform(rng) * sum;
    int32_t last = -1;
    for (size_t i = 0; i < w.size(); ++i) {
        if (w[i] <= 0.f) continue;
        last = static_cast<int32_t>(i);
        u -= w[i];
        if (u < 0) return last;
    }
    return last;  // rounding left u >= 0: the last token with weight
}

void set_stats(const Speculative& s) {
    const basalt_decoder_host* h = s.host;
    if (!BASALT_HAS_FIELD(h, basalt_decoder_host, set_stat) || h->set_stat == nullptr) return;
    h->set_stat(h->ctx, "drafted", static_cast<double>(s.drafted));
    h->set_stat(h->ctx, "accepted", static_cast<double>(s.accepted));
    h->set_stat(h->ctx, "acceptance_rate",
                s.drafted > 0 ? static_cast<double>(s.accepted) / static_cast<double>(s.drafted) : 0.0);
    h->set_stat(h->ctx, "verify_steps", static_cast<double>(s.verifies));
    h->set_stat(h->ctx, "tokens_per_verify",
                s.verifies > 0 ? static_cast<double>(s.target_tokens) / static_cast<double>(s.verifies) : 0.0);
    h->set_stat(h->ctx, "k", static_cast<double>(s.k));
    h->set_stat(h->ctx, "plain_rounds", static_cast<double>(s.plain_rounds));        // rounds without drafts
    if (s.recurrent[0]) h->set_stat(h->ctx, "refed", static_cast<double>(s.refed));  // kept tokens fed again
    if (s.policy) {
        h->set_stat(h->ctx, "probes", static_cast<double>(s.probes));
        if (s.policy->has_costs()) {  // the measured costs, and the acceptance each k needs to beat plain decoding
            h->set_stat(h->ctx, "target_step_ms", s.policy->target_ms(1));
            h->set_stat(h->ctx, "verify_ms", s.policy->target_ms(s.cfg.k + 1));
            h->set_stat(h->ctx, "draft_step_ms", s.policy->draft_ms());
            for (int k = 1; k <= std::min(s.cfg.k, 8); ++k) {
                const std::string name = "break_even_k" + std::to_string(k);
                h->set_stat(h->ctx, name.c_str(), s.policy->break_even_acceptance(k, 0));
            }
        }
    }
}

// The rows other requests put into the step just run (0 with a host before ABI 1.6).
uint32_t other_rows(const basalt_decoder_host& h) {
    if (h.struct_size < offsetof(basalt_decoder_host, batch_rows) + sizeof(h.batch_rows) || h.batch_rows == nullptr)
        return 0;
    return h.batch_rows(h.ctx, 0);
}

// Milliseconds since the step in flight was planned.
double step_ms(const Speculative& s) {
    return std::chrono::duration<double, std::milli>(Clock::now() - s.planned_at).count();
}

// Emits one token; false when the request ends (a stop condition, max_tokens, cancel).
bool emit(Speculative& s, int32_t token) {
    s.ctx.push_back(token);
    ++s.emitted;
    const basalt_status st = s.host->emit(s.host->ctx, 0, &token, 1, 0.f);
    if (st == BASALT_ERR_CANCELLED) {
        s.phase = Phase::Done;
        return false;
    }
    check_host(st);
    return true;
}

// Forgets model m's snapshot, if it holds one.
void drop_snapshot(Speculative& s, int32_t m) {
    if (s.snap_held[m]) check_host(s.host->seq_drop(s.host->ctx, m, kSnap));
    s.snap_held[m] = false;
}

// Model m's sequence, holding len tokens, becomes the snapshot to go back to (an earlier one is dropped).
void snapshot(Speculative& s, int32_t m, uint32_t len) {
    drop_snapshot(s, m);
    check_host(s.host->seq_snapshot(s.host->ctx, m, 0, kSnap));
    s.snap_held[m] = true;
    s.snap_len[m] = len;
}

// Cuts model m's sequence, holding len tokens, back to n_keep; returns what it then holds. A recurrent one goes
// back to its snapshot instead (taken at or before n_keep): the tokens after it are fed again by the next plan.
uint32_t cut(Speculative& s, int32_t m, uint32_t len, uint32_t n_keep) {
    if (n_keep >= len) {
        drop_snapshot(s, m);
        return len;
    }
    if (!s.recurrent[m]) {
        check_host(s.host->seq_truncate(s.host->ctx, m, 0, n_keep));
        return n_keep;
    }
    if (!s.snap_held[m] || s.snap_len[m] > n_keep)
        kSpeculative.fail(BASALT_ERR_PLUGIN, "no snapshot of model " + std::to_string(m) + " at or before position " +
                                                 std::to_string(n_keep) + " to go back to");
    check_host(s.host->seq_restore(s.host->ctx, m, 0, kSnap));
    s.snap_held[m] = false;
    return s.snap_len[m];
}

// The longest draft this round may have: k (the round's, or `limit`), less when the context or max_tokens leaves
// less room (a verify feeds the pending token plus the drafts to the target, and gives at most drafts + 1 tokens).
int room(const Speculative& s, int limit = -1) {
    const long long by_ctx = static_cast<long long>(s.host->n_ctx) - static_cast<long long>(s.ctx.size());
    const long long by_len = static_cast<long long>(s.max_tokens) - static_cast<long long>(s.emitted) - 1;
    const long long k = limit >= 0 ? limit : s.k;
    return static_cast<int>(std::max(0LL, std::min({k, by_ctx, by_len})));
}

// Adaptive: the draft length of the next round (at most `available`) from the policy, or a probe's when plain
// decoding has run for the probe interval. Model drafts probe with one token (the cheapest round that measures
// the first position); prompt lookup's drafts cost nothing to propose, so its probe verifies what it found.
int choose_k(Speculative& s, int available) {
    s.probing = false;
    const bool behind = s.cfg.source == Source::Model && s.ctx.size() > s.draft_len + 2;
    const int k = s.policy->choose(static_cast<int>(s.others), available, behind, s.context);
    if (k > 0 || available == 0) {
        if (k > 0) s.probe.drafting();
        return k;
    }
    if (!s.probe.plain_token()) return 0;
    s.probing = true;
    ++s.probes;
    return s.cfg.source == Source::Model ? 1 : available;
}

// Prompt lookup: the tokens that followed the latest earlier occurrence of the context's last n tokens (n from
// ngram_max down to ngram_min), at most n_max of them.
void propose_ngram(Speculative& s, int n_max) {
    s.drafts.clear();
    s.context = 0;
    const size_t len = s.ctx.size();
    for (int n = s.cfg.ngram_max; n >= s.cfg.ngram_min && s.drafts.empty(); --n) {
        const auto un = static_cast<size_t>(n);
        if (len < un + 1) continue;
        const int32_t* key = s.ctx.data() + len - un;
        for (size_t start = len - un; start-- > 0;) {  // latest occurrence first, excluding the suffix itself
            if (!std::equal(key, key + un, s.ctx.data() + start)) continue;
            for (size_t j = start + un; j < len && s.drafts.size() < static_cast<size_t>(n_max); ++j)
                s.drafts.push_back(s.ctx[j]);
            s.context = n;
            break;
        }
    }
}

// Starts a round after tokens were emitted: draft with the model, look up n-grams, or (no room) verify nothing.
void next_round(Speculative& s) {
    s.drafts.clear();
    s.q.clear();
    int n = room(s, s.cfg.k);
    if (s.cfg.source == Source::Ngram) {
        // Prompt lookup proposes first: the policy weighs verifying what it found (a miss is a plain step anyway).
        // A target back at its snapshot first takes a round without drafts, which feeds the kept tokens again.
        if (n > 0 && s.target_len + 1 == s.ctx.size()) propose_ngram(s, n);
        if (s.policy && !s.drafts.empty())
            s.drafts.resize(static_cast<size_t>(choose_k(s, static_cast<int>(s.drafts.size()))));
        s.k = static_cast<int>(s.drafts.size());
        s.phase = Phase::Verify;
        return;
    }
    if (s.policy) n = choose_k(s, n);
    s.k = n;
    s.phase = n > 0 ? Phase::Draft : Phase::Verify;
}

void Speculative::begin(const basalt_decoder_host& h, const basalt_decoder_request& request) {
    if (cfg.source == Source::Model && h.n_models < 2)
        kSpeculative.fail(BASALT_ERR_INVALID_ARGUMENT,
                          "source=model needs a draft model attached to the engine (--draft)");
    host = &h;
    ctx.assign(request.prompt, request.prompt + request.n_prompt);
    prompt_len = ctx.size();
    max_tokens = request.max_tokens;
    // the 1.2 fields (BASALT_HAS_FIELD would compare a reference's address with NULL, a -Werror warning)
    const bool has12 =
        request.struct_size >= offsetof(basalt_decoder_request, chain_flags) + sizeof(request.chain_flags);
    const bool chain_greedy = has12 && (request.chain_flags & BASALT_DECODER_CHAIN_GREEDY) != 0;
    greedy = cfg.verify == Verify::Greedy || (cfg.verify == Verify::Auto && chain_greedy);
    const int64_t seed = has12 ? request.seed : -1;
    rng.seed(seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}());
    k = cfg.k;
    // Prompt lookup keeps the acceptance apart per matched n-gram length (a 3-gram match continues far more often
    // than a 1-gram one).
    if (cfg.adaptive)
        policy.emplace(cfg.k, cfg.source == Source::Model, cfg.source == Source::Ngram ? cfg.ngram_max + 1 : 1);
    if (cfg.source == Source::Ngram) probe = ProbeSchedule(4, 32);
    // ABI 1.8: a model with a recurrent state is snapshotted, never cut back (the engine granted sequence kSnap).
    if (h.struct_size >= offsetof(basalt_decoder_host, seq_restore) + sizeof(h.seq_restore) &&
        h.model_recurrent != nullptr && h.seq_snapshot != nullptr && h.seq_restore != nullptr) {
        for (int32_t m = 0; m < static_cast<int32_t>(std::min(h.n_models, 2u)); ++m)
            recurrent[m] = h.model_recurrent(h.ctx, m) != 0;
        if ((recurrent[0] || recurrent[1]) && h.n_seq <= static_cast<uint32_t>(kSnap))
            kSpeculative.fail(BASALT_ERR_CAPACITY,
                              "a model keeps a recurrent state and the engine granted no "
                              "snapshot sequence");
    }
    p.assign(h.n_vocab, 0.f);
    residual.assign(h.n_vocab, 0.f);
    phase = Phase::Prefill;
}

void Speculative::plan(basalt_decoder_plan& plan, int32_t& out_finish) {
    out_finish = BASALT_FINISH_NONE;
    plan.n_feeds = 0;
    if (phase == Phase::Done) {
        out_finish = finish;
        return;
    }
    if (plan.capacity < 2) {
        plan.n_feeds = 2;
        kSpeculative.fail(BASALT_ERR_CAPACITY, "plan needs 2 feeds");
    }
    auto add = [&](int32_t model, const int32_t* tokens, size_t n, int32_t logits) {
        basalt_decoder_feed& f = plan.feeds[plan.n_feeds++];
        f = basalt_decoder_feed{};
        f.model = model;
        f.seq = 0;
        f.tokens = tokens;
        f.n_tokens = n;
        f.logits = logits;
    };
    switch (phase) {
        case Phase::Prefill:
            add(0, ctx.data(), ctx.size(), BASALT_DECODER_LOGITS_LAST);
            if (cfg.source == Source::Model) add(1, ctx.data(), ctx.size(), BASALT_DECODER_LOGITS_NONE);
            break;
        case Phase::Draft: {
            planned_at = Clock::now();
            // The draft catches up with the context (1 token, or 2 after a round that accepted every draft),
            // then takes its own proposals one at a time.
            draft_feed.clear();
            if (drafts.empty()) {
                draft_feed.assign(ctx.begin() + draft_len, ctx.end());
            } else {
                draft_feed.push_back(drafts.back());
            }
            add(1, draft_feed.data(), draft_feed.size(), BASALT_DECODER_LOGITS_LAST);
            // A restored target feeds the tokens it kept again beside the draft's first step, so that its verify
            // starts at the pending token (where the snapshot is taken).
            if (drafts.empty() && target_len + 1 < ctx.size()) {
                feed.assign(ctx.begin() + target_len, ctx.end() - 1);
                refed += feed.size();
                add(0, feed.data(), feed.size(), BASALT_DECODER_LOGITS_NONE);
            }
            break;
        }
        case Phase::Verify:
            planned_at = Clock::now();
            // The pending token and the drafts; a round without drafts after a restored snapshot feeds the kept
            // tokens before the pending one too (logits for the last only).
            feed.assign(ctx.begin() + target_len, ctx.end());
            if (!drafts.empty() && feed.size() != 1)
                kSpeculative.fail(BASALT_ERR_PLUGIN, "a verify with drafts behind the context");
            if (recurrent[0] && !drafts.empty()) snapshot(*this, 0, target_len);
            refed += feed.size() - 1;
            feed.insert(feed.end(), drafts.begin(), drafts.end());
            add(0, feed.data(), feed.size(), drafts.empty() ? BASALT_DECODER_LOGITS_LAST : BASALT_DECODER_LOGITS_ALL);
            break;
        case Phase::Done:
            break;
    }
}

// Whether the host has rollback (ABI 1.5).
bool has_rollback(const basalt_decoder_host& h) {
    return h.struct_size >= offsetof(basalt_decoder_host, rollback) + sizeof(h.rollback) && h.rollback != nullptr;
}

// The draft's row at its latest proposal: take the next draft token.
void consume_draft(Speculative& s, const float* row) {
    s.others = other_rows(*s.host);
    // A draft step's cost: one or two tokens (a longer catch-up after plain rounds is a prefill), alone in the
    // step (beside other requests' target rows it cannot be told apart from them).
    if (s.policy && s.draft_feed.size() <= 2 && s.others == 0) s.policy->observe_draft(step_ms(s));
    s.draft_len += static_cast<uint32_t>(s.draft_feed.size());
    check_host(s.host->distribution(s.host->ctx, 0, 1, row, s.p.data()));
    int32_t token = 0;
    if (s.greedy) {
        token = static_cast<int32_t>(std::max_element(s.p.begin(), s.p.end()) - s.p.begin());
    } else {
        token = draw(s.p, s.rng);
        s.q.push_back(s.p);
    }
    s.drafts.push_back(token);
    // The draft's own proposals are fed from here on: a recurrent draft is snapshotted at the context first.
    if (s.recurrent[1] && s.drafts.size() == 1 && s.k > 1) snapshot(s, 1, s.draft_len);
    // With the host's rollback (ABI 1.5) the chain follows the drafts, so stateful draft-safe samplers (a grammar)
    // give the next proposal from the right state; verification rolls them back first.
    if (has_rollback(*s.host)) {
        check_host(s.host->accept(s.host->ctx, 0, token));
        ++s.tentative;
    }
    if (static_cast<int>(s.drafts.size()) >= s.k) s.phase = Phase::Verify;
}

// The target's rows for [pending, d1..dk]: accept a prefix of the drafts, add one token of the target's own.
void consume_verify(Speculative& s, const float* rows, size_t n_rows) {
    const size_t nv = s.host->n_vocab;
    const size_t k = s.drafts.size();
    s.others = other_rows(*s.host);
    if (s.policy) s.policy->observe_target(static_cast<int>(s.feed.size() + s.others), step_ms(s));
    if (n_rows != k + 1) kSpeculative.fail(BASALT_ERR_PLUGIN, "verify expected " + std::to_string(k + 1) + " rows");
    if (s.tentative > 0) {  // the chain back at the accepted tokens
        check_host(s.host->rollback(s.host->ctx, 0, s.tentative));
        s.tentative = 0;
    }
    const size_t ctx_before = s.ctx.size();
    const uint32_t draft_before = s.draft_len;
    size_t a = 0;  // drafts accepted
    bool live = true;
    int32_t own = -1;  // the target's token after the accepted drafts
    for (size_t i = 0; i <= k && live; ++i) {
        const float* row = rows + i * nv;
        if (i == k) {  // every draft accepted: a bonus token from the target
            check_host(s.host->sample(s.host->ctx, 0, row, &own));
            break;
        }
        const int32_t x = s.drafts[i];
        bool ok = false;
        if (s.cfg.verify == Verify::AcceptAll) {
            ok = true;
            check_host(s.host->accept(s.host->ctx, 0, x));
        } else if (s.greedy) {
            int32_t t = -1;
            check_host(s.host->sample(s.host->ctx, 0, row, &t));  // accepts t into the chain
            ok = t == x;
            if (!ok) own = t;
        } else {
            check_host(s.host->distribution(s.host->ctx, 0, 0, row, s.p.data()));
            const double qx = s.q.empty() ? 1.0 : double{s.q[i][static_cast<size_t>(x)]};  // ngram: a point mass
            const double px = s.p[static_cast<size_t>(x)];
            ok = qx > 0 && uniform(s.rng) < std::min(1.0, px / qx);
            if (ok) {
                check_host(s.host->accept(s.host->ctx, 0, x));
            } else {
                double sum = 0;
                for (size_t v = 0; v < nv; ++v) {
                    const float qv = s.q.empty() ? (v == static_cast<size_t>(x) ? 1.f : 0.f) : s.q[i][v];
                    s.residual[v] = std::max(0.f, s.p[v] - qv);
                    sum += s.residual[v];
                }
                own = draw(sum > 0 ? s.residual : s.p, s.rng);  // p == q exactly leaves no residual: p itself
                check_host(s.host->accept(s.host->ctx, 0, own));
            }
        }
        if (!ok) break;
        ++a;
        live = emit(s, x);
    }
    s.drafted += k;
    s.accepted += a;
    s.verifies += 1;
    if (k == 0) ++s.plain_rounds;
    if (live && own >= 0) {
        live = emit(s, own);
        s.target_tokens += a + 1;
    } else {
        s.target_tokens += a;
    }
    // The caches keep the context minus its last token: the target fed up to pending + k drafts, the draft up to
    // d(k-1). (A plain round, k = 0, leaves nothing to cut.) A recurrent model goes back to its snapshot instead.
    s.target_len =
        cut(s, 0, s.target_len + static_cast<uint32_t>(s.feed.size()), static_cast<uint32_t>(ctx_before + a));
    if (s.cfg.source == Source::Model)
        s.draft_len = cut(s, 1, draft_before, std::min<uint32_t>(draft_before, static_cast<uint32_t>(ctx_before + a)));
    if (s.policy && k > 0) {
        s.policy->observe_round(static_cast<int>(k), static_cast<int>(a), s.context);
        if (s.probing) s.probe.probed(s.policy->choose(static_cast<int>(s.others), s.cfg.k, false, s.context) > 0);
    }
    if (live) next_round(s);
    set_stats(s);
}

void Speculative::consume(const basalt_decoder_result* results, size_t n_results) {
    if (results == nullptr || n_results == 0) kSpeculative.fail(BASALT_ERR_INVALID_ARGUMENT, "consume: no results");
    switch (phase) {
        case Phase::Prefill: {
            if (results[0].logits == nullptr || results[0].n_rows != 1)
                kSpeculative.fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects the prompt's last logits row");
            target_len = static_cast<uint32_t>(ctx.size());
            if (cfg.source == Source::Model) draft_len = static_cast<uint32_t>(ctx.size());
            int32_t token = -1;
            check_host(host->sample(host->ctx, 0, results[0].logits, &token));
            set_stats(*this);
            if (emit(*this, token)) next_round(*this);
            break;
        }
        case Phase::Draft:
            if (results[0].logits == nullptr || results[0].n_rows != 1)
                kSpeculative.fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects one draft logits row");
            if (n_results > 1) target_len = static_cast<uint32_t>(ctx.size() - 1);  // the kept tokens, fed again
            consume_draft(*this, results[0].logits);
            break;
        case Phase::Verify:
            if (results[0].logits == nullptr)
                kSpeculative.fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects verify rows");
            consume_verify(*this, results[0].logits, results[0].n_rows);
            break;
        case Phase::Done:
            break;
    }
}

}  // namespace

BASALT_DECLARE_PLUGIN("decoder-speculative", basalt::sdk::decoder<Speculative, kSpeculative>)
