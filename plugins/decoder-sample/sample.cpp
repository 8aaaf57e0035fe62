// decoder-sample: the default decoding strategy, component decoder 'sample'. One sequence: feed the prompt, then
// each round sample a token from the last logits with the request's sampler chain, emit it, and feed it back.
// The engine's stop conditions (end of generation, max_tokens, stop strings, cancel) end it through emit.
// No parameters.
#include <basalt/plugin_decoder.h>
#include <basalt/sdk/plugin.hpp>

#include <memory>
#include <string>
#include <vector>

namespace {

constexpr const char* kLabel = "decoder 'sample'";

struct SampleDecoder {
    const basalt_decoder_host* host = nullptr;
    std::vector<int32_t> prompt;
    int32_t next = -1;  // the token to feed next round (-1: the prompt)
    bool done = false;
    int32_t finish = BASALT_FINISH_NONE;
};

SampleDecoder& self(void* d) {
    if (d == nullptr) throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": instance is NULL");
    return *static_cast<SampleDecoder*>(d);
}

basalt_status sample_create(const basalt_host* /*host*/, const basalt_params* params, void** out) {
    return basalt::sdk::guard([&] {
        basalt::sdk::params(params, kLabel).expect_only({});
        if (out == nullptr)
            throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out is NULL");
        *out = new SampleDecoder();
    });
}

void sample_destroy(void* d) {
    delete static_cast<SampleDecoder*>(d);
}

basalt_status sample_requirements(void* d, basalt_decoder_info* out) {
    return basalt::sdk::guard([&] {
        self(d);
        if (out == nullptr)
            throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out is NULL");
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_seq)) out->n_seq = 1;
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_models)) out->n_models = 1;
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_outputs)) out->n_outputs = 1;
    });
}

basalt_status sample_begin(void* d, const basalt_decoder_host* host, const basalt_decoder_request* request) {
    return basalt::sdk::guard([&] {
        SampleDecoder& s = self(d);
        if (host == nullptr || request == nullptr || request->prompt == nullptr || request->n_prompt == 0) {
            throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                                     std::string(kLabel) + ": begin needs a host and a prompt");
        }
        s.host = host;
        s.prompt.assign(request->prompt, request->prompt + request->n_prompt);
        s.next = -1;
        s.done = false;
    });
}

basalt_status sample_plan(void* d, basalt_decoder_plan* plan, int32_t* out_finish) {
    return basalt::sdk::guard([&] {
        SampleDecoder& s = self(d);
        if (plan == nullptr || out_finish == nullptr) {
            throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": plan: NULL argument");
        }
        if (s.done) {
            plan->n_feeds = 0;
            *out_finish = s.finish;
            return;
        }
        if (plan->capacity < 1) {
            plan->n_feeds = 1;
            throw basalt::sdk::error(BASALT_ERR_CAPACITY, std::string(kLabel) + ": plan needs 1 feed");
        }
        basalt_decoder_feed& f = plan->feeds[0];
        f = basalt_decoder_feed{};
        f.model = 0;
        f.seq = 0;
        f.tokens = s.next < 0 ? s.prompt.data() : &s.next;
        f.n_tokens = s.next < 0 ? s.prompt.size() : 1;
        f.logits = BASALT_DECODER_LOGITS_LAST;
        plan->n_feeds = 1;
        *out_finish = BASALT_FINISH_NONE;
    });
}

basalt_status sample_consume(void* d, const basalt_decoder_result* results, size_t n_results) {
    SampleDecoder* sp = nullptr;
    basalt_status st = basalt::sdk::guard([&] {
        sp = &self(d);
        if (results == nullptr || n_results != 1 || results[0].logits == nullptr || results[0].n_rows != 1) {
            throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                                     std::string(kLabel) + ": consume expects one logits row");
        }
    });
    if (st != BASALT_OK) return st;
    SampleDecoder& s = *sp;
    int32_t token = -1;
    st = s.host->sample(s.host->ctx, 0, results[0].logits, &token);
    if (st != BASALT_OK) return st;  // the host recorded the message
    st = s.host->emit(s.host->ctx, 0, &token, 1, 0.f);
    if (st == BASALT_ERR_CANCELLED) {
        s.done = true;  // the engine knows why (stop, length, cancel)
        return BASALT_OK;
    }
    if (st != BASALT_OK) return st;
    s.next = token;
    return BASALT_OK;
}

const basalt_decoder_iface kIface = {
    sizeof(basalt_decoder_iface),
    0,
    sample_create,
    sample_destroy,
    nullptr,  // reserved_run (ABI 1.0's run)
    sample_requirements,
    sample_begin,
    sample_plan,
    sample_consume,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_DECODER,
    "sample",
    "sampling with the request's sampler chain (greedy, seeded distributions): one sequence, one token a step",
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
    "decoder-sample",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
