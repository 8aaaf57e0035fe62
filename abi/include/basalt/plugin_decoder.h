/*
 * Basalt plugin ABI: the decoder (decoding strategy) component kind.
 *
 * A decoder is a per-request state machine that the engine's scheduler steps.
 * Each round it states what it needs computed (plan: tokens to append to its
 * sequences, on model 0 or model 1, and which rows need logits); the engine
 * packs that work into the ragged batches it shares with every other running
 * request; when all of it is computed the engine calls consume with the
 * logits, and the decoder samples, forks, drops or truncates its sequences,
 * emits tokens, and plans again or finishes. It never sees weights, batches of
 * other requests or the KV cache directly: greedy/sampling, beam search,
 * speculative decoding (model 1 = draft) and contrastive decoding (model 1 =
 * amateur) all fit this shape (docs/abi.md checks each on paper).
 *
 * Versioning: ABI 1.0 declared a `run()` entry that drove a whole request and
 * that nothing implemented or called. ABI 1.1 keeps its slot (now
 * `reserved_run`, ignored) so the table's first fields keep their offsets, and
 * appends the step-wise entries. The host refuses a decoder table that ends
 * before `consume` (a 1.0 table), naming the file and the sizes. ABI 1.2 appends
 * fields to the host (set_stat), the request (seed, chain flags) and the info
 * (flags); each side checks struct_size before touching them. ABI 1.8 appends
 * snapshots for models with a recurrent state (host model_recurrent,
 * seq_snapshot, seq_restore; info n_snapshot_seq).
 */
#ifndef BASALT_PLUGIN_DECODER_H
#define BASALT_PLUGIN_DECODER_H

#include "basalt/plugin.h"

BASALT_BEGIN_DECLS

/* Logits wanted for the tokens of one feed. */
enum {
    BASALT_DECODER_LOGITS_NONE = 0, /* compute K/V only */
    BASALT_DECODER_LOGITS_LAST = 1, /* the feed's last token */
    BASALT_DECODER_LOGITS_ALL = 2   /* every token of the feed (a multi-row verify) */
};

/*
 * One piece of work: append n_tokens tokens to request-local sequence `seq` of model `model` (0 = main, 1 = the
 * second model), at the positions following what the sequence holds. The engine may split a long feed over
 * several steps (chunked prefill); consume is called only when every feed of the plan is computed.
 */
typedef struct basalt_decoder_feed {
    int32_t model;
    int32_t seq;
    const int32_t* tokens; /* borrowed from the decoder until its consume call returns */
    size_t n_tokens;
    int32_t logits; /* BASALT_DECODER_LOGITS_* */
    int32_t reserved0;
} basalt_decoder_feed;

/* What plan writes: feeds (capacity entries, owned by the engine). */
typedef struct basalt_decoder_plan {
    uint32_t struct_size;
    uint32_t reserved0;
    basalt_decoder_feed* feeds; /* engine-owned array of `capacity` entries */
    size_t capacity;
    size_t n_feeds; /* set by the decoder; BASALT_ERR_CAPACITY with n_feeds = needed asks for a bigger array */
} basalt_decoder_plan;

/* The logits consume receives: one entry per feed of the plan, in plan order. */
typedef struct basalt_decoder_result {
    const float* logits; /* n_rows x n_vocab floats (row-major), borrowed for the consume call; NULL: none wanted */
    size_t n_rows;       /* 0, 1 (LOGITS_LAST) or the feed's n_tokens (LOGITS_ALL) */
} basalt_decoder_result;

/* Finish reasons a decoder (or the engine's stop conditions) can give. */
enum {
    BASALT_FINISH_NONE = 0,      /* still running */
    BASALT_FINISH_STOP = 1,      /* an end-of-generation token or a stop string */
    BASALT_FINISH_LENGTH = 2,    /* max_tokens reached */
    BASALT_FINISH_CONTEXT = 3,   /* the sequence reached the context size */
    BASALT_FINISH_CANCELLED = 4, /* cancelled by the caller */
    BASALT_FINISH_ERROR = 5      /* failed; the request's error message says why */
};

/*
 * The engine's services for one request, valid from begin until the request ends. Every call is made from the
 * engine's loop thread, during begin/plan/consume of this request. Sequence numbers are request-local,
 * 0 .. n_seq - 1; `model` is 0 or 1 (when n_models == 2).
 */
typedef struct basalt_decoder_host {
    uint32_t struct_size;
    uint32_t n_models; /* 1, or 2 when a draft/amateur model is attached */
    void* ctx;         /* pass back as first argument */
    size_t n_vocab;
    uint32_t n_ctx; /* positions one sequence may hold */
    uint32_t n_seq; /* request-local sequences available (what begin's info asked for) */

    /* Runs the request's sampler chain of sequence seq on a logits row (n_vocab floats, borrowed), selects a token
     * into *out_token and accepts it into that chain. */
    basalt_status (*sample)(void* ctx, int32_t seq, const float* logits, int32_t* out_token);
    /* The distribution the chain gives before its selecting sampler (every sampler but the last applied to the
     * logits, then softmax) written into probs (n_vocab floats, caller-owned); accepts nothing. Speculative
     * verification compares these for target and draft. */
    basalt_status (*distribution)(void* ctx, int32_t seq, int32_t model, const float* logits, float* probs);
    /* Tells sequence seq's chain that token was chosen outside sample (a verified draft token, a beam step). */
    basalt_status (*accept)(void* ctx, int32_t seq, int32_t token);
    /* Makes empty sequence dst a copy-on-write copy of src in `model`'s cache, the chain's state cloned too. */
    basalt_status (*seq_fork)(void* ctx, int32_t model, int32_t src, int32_t dst);
    /* Forgets sequence seq of `model` (its cache blocks are released). */
    basalt_status (*seq_drop)(void* ctx, int32_t model, int32_t seq);
    /* Forgets positions >= n_keep of sequence seq in `model`'s cache (rejected draft tokens). */
    basalt_status (*seq_truncate)(void* ctx, int32_t model, int32_t seq, uint32_t n_keep);
    /* Number of positions sequence seq of `model` holds. */
    uint32_t (*seq_length)(void* ctx, int32_t model, int32_t seq);
    /* Delivers n tokens of the output (n-best index `hypothesis`, 0 for a single output) with that hypothesis'
     * score so far (the last score given counts). Hypothesis 0 is the request's output: the engine applies the
     * request's stop conditions and streams its text; it returns BASALT_ERR_CANCELLED when the request must
     * stop (a stop condition matched or the caller cancelled): the decoder then finishes. Hypotheses 1.. (up to
     * the info's n_outputs) are stored as given, for basalt_request_hypothesis. */
    basalt_status (*emit)(void* ctx, int32_t hypothesis, const int32_t* tokens, size_t n, float score);
    /* Non-zero when token ends generation (EOS/EOT or one of the request's stop tokens). */
    int32_t (*is_end_of_generation)(void* ctx, int32_t token);

    /* since 1.2 (check struct_size) */
    /* Records a figure of the request's decoding under name (e.g. "accepted", "acceptance_rate"); the last value
     * per name is kept and readable through basalt_request_decoder_stat. name is copied. */
    basalt_status (*set_stat)(void* ctx, const char* name, double value);

    /* since 1.5 (check struct_size) */
    /* Forgets the last n tokens accepted into sequence seq's chain (drafts a speculative decoder accepted to
     * advance stateful samplers such as a grammar, before verifying them). */
    basalt_status (*rollback)(void* ctx, int32_t seq, size_t n);

    /* since 1.6 (check struct_size) */
    /* Rows the engine's other running requests put into its last step's forward of `model` (decode rows and
     * prefill tokens; 0 when this request ran alone): the batch a decoder's cost model weighs its own rows
     * against (the speculative decoder turns drafting off as the batch fills). */
    uint32_t (*batch_rows)(void* ctx, int32_t model);

    /* since 1.8 (check struct_size) */
    /* Non-zero when `model` keeps a recurrent state (a hybrid model's Gated DeltaNet layers): the state sums up
     * every token fed, so seq_truncate cuts its sequences only to 0 or to their length. A decoder that rejects
     * fed tokens snapshots the sequence before feeding them (seq_snapshot), restores the snapshot instead of
     * cutting back (seq_restore) and feeds the kept tokens again. */
    int32_t (*model_recurrent)(void* ctx, int32_t model);
    /* Makes empty sequence snap a snapshot of sequence seq of `model`: its KV blocks shared copy-on-write, its
     * recurrent state copied, its length. The sampler chain is not copied: snap only serves seq_restore (or
     * seq_drop). Snapshot sequences come from basalt_decoder_info.n_snapshot_seq. */
    basalt_status (*seq_snapshot)(void* ctx, int32_t model, int32_t seq, int32_t snap);
    /* Makes sequence seq of `model` hold what snapshot snap holds (everything fed to seq after the snapshot is
     * forgotten) and leaves snap empty; seq's sampler chain is untouched (it keeps the tokens it accepted). */
    basalt_status (*seq_restore)(void* ctx, int32_t model, int32_t seq, int32_t snap);
} basalt_decoder_host;

/* The request as the decoder sees it at begin. Borrowed for the begin call (copy the prompt). */
typedef struct basalt_decoder_request {
    uint32_t struct_size;
    uint32_t reserved0;
    const int32_t* prompt; /* n_prompt tokens */
    size_t n_prompt;
    int32_t max_tokens; /* upper bound on emitted tokens per hypothesis */
    int32_t reserved1;

    /* since 1.2 (check struct_size) */
    int64_t seed;         /* the request's seed (-1: none given; draw one) for a decoder's own random choices */
    uint32_t chain_flags; /* BASALT_DECODER_CHAIN_* */
    uint32_t reserved2;
} basalt_decoder_request;

/* What the engine tells a decoder about the request's sampler chain (basalt_decoder_request.chain_flags). */
enum {
    /* The chain selects with `greedy`: sample() is the argmax of what distribution() gives. */
    BASALT_DECODER_CHAIN_GREEDY = 1u << 0
};

/* Decoder needs (basalt_decoder_info.flags). */
enum {
    /* Every sampler of the request's chain must be BASALT_SAMPLER_DRAFT_SAFE (its output depends on the logits
     * and the accepted history only): speculative verification applies the chain to draft and target rows.
     * The engine refuses other chains at submit, naming the samplers. */
    BASALT_DECODER_NEEDS_DRAFT_SAFE = 1u << 0,
    /* since 1.8. The decoder never cuts a recurrent model's sequence back (host model_recurrent): it restores
     * snapshots instead. Without it the engine refuses decoders that verify drafts (NEEDS_DRAFT_SAFE) on a
     * model with a recurrent state, naming why. */
    BASALT_DECODER_SNAPSHOTS_RECURRENT = 1u << 1
};

/* What a decoder instance needs; filled by requirements (caller sets struct_size). */
typedef struct basalt_decoder_info {
    uint32_t struct_size;
    uint32_t n_seq;     /* request-local sequences it will use at most (beams: the width; drops go before forks) */
    uint32_t n_models;  /* 1, or 2 when it needs the second model (speculative, contrastive) */
    uint32_t n_outputs; /* hypotheses it emits (n-best) */

    /* since 1.2 (check struct_size) */
    uint32_t flags; /* BASALT_DECODER_NEEDS_*, BASALT_DECODER_SNAPSHOTS_RECURRENT */
    uint32_t reserved0;

    /* since 1.8 (check struct_size) */
    uint32_t n_snapshot_seq; /* more sequences, for snapshots, granted only when a model keeps a recurrent state:
                                host.n_seq counts them (n_seq .. n_seq + n_snapshot_seq - 1) */
    uint32_t reserved1;
} basalt_decoder_info;

typedef struct basalt_decoder_iface {
    uint32_t struct_size;
    uint32_t reserved0;

    /* Creates a strategy instance for one request from its parameters (e.g. "width" = "4"); unknown keys or bad
     * values fail naming them. *out_decoder is owned by the caller until destroy. Thread-safe. */
    basalt_status (*create)(const basalt_host* host, const basalt_params* params, void** out_decoder);
    /* Destroys an instance; NULL is ignored. */
    void (*destroy)(void* decoder);
    /* ABI 1.0's run(); ignored since 1.1 (may be NULL). */
    void* reserved_run;

    /* since 1.1 */
    /* Writes what the instance needs (sequences, models, outputs) into *out. */
    basalt_status (*requirements)(void* decoder, basalt_decoder_info* out);
    /* Starts the request: host (valid until destroy) and request (borrowed for the call). The prompt is not in
     * any cache yet: the first plan usually feeds it. One thread at a time per instance. */
    basalt_status (*begin)(void* decoder, const basalt_decoder_host* host, const basalt_decoder_request* request);
    /* Writes the next round's feeds into *plan. n_feeds == 0 means finished: *out_finish gets the reason
     * (BASALT_FINISH_*). */
    basalt_status (*plan)(void* decoder, basalt_decoder_plan* plan, int32_t* out_finish);
    /* Receives the logits of the last plan's feeds (n_results entries in plan order, borrowed for the call) and
     * advances: sample, fork/drop/truncate, emit. A BASALT_ERR_CANCELLED from emit should end it: the next plan
     * then reports the finish. */
    basalt_status (*consume)(void* decoder, const basalt_decoder_result* results, size_t n_results);
} basalt_decoder_iface;

/* The smallest decoder table the host accepts (through consume, ABI 1.1). */
#define BASALT_DECODER_IFACE_MIN_SIZE (offsetof(basalt_decoder_iface, consume) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_DECODER_H */
