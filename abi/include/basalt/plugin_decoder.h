/*
 * Basalt plugin ABI: the decoder (decoding strategy) component kind.
 *
 * A decoder drives one generation request through callbacks the session
 * provides (forward a ragged batch, read logits, fork/drop sequences, run the
 * request's sampler chain, emit tokens): greedy/sampling, beam search,
 * speculative decoding (model 1 = draft), contrastive decoding (model 1 =
 * amateur). It never sees weights or the KV cache directly.
 */
#ifndef BASALT_PLUGIN_DECODER_H
#define BASALT_PLUGIN_DECODER_H

#include "basalt/plugin.h"

BASALT_BEGIN_DECLS

/* Session callbacks for one request. `model` is 0 for the main model, 1 for the second one (draft/amateur). */
typedef struct basalt_decoder_host {
    uint32_t struct_size;
    uint32_t n_models; /* 1, or 2 when a draft/amateur model is attached */
    void* ctx;         /* pass back as first argument */
    size_t n_vocab;

    /* Runs the model on a ragged batch. */
    basalt_status (*forward)(void* ctx, int32_t model, const basalt_batch* batch);
    /* Logits of batch row `row` of the last forward of `model`; *out borrowed until the next forward. */
    basalt_status (*logits)(void* ctx, int32_t model, size_t row, const float** out);
    /* Copy-on-write fork and drop of a sequence in `model`'s cache. */
    basalt_status (*seq_fork)(void* ctx, int32_t model, int32_t src_seq_id, int32_t dst_seq_id);
    basalt_status (*seq_drop)(void* ctx, int32_t model, int32_t seq_id);
    /* Runs the request's sampler chain for seq_id on candidates (borrowed) and accepts the chosen token. */
    basalt_status (*sample)(void* ctx, int32_t seq_id, basalt_candidates* candidates, int32_t* out_token);
    /* Delivers a finished token of the output sequence; returns BASALT_ERR_CANCELLED to stop. */
    basalt_status (*emit)(void* ctx, int32_t seq_id, int32_t token);
    /* Non-zero when token ends generation (EOS/EOT). */
    int32_t (*is_end_of_generation)(void* ctx, int32_t token);
} basalt_decoder_host;

/* One request. Borrowed for the run call. */
typedef struct basalt_decode_request {
    uint32_t struct_size;
    int32_t seq_id; /* sequence holding the prompt; the decoder may fork others */
    const int32_t* prompt;
    size_t n_prompt;
    int32_t max_tokens; /* upper bound on emitted tokens */
    int32_t reserved0;
} basalt_decode_request;

typedef struct basalt_decoder_iface {
    uint32_t struct_size;
    uint32_t reserved0;

    /* Creates a strategy instance (e.g. "beams" = "4"); caller owns it. Thread-safe. */
    basalt_status (*create)(const basalt_host* host, const basalt_params* params, void** out_decoder);
    /* Destroys an instance; NULL is ignored. */
    void (*destroy)(void* decoder);
    /* Runs a request to completion through `host` callbacks (borrowed for the call). One thread at a time. */
    basalt_status (*run)(void* decoder, const basalt_decoder_host* host, const basalt_decode_request* request);
} basalt_decoder_iface;

#define BASALT_DECODER_IFACE_MIN_SIZE (offsetof(basalt_decoder_iface, run) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_DECODER_H */
