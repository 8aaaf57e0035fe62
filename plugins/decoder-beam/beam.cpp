// decoder-beam: beam search, component decoder 'beam' (docs/decoding.md, "Beam search"). W beams, each on a
// request-local sequence; every round feeds each live beam's last token (W one-token feeds that share the engine's
// batch with other requests), scores the top 2W (beam, token) continuations by summed log-probability, closes the
// end-of-generation ones as finished hypotheses (score sum / len^alpha), keeps the best W others as the next beams
// and reorders the cache with copy-on-write forks. Stops as Hugging Face's beam search does (early_stopping true,
// false or never), then emits the n_best best hypotheses: hypothesis 0 is the request's output.
#include <basalt/plugin_decoder.h>
#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {

constexpr const char* kLabel = "decoder 'beam'";
constexpr long long kMaxWidth = 1024;  // a cap on a typo (width=40000), far above the sequences a cache holds

[[noreturn]] void fail(basalt_status status, const std::string& what) {
    throw basalt::sdk::error(status, std::string(kLabel) + ": " + what);
}

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
};

BeamDecoder& self(void* d) {
    if (d == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "instance is NULL");
    return *static_cast<BeamDecoder*>(d);
}

Settings parse(const basalt_params* params) {
    const basalt::sdk::params p(params, kLabel);
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

// A host call failed: the host recorded its message, the status goes back through the entry point untouched.
struct HostFailure {
    basalt_status status;
};

void check(basalt_status st) {
    if (st != BASALT_OK) throw HostFailure{st};
}

// guard() for entry points that call the host: a host failure returns its status without a message of ours.
template <typename Fn>
basalt_status entry(Fn&& fn) noexcept {
    basalt_status host_status = BASALT_OK;
    const basalt_status st = basalt::sdk::guard([&] {
        try {
            fn();
        } catch (const HostFailure& f) {
            host_status = f.status;
        }
    });
    return host_status != BASALT_OK ? host_status : st;
}

void set_stat(const BeamDecoder& s, const char* name, double value) {
    if (!BASALT_HAS_FIELD(s.host, basalt_decoder_host, set_stat) || s.host->set_stat == nullptr) return;
    s.host->set_stat(s.host->ctx, name, value);
}

basalt_status beam_create(const basalt_host* /*host*/, const basalt_params* params, void** out) {
    return basalt::sdk::guard([&] {
        const Settings cfg = parse(params);
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL");
        auto* d = new BeamDecoder();
        d->cfg = cfg;
        *out = d;
    });
}

void beam_destroy(void* d) {
    delete static_cast<BeamDecoder*>(d);
}

basalt_status beam_requirements(void* d, basalt_decoder_info* out) {
    return basalt::sdk::guard([&] {
        const BeamDecoder& s = self(d);
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL");
        // Drops come before forks when beams are reordered, so W sequences suffice.
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_seq)) out->n_seq = s.cfg.width;
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_models)) out->n_models = 1;
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_outputs)) out->n_outputs = s.cfg.n_best;
    });
}

basalt_status beam_begin(void* d, const basalt_decoder_host* host, const basalt_decoder_request* request) {
    return basalt::sdk::guard([&] {
        BeamDecoder& s = self(d);
        if (host == nullptr || request == nullptr || request->prompt == nullptr || request->n_prompt == 0)
            fail(BASALT_ERR_INVALID_ARGUMENT, "begin needs a host and a prompt");
        if (host->n_seq < s.cfg.width) {
            fail(BASALT_ERR_CAPACITY, "width " + std::to_string(s.cfg.width) +
                                          " needs as many sequences, the host gives " + std::to_string(host->n_seq));
        }
        if (request->n_prompt > host->n_ctx) {
            fail(BASALT_ERR_CAPACITY, "the prompt has " + std::to_string(request->n_prompt) +
                                          " tokens, more than the context of " + std::to_string(host->n_ctx));
        }
        s.host = host;
        s.prompt.assign(request->prompt, request->prompt + request->n_prompt);
        // A beam of len tokens has fed prompt + len - 1 positions: the context allows len up to n_ctx - prompt + 1.
        const uint64_t room = uint64_t{host->n_ctx} - request->n_prompt + 1;
        const uint64_t wanted = request->max_tokens > 0 ? static_cast<uint64_t>(request->max_tokens) : room;
        s.max_len = static_cast<uint32_t>(std::min(room, wanted));
        s.context_limited = room <= wanted;
        s.prompt_fed = false;
        s.beams.assign(1, Beam{});
        s.seq_used.assign(s.cfg.width, false);
        s.seq_used[0] = true;
        s.finished.clear();
        s.rounds = s.closed = s.forks = 0;
        s.done = false;
        s.finish = BASALT_FINISH_NONE;
        s.probs.resize(host->n_vocab);
        s.order.resize(host->n_vocab);
    });
}

basalt_status beam_plan(void* d, basalt_decoder_plan* plan, int32_t* out_finish) {
    return basalt::sdk::guard([&] {
        BeamDecoder& s = self(d);
        if (plan == nullptr || out_finish == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "plan: NULL argument");
        if (s.host == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "plan before begin");
        if (s.done) {
            plan->n_feeds = 0;
            *out_finish = s.finish;
            return;
        }
        const size_t n = s.prompt_fed ? s.beams.size() : 1;
        if (plan->capacity < n) {
            plan->n_feeds = n;
            fail(BASALT_ERR_CAPACITY, "plan needs " + std::to_string(n) + " feeds");
        }
        s.feed_tokens.resize(n);
        for (size_t i = 0; i < n; ++i) {
            basalt_decoder_feed& f = plan->feeds[i];
            f = basalt_decoder_feed{};
            f.model = 0;
            f.seq = s.beams[i].seq;
            if (s.prompt_fed) {
                s.feed_tokens[i] = s.beams[i].tokens.back();
                f.tokens = &s.feed_tokens[i];
                f.n_tokens = 1;
            } else {
                f.tokens = s.prompt.data();
                f.n_tokens = s.prompt.size();
            }
            f.logits = BASALT_DECODER_LOGITS_LAST;
        }
        plan->n_feeds = n;
        *out_finish = BASALT_FINISH_NONE;
    });
}

// Collects the round's continuations: per beam the 2W likeliest tokens (no other can be among the 2W best of all),
// then the 2W best of those. Tokens the chain gives probability 0 are never candidates.
void collect(BeamDecoder& s, const basalt_decoder_result* results) {
    const size_t nv = s.host->n_vocab;
    const size_t keep = std::min<size_t>(size_t{2} * s.cfg.width, nv);
    s.cands.clear();
    for (size_t b = 0; b < s.beams.size(); ++b) {
        check(s.host->distribution(s.host->ctx, s.beams[b].seq, 0, results[b].logits, s.probs.data()));
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
        check(s.host->seq_drop(s.host->ctx, 0, s.beams[b].seq));
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
            if (free_seqs.empty()) fail(BASALT_ERR_INTERNAL, "no free sequence to fork a beam into");
            child.seq = free_seqs.back();
            free_seqs.pop_back();
            check(s.host->seq_fork(s.host->ctx, 0, parent.seq, child.seq));
            s.seq_used[static_cast<size_t>(child.seq)] = true;
            s.forks += 1;
        }
        moved.push_back(std::move(child));
    }
    // After every fork: a fork clones the parent's chain, which must not have seen its first child's token yet.
    for (const Beam& b : moved) check(s.host->accept(s.host->ctx, b.seq, b.tokens.back()));
    s.beams = std::move(moved);
}

// Emits the n_best best hypotheses (hypothesis 0 is the request's output and goes through its stop conditions).
void conclude(BeamDecoder& s) {
    s.done = true;
    set_stat(s, "finished_hypotheses", static_cast<double>(s.closed));
    const size_t n = std::min<size_t>(s.cfg.n_best, s.finished.size());
    for (size_t h = 1; h < n; ++h) {
        const Hypothesis& y = s.finished[h];
        check(s.host->emit(s.host->ctx, static_cast<int32_t>(h), y.tokens.data(), y.tokens.size(),
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
    if (st != BASALT_ERR_CANCELLED) check(st);  // cancelled: a stop condition or the caller ended it; the engine knows
}

basalt_status beam_consume(void* d, const basalt_decoder_result* results, size_t n_results) {
    return entry([&] {
        BeamDecoder& s = self(d);
        if (s.host == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "consume before begin");
        if (s.done) fail(BASALT_ERR_INVALID_ARGUMENT, "consume after the search finished");
        if (results == nullptr || n_results != s.beams.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects " + std::to_string(s.beams.size()) +
                                                  " results (one per beam), got " + std::to_string(n_results));
        }
        for (size_t i = 0; i < n_results; ++i) {
            if (results[i].logits == nullptr || results[i].n_rows != 1)
                fail(BASALT_ERR_INVALID_ARGUMENT, "result " + std::to_string(i) + " is not one logits row");
        }
        s.prompt_fed = true;
        s.rounds += 1;
        set_stat(s, "steps", static_cast<double>(s.rounds));
        collect(s, results);
        // Every continuation has this many generated tokens (an end-of-generation token included).
        const uint32_t len = static_cast<uint32_t>(s.beams[0].tokens.size() + 1);
        std::vector<Candidate> next;
        for (size_t rank = 0; rank < s.cands.size() && next.size() < s.cfg.width; ++rank) {
            const Candidate& c = s.cands[rank];
            if (s.host->is_end_of_generation(s.host->ctx, c.token) != 0) {
                // As Hugging Face: an end token below the top W does not close a hypothesis (nor continue).
                if (rank >= s.cfg.width) continue;
                add_hypothesis(s, s.beams[c.beam].tokens, c.sum, len, true);
                s.closed += 1;
                continue;
            }
            next.push_back(c);
        }
        set_stat(s, "finished_hypotheses", static_cast<double>(s.closed));
        if (next.empty() || len >= s.max_len) {
            // The end of the search with beams still running: they become hypotheses too (HF's finalize).
            for (const Candidate& c : next) {
                std::vector<int32_t> tokens = s.beams[c.beam].tokens;
                tokens.push_back(c.token);
                add_hypothesis(s, std::move(tokens), c.sum, len, false);
            }
            conclude(s);
            return;
        }
        if (search_done(s, next.front().sum, len)) {
            conclude(s);
            return;
        }
        reorder(s, next);
        set_stat(s, "forks", static_cast<double>(s.forks));
    });
}

const basalt_decoder_iface kIface = {
    sizeof(basalt_decoder_iface),
    0,
    beam_create,
    beam_destroy,
    nullptr,  // reserved_run (ABI 1.0's run)
    beam_requirements,
    beam_begin,
    beam_plan,
    beam_consume,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_DECODER,
    "beam",
    "beam search: width, length_penalty, early_stopping (true/false/never), n_best hypotheses with scores; beams "
    "share the cache copy-on-write",
    1,
    0,
    0,
    0,
    &kIface,
};

const basalt_component_desc* const kComponents[] = {&kComponent};

const basalt_plugin_desc kPlugin = {
    sizeof(basalt_plugin_desc),
    BASALT_ABI_VERSION_MAJOR,
    BASALT_ABI_VERSION_MINOR,
    0,
    "decoder-beam",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
