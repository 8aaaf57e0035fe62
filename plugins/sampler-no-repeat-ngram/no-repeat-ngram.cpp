// sampler-no-repeat-ngram ("no_repeat_ngram"): Hugging Face's NoRepeatNGramLogitsProcessor. With history
// t_1 .. t_L (every token accepted for this sequence; the engine accepts the prompt first, so it counts, as in
// HF's input_ids) and n = N, a candidate v is banned (logit -inf, p 0) when t_{L-N+2} .. t_L, v is an n-gram that
// already occurs in the history, i.e. some i has t_i .. t_{i+N-2} = t_{L-N+2} .. t_L and t_{i+N-1} = v. Nothing is
// banned while L < N - 1. n = 1 bans every token seen. Like HF, it bans even when that leaves no finite candidate
// (the selecting sampler then reports it). State: the history's n-grams, indexed by their first n - 1 tokens;
// accept() extends it, reset() forgets it, clone() copies it. Not draft-safe (a draft's proposals are not in the
// history) and not argmax-invariant.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/plugin.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr const char* kName = "no_repeat_ngram";

// Hash of a window of token ids (FNV-1a over the 32-bit ids).
struct WindowHash {
    size_t operator()(const std::vector<int32_t>& w) const noexcept {
        uint64_t h = 1469598103934665603ull;
        for (int32_t t : w) {
            h ^= static_cast<uint32_t>(t);
            h *= 1099511628211ull;
        }
        return static_cast<size_t>(h);
    }
};

struct NoRepeatNgram {
    size_t n = 3;
    std::vector<int32_t> history;
    // first n - 1 tokens of each n-gram seen -> the tokens that followed them (each once)
    std::unordered_map<std::vector<int32_t>, std::vector<int32_t>, WindowHash> next;

    // The tokens that would complete a repeated n-gram now (nullptr: none).
    const std::vector<int32_t>* banned() const {
        if (history.size() + 1 < n) return nullptr;
        const std::vector<int32_t> key(history.end() - static_cast<std::ptrdiff_t>(n - 1), history.end());
        auto it = next.find(key);
        return it == next.end() ? nullptr : &it->second;
    }

    void push(int32_t token) {
        history.push_back(token);
        if (history.size() < n) return;
        const auto end = history.end() - 1;
        std::vector<int32_t> key(end - static_cast<std::ptrdiff_t>(n - 1), end);
        std::vector<int32_t>& after = next[std::move(key)];
        for (int32_t t : after) {
            if (t == token) return;
        }
        after.push_back(token);
    }
};

basalt_status nrn_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"n"});
        const long long n = p.get_int("n", 3);
        if (n < 1 || n > 1024) p.bad("n", *p.find("n"), "an n-gram size in 1..1024");
        auto* s = new NoRepeatNgram;
        s->n = static_cast<size_t>(n);
        *out_instance = s;
    });
}

void nrn_destroy(void* instance) {
    delete static_cast<NoRepeatNgram*>(instance);
}

basalt_status nrn_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const auto& st = *static_cast<const NoRepeatNgram*>(instances[s]);
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            const std::vector<int32_t>* ban = st.banned();
            if (ban == nullptr) continue;
            bool changed = false;
            for (size_t i = 0; i < c->size; ++i) {
                basalt_token_data& d = c->data[i];
                bool hit = false;
                for (int32_t t : *ban) hit = hit || t == d.id;
                if (!hit || (std::isinf(d.logit) && d.logit < 0)) continue;
                d.logit = -INFINITY;
                d.p = 0.f;
                changed = true;
            }
            if (changed) {
                c->sorted = 0;
                c->probs_valid = 0;
            }
        }
    });
}

basalt_status nrn_accept(void* instance, int32_t token) {
    return basalt::sdk::guard([&] { static_cast<NoRepeatNgram*>(instance)->push(token); });
}

basalt_status nrn_reset(void* instance) {
    return basalt::sdk::guard([&] {
        auto& st = *static_cast<NoRepeatNgram*>(instance);
        st.history.clear();
        st.next.clear();
    });
}

basalt_status nrn_clone(const void* instance, void** out_instance) {
    return basalt::sdk::guard([&] { *out_instance = new NoRepeatNgram(*static_cast<const NoRepeatNgram*>(instance)); });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    0,  // changes the argmax on purpose; its history lags behind a draft
    nrn_create,
    nrn_destroy,
    nrn_apply,
    nrn_accept,
    nrn_reset,
    nrn_clone,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "bans a token that would complete an n-gram already in the sequence (prompt included), Hugging Face's semantics",
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
    "sampler-no-repeat-ngram",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
