// decoder-beam: beam search, component decoder 'beam' (docs/decoding.md, "Beam search"). W beams, each on a
// request-local sequence; every round feeds each live beam's last token (W one-token feeds that share the engine's
// batch with other requests), scores the top 2W (beam, token) continuations by summed log-probability, closes the
// end-of-generation ones as finished hypotheses (score sum / len^alpha), keeps the best W others as the next beams
// and reorders the cache with copy-on-write forks. Stops as Hugging Face's beam search does (early_stopping true,
// false or never), then emits the n_best best hypotheses: hypothesis 0 is the request's output.
#include <basalt/sdk/decoder-plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {

using basalt::sdk::check_host;

constexpr basalt::sdk::decoder_spec kBeam = {
    "beam",
    "beam search: width, length_penalty, early_stopping (true/false/never), n_best hypotheses with scores; beams "
    "share the cache copy-on-write",
};
constexpr long long kMaxWidth = 1024;  // a cap on a typo (width=40000), far above the sequences a cache holds

enum class EarlyStopping { kTrue, kFalse, kNever };

struct Settings {
    uint32_t width = 4;
    double length_penalty = 1.0;
    EarlyStopping early_stopping = EarlyStopping::kFalse;
    uint32_t n_best = 1;
};

// A running beam: its generated tokens (none fed yet for the last one) on a request-local sequence.
struct Beam {
    int32_t seq = 0;
    std::vector<int32_t> tokens;
    double sum = 0;  // sum of log p of `tokens`
};

// A finished hypothesis: tokens without the end-of-generation token that closed it (if any).
struct Hypothesis {
    std::vector<int32_t> tokens;
    double score = 0;    // sum / len^alpha
    bool ended = false;  // closed by an end-of-generation token (else a running beam at the end of the search)
};

// One (beam, token) continuation of a round.
struct Candidate {
    double sum;
    uint32_t beam;
    int32_t token;
};

// Best first; ties by the lower beam, then the lower token, so the order never depends on how it was collected.
bool better(const Candidate& a, const Candidate& b) {
    if (a.sum != b.sum) return a.sum > b.sum;
    if (a.beam != b.beam) return a.beam < b.beam;
    return a.token < b.token;
}

// Reads and checks the parameters.
Settings parse(const basalt::sdk::params& p) {
    p.expect_only({"width", "length_penalty", "early_stopping", "n_best"});
    Settings s;
    const long long width = p.get_int("width", 4);
    if (width < 1 || width > kMaxWidth) {
        const std::string range = "an integer in 1.." + std::to_string(kMaxWidth);
        p.bad("width", *p.find("width"), range.c_str());
    }
    s.width = static_cast<uint32_t>(width);
    // Checked as a finite float, kept in double: 0.1 stays 0.1 in sum / len^alpha.
    p.get_float("length_penalty", 1.0f);
    if (auto v = p.find("length_penalty")) s.length_penalty = std::strtod(std::string(*v).c_str(), nullptr);
    if (auto v = p.find("early_stopping")) {
        if (*v == "true") {
            s.early_stopping = EarlyStopping::kTrue;
        } else if (*v == "false") {
            s.early_stopping = EarlyStopping::kFalse;
        } else if (*v == "never") {
            s.early_stopping = EarlyStopping::kNever;
        } else {
            p.bad("early_stopping", *v, "one of true, false, never");
        }
    }
    const long long n_best = p.get_int("n_best", 1);
    if (n_best < 1 || n_best > width) {
        const std::string range = "an integer in 1..width (" + std::to_string(width) + ")";
        p.bad("n_best", *p.find("n_best"), range.c_str());
    }
    s.n_best = static_cast<uint32_t>(n_best);
    return s;
}

struct BeamDecoder {
    Settings cfg;
    const basalt_decoder_host* host = nullptr;
    std::vector<int32_t> prompt;
    uint32_t max_len = 0;          // generated tokens a hypothesis may reach (max_tokens or the context's room)
    bool context_limited = false;  // max_len is the context's room, not max_tokens
    bool prompt_fed = false;
    std::vector<Beam> beams;           // running beams (before the first round: one empty beam on sequence 0)
    std::vector<bool> seq_used;        // request-local sequences holding a beam's cache
    std::vector<Hypothesis> finished;  // the best `width` so far, best first
    std::vector<int32_t> feed_tokens;  // what plan hands the engine (one per beam), stable until consume
    uint64_t rounds = 0, closed = 0, forks = 0;
    bool done = false;
    int32_t finish = BASALT_FINISH_NONE;
    // Scratch reused across rounds.
    std::vector<float> probs;
    std::vector<int32_t> order;
    std::vector<Candidate> cands;

    explicit BeamDecoder(const basalt::sdk::params& p) : cfg(parse(p)) {}
    // Drops come before forks when beams are reordered, so W sequences suffice.
    basalt::sdk::decoder_needs requirements() const { return {cfg.width, 1, cfg.n_best}; }
    void begin(const basalt_decoder_host& h, const basalt_decoder_request& request);
    void plan(basalt_decoder_plan& plan, int32_t& out_finish);
    void consume(const basalt_decoder_result* results, size_t n_results);
};

double normalised(const BeamDecoder& s, double sum, uint32_t len) {
    return sum / std::pow(static_cast<double>(len), s.cfg.length_penalty);
}

// Keeps the best `width` hypotheses, best first (an equal score goes after those already kept).
void add_hypothesis(BeamDecoder& s, std::vector<int32_t> tokens, double sum, uint32_t len, bool ended) {
    const double score = normalised(s, sum, len);
    if (s.finished.size() >= s.cfg.width) {
        if (!(score > s.finished.back().score)) return;
        s.finished.pop_back();
    }
    auto at = std::find_if(s.finished.begin(), s.finished.end(), [&](const Hypothesis& h) { return h.score < score; });
    s.finished.insert(at, Hypothesis{std::move(tokens), score, ended});
}

// Hugging Face's is_done: can a running beam still beat the worst kept hypothesis? best_sum is the best running
// beam's sum after this round, len its length.
bool search_done(const BeamDecoder& s, double best_sum, uint32_t len) {
    if (s.finished.size() < s.cfg.width) return false;
    if (s.cfg.early_stopping == EarlyStopping::kTrue) return true;
    // never with alpha > 0: the longest reachable length gives the highest score a running beam may still get.
    const uint32_t best_len =
        s.cfg.early_stopping == EarlyStopping::kNever && s.cfg.length_penalty > 0 ? s.max_len : len;
    return s.finished.back().score >= normalised(s, best_sum, best_len);
}

void set_stat(const BeamDecoder& s, const char* name, double value) {
    if (!BASALT_HAS_FIELD(s.host, basalt_decoder_host, set_stat) || s.host->set_stat == nullptr) return;
    s.host->set_stat(s.host->ctx, name, value);
}

void BeamDecoder::begin(const basalt_decoder_host& h, const basalt_decoder_request& request) {
    if (h.n_seq < cfg.width) {
        kBeam.fail(BASALT_ERR_CAPACITY, "width " + std::to_string(cfg.width) +
                                            " needs as many sequences, the host gives " + std::to_string(h.n_seq));
    }
    if (request.n_prompt > h.n_ctx) {
        kBeam.fail(BASALT_ERR_CAPACITY, "the prompt has " + std::to_string(request.n_prompt) +
                                            " tokens, more than the context of " + std::to_string(h.n_ctx));
    }
    host = &h;
    prompt.assign(request.prompt, request.prompt + request.n_prompt);
    // A beam of len tokens has fed prompt + len - 1 positions: the context allows len up to n_ctx - prompt + 1.
    const uint64_t room = uint64_t{h.n_ctx} - request.n_prompt + 1;
    const uint64_t wanted = request.max_tokens > 0 ? static_cast<uint64_t>(request.max_tokens) : room;
    max_len = static_cast<uint32_t>(std::min(room, wanted));
    context_limited = room <= wanted;
    prompt_fed = false;
    beams.assign(1, Beam{});
    seq_used.assign(cfg.width, false);
    seq_used[0] = true;
    finished.clear();
    rounds = closed = forks = 0;
    done = false;
    finish = BASALT_FINISH_NONE;
    probs.resize(h.n_vocab);
    order.resize(h.n_vocab);
}

void BeamDecoder::plan(basalt_decoder_plan& plan, int32_t& out_finish) {
    if (host == nullptr) kBeam.fail(BASALT_ERR_INVALID_ARGUMENT, "plan before begin");
    if (done) {
        plan.n_feeds = 0;
        out_finish = finish;
        return;
    }
    const size_t n = prompt_fed ? beams.size() : 1;
    if (plan.capacity < n) {
        plan.n_feeds = n;
        kBeam.fail(BASALT_ERR_CAPACITY, "plan needs " + std::to_string(n) + " feeds");
    }
    feed_tokens.resize(n);
    for (size_t i = 0; i < n; ++i) {
        basalt_decoder_feed& f = plan.feeds[i];
        f = basalt_decoder_feed{};
        f.model = 0;
        f.seq = beams[i].seq;
        if (prompt_fed) {
            feed_tokens[i] = beams[i].tokens.back();
            f.tokens = &feed_tokens[i];
            f.n_tokens = 1;
        } else {
            f.tokens = prompt.data();
            f.n_tokens = prompt.size();
        }
        f.logits = BASALT_DECODER_LOGITS_LAST;
    }
    plan.n_feeds = n;
    out_finish = BASALT_FINISH_NONE;
}

// Collects the round's continuations: per beam the 2W likeliest tokens (no other can be among the 2W best of all),
// then the 2W best of those. Tokens the chain gives probability 0 are never candidates.
void collect(BeamDecoder& s, const basalt_decoder_result* results) {
    const size_t nv = s.host->n_vocab;
    const size_t keep = std::min<size_t>(size_t{2} * s.cfg.width, nv);
    s.cands.clear();
    for (size_t b = 0; b < s.beams.size(); ++b) {
        check_host(s.host->distribution(s.host->ctx, s.beams[b].seq, 0, results[b].logits, s.probs.data()));
        std::iota(s.order.begin(), s.order.end(), 0);
        const float* p = s.probs.data();
        std::partial_sort(s.order.begin(), s.order.begin() + static_cast<std::ptrdiff_t>(keep), s.order.end(),
                          [p](int32_t a, int32_t c) { return p[a] > p[c] || (p[a] == p[c] && a < c); });
        for (size_t k = 0; k < keep; ++k) {
            const int32_t t = s.order[k];
            if (!(p[t] > 0.f)) break;
            s.cands.push_back({s.beams[b].sum + std::log(static_cast<double>(p[t])), static_cast<uint32_t>(b), t});
        }
    }
    const size_t n = std::min(keep, s.cands.size());
    std::partial_sort(s.cands.begin(), s.cands.begin() + static_cast<std::ptrdiff_t>(n), s.cands.end(), better);
    s.cands.resize(n);
}

// Moves the beams onto their sequences for the next round with the fewest forks: parents without children give
// their sequence back, a parent's first child keeps the parent's sequence in place, further children get
// copy-on-write forks of it (the chain's state cloned too); then each child's token is accepted into its chain.
void reorder(BeamDecoder& s, const std::vector<Candidate>& next) {
    std::vector<uint32_t> children(s.beams.size(), 0);
    for (const Candidate& c : next) children[c.beam] += 1;
    for (size_t b = 0; b < s.beams.size(); ++b) {
        if (children[b] != 0) continue;
        check_host(s.host->seq_drop(s.host->ctx, 0, s.beams[b].seq));
        s.seq_used[static_cast<size_t>(s.beams[b].seq)] = false;
    }
    std::vector<int32_t> free_seqs;
    for (size_t q = s.seq_used.size(); q-- > 0;) {
        if (!s.seq_used[q]) free_seqs.push_back(static_cast<int32_t>(q));
    }
    std::vector<bool> placed(s.beams.size(), false);
    std::vector<Beam> moved;
    moved.reserve(next.size());
    for (const Candidate& c : next) {
        const Beam& parent = s.beams[c.beam];
        Beam child;
        child.tokens.reserve(parent.tokens.size() + 1);
        child.tokens = parent.tokens;
        child.tokens.push_back(c.token);
        child.sum = c.sum;
        if (!placed[c.beam]) {
            placed[c.beam] = true;
            child.seq = parent.seq;
        } else {
            if (free_seqs.empty()) kBeam.fail(BASALT_ERR_INTERNAL, "no free sequence to fork a beam into");
            child.seq = free_seqs.back();
            free_seqs.pop_back();
            check_host(s.host->seq_fork(s.host->ctx, 0, parent.seq, child.seq));
            s.seq_used[static_cast<size_t>(child.seq)] = true;
            s.forks += 1;
        }
        moved.push_back(std::move(child));
    }
    // After every fork: a fork clones the parent's chain, which must not have seen its first child's token yet.
    for (const Beam& b : moved) check_host(s.host->accept(s.host->ctx, b.seq, b.tokens.back()));
    s.beams = std::move(moved);
}

// Emits the n_best best hypotheses (hypothesis 0 is the request's output and goes through its stop conditions).
void conclude(BeamDecoder& s) {
    s.done = true;
    set_stat(s, "finished_hypotheses", static_cast<double>(s.closed));
    const size_t n = std::min<size_t>(s.cfg.n_best, s.finished.size());
    for (size_t h = 1; h < n; ++h) {
        const Hypothesis& y = s.finished[h];
        check_host(s.host->emit(s.host->ctx, static_cast<int32_t>(h), y.tokens.data(), y.tokens.size(),
                                static_cast<float>(y.score)));
    }
    if (n == 0) {
        s.finish = BASALT_FINISH_STOP;
        return;
    }
    const Hypothesis& best = s.finished[0];
    s.finish = best.ended ? BASALT_FINISH_STOP : (s.context_limited ? BASALT_FINISH_CONTEXT : BASALT_FINISH_LENGTH);
    const basalt_status st =
        s.host->emit(s.host->ctx, 0, best.tokens.data(), best.tokens.size(), static_cast<float>(best.score));
    // cancelled: a stop condition or the caller ended it; the engine knows
    if (st != BASALT_ERR_CANCELLED) check_host(st);
}

void BeamDecoder::consume(const basalt_decoder_result* results, size_t n_results) {
    if (host == nullptr) kBeam.fail(BASALT_ERR_INVALID_ARGUMENT, "consume before begin");
    if (done) kBeam.fail(BASALT_ERR_INVALID_ARGUMENT, "consume after the search finished");
    if (results == nullptr || n_results != beams.size()) {
        kBeam.fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects " + std::to_string(beams.size()) +
                                                    " results (one per beam), got " + std::to_string(n_results));
    }
    for (size_t i = 0; i < n_results; ++i) {
        if (results[i].logits == nullptr || results[i].n_rows != 1)
            kBeam.fail(BASALT_ERR_INVALID_ARGUMENT, "result " + std::to_string(i) + " is not one logits row");
    }
    prompt_fed = true;
    rounds += 1;
    set_stat(*this, "steps", static_cast<double>(rounds));
    collect(*this, results);
    // Every continuation has this many generated tokens (an end-of-generation token included).
    const uint32_t len = static_cast<uint32_t>(beams[0].tokens.size() + 1);
    std::vector<Candidate> next;
    for (size_t rank = 0; rank < cands.size() && next.size() < cfg.width; ++rank) {
        const Candidate& c = cands[rank];
        if (host->is_end_of_generation(host->ctx, c.token) != 0) {
            // As Hugging Face: an end token below the top W does not close a hypothesis (nor continue).
            if (rank >= cfg.width) continue;
            add_hypothesis(*this, beams[c.beam].tokens, c.sum, len, true);
            closed += 1;
            continue;
        }
        next.push_back(c);
    }
    set_stat(*this, "finished_hypotheses", static_cast<double>(closed));
    if (next.empty() || len >= max_len) {
        // The end of the search with beams still running: they become hypotheses too (HF's finalize).
        for (const Candidate& c : next) {
            std::vector<int32_t> tokens = beams[c.beam].tokens;
            tokens.push_back(c.token);
            add_hypothesis(*this, std::move(tokens), c.sum, len, false);
        }
        conclude(*this);
        return;
    }
    if (search_done(*this, next.front().sum, len)) {
        conclude(*this);
        return;
    }
    reorder(*this, next);
    set_stat(*this, "forks", static_cast<double>(forks));
}

}  // namespace

BASALT_DECLARE_PLUGIN("decoder-beam", basalt::sdk::decoder<BeamDecoder, kBeam>)
