/*
 * c-generate: text generation from C99 through the public C API only.
 *
 *   c-generate MODEL PROMPT [N_PREDICT [SAMPLER_CHAIN]]
 *
 * Loads MODEL (GGUF), tokenizes PROMPT, decodes it, then samples up to N_PREDICT tokens (default 32) with the
 * sampler chain (default "greedy", e.g. "top_k:40;top_p:0.9;temp:0.7;dist:seed=42") and prints the generated
 * text. The output is the same as `basalt run -m MODEL -p PROMPT -n N_PREDICT --samplers CHAIN` prints on stdout.
 * Exit status: 0 success, 1 a Basalt call failed (its message is printed), 2 bad command line.
 */
#include <basalt/basalt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the failed call and the library's message; returns 1 for main. */
static int report(const char* what, basalt_status status) {
    fprintf(stderr, "c-generate: %s failed (%s): %s\n", what, basalt_status_name(status), basalt_last_error());
    return 1;
}

/* Prints the text of one token (control tokens not rendered). */
static basalt_status print_piece(const basalt_model* model, int32_t token) {
    char buf[256];
    size_t len = 0;
    basalt_status st = basalt_token_to_piece(model, token, 0, buf, sizeof buf, &len);
    if (st == BASALT_ERR_CAPACITY) {
        char* big = (char*)malloc(len + 1);
        if (big == NULL) return BASALT_ERR_OUT_OF_MEMORY;
        st = basalt_token_to_piece(model, token, 0, big, len + 1, &len);
        if (st == BASALT_OK) fwrite(big, 1, len, stdout);
        free(big);
        return st;
    }
    if (st == BASALT_OK) fwrite(buf, 1, len, stdout);
    return st;
}

/* Decodes n tokens of sequence 0 starting at position pos; logits of the last row only. */
static basalt_status decode(basalt_session* session, const int32_t* tokens, size_t n, int32_t pos) {
    basalt_batch batch;
    int32_t* positions = (int32_t*)malloc(n * sizeof(int32_t));
    int32_t* seq_ids = (int32_t*)calloc(n, sizeof(int32_t));
    basalt_status st = BASALT_ERR_OUT_OF_MEMORY;
    size_t i;
    if (positions != NULL && seq_ids != NULL) {
        for (i = 0; i < n; ++i) positions[i] = pos + (int32_t)i;
        memset(&batch, 0, sizeof batch);
        batch.struct_size = sizeof batch;
        batch.n_tokens = n;
        batch.tokens = tokens;
        batch.positions = positions;
        batch.seq_ids = seq_ids;
        batch.want_logits = NULL; /* last row only */
        st = basalt_session_decode(session, &batch);
    }
    free(positions);
    free(seq_ids);
    return st;
}

int main(int argc, char** argv) {
    const char* model_path;
    const char* prompt;
    long n_predict = 32;
    const char* chain_spec = "greedy";
    basalt_runtime* runtime = NULL;
    basalt_model* model = NULL;
    basalt_session* session = NULL;
    basalt_sampler_chain* chain = NULL;
    basalt_session_params sp;
    int32_t* tokens = NULL;
    size_t n_tokens = 0;
    size_t n_vocab;
    long generated = 0;
    int32_t pos;
    int rc = 1;
    basalt_status st;

    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: c-generate MODEL PROMPT [N_PREDICT [SAMPLER_CHAIN]]\n");
        return 2;
    }
    model_path = argv[1];
    prompt = argv[2];
    if (argc >= 4) {
        char* end = NULL;
        n_predict = strtol(argv[3], &end, 10);
        if (end == argv[3] || *end != '\0' || n_predict < 0) {
            fprintf(stderr, "c-generate: N_PREDICT '%s' is not a count\n", argv[3]);
            return 2;
        }
    }
    if (argc == 5) chain_spec = argv[4];

    /* plugins: the folder beside libbasalt, then $BASALT_PLUGIN_PATH */
    if ((st = basalt_runtime_create(NULL, &runtime)) != BASALT_OK) return report("basalt_runtime_create", st);
    if ((st = basalt_model_load(runtime, model_path, NULL, &model)) != BASALT_OK) {
        rc = report("basalt_model_load", st);
        goto done;
    }
    /* first call asks for the size (BASALT_ERR_CAPACITY sets the count needed), the second fills */
    st = basalt_tokenize(model, prompt, strlen(prompt), BASALT_TOKENIZE_ADD_SPECIAL, NULL, 0, &n_tokens);
    if (st != BASALT_OK && st != BASALT_ERR_CAPACITY) {
        rc = report("basalt_tokenize", st);
        goto done;
    }
    if (n_tokens == 0) {
        fprintf(stderr, "c-generate: the prompt tokenizes to nothing\n");
        rc = 2;
        goto done;
    }
    tokens = (int32_t*)malloc(n_tokens * sizeof(int32_t));
    if (tokens == NULL) {
        fprintf(stderr, "c-generate: out of memory\n");
        goto done;
    }
    st = basalt_tokenize(model, prompt, strlen(prompt), BASALT_TOKENIZE_ADD_SPECIAL, tokens, n_tokens, &n_tokens);
    if (st != BASALT_OK) {
        rc = report("basalt_tokenize", st);
        goto done;
    }

    memset(&sp, 0, sizeof sp);
    sp.struct_size = sizeof sp; /* zero fields: training context (at most 4096), cpu backend, paged cache */
    if ((st = basalt_session_create(runtime, model, &sp, &session)) != BASALT_OK) {
        rc = report("basalt_session_create", st);
        goto done;
    }
    if ((st = basalt_sampler_chain_create(runtime, chain_spec, &chain)) != BASALT_OK) {
        rc = report("basalt_sampler_chain_create", st);
        goto done;
    }
    if (n_tokens > basalt_session_n_ctx(session)) {
        fprintf(stderr, "c-generate: the prompt has %lu tokens, more than the context\n", (unsigned long)n_tokens);
        goto done;
    }
    if ((st = decode(session, tokens, n_tokens, 0)) != BASALT_OK) {
        rc = report("basalt_session_decode", st);
        goto done;
    }
    pos = (int32_t)n_tokens;
    n_vocab = basalt_session_n_vocab(session);
    while (generated < n_predict) {
        const float* logits = NULL;
        int32_t token = -1;
        if ((st = basalt_session_logits(session, 0, &logits)) != BASALT_OK) {
            rc = report("basalt_session_logits", st);
            goto done;
        }
        /* applies every sampler, picks the token and accepts it into each sampler */
        if ((st = basalt_sampler_chain_sample(chain, logits, n_vocab, &token)) != BASALT_OK) {
            rc = report("basalt_sampler_chain_sample", st);
            goto done;
        }
        if (basalt_token_is_eog(model, token)) break;
        if ((st = print_piece(model, token)) != BASALT_OK) {
            rc = report("basalt_token_to_piece", st);
            goto done;
        }
        fflush(stdout);
        ++generated;
        if (generated >= n_predict || (uint32_t)pos >= basalt_session_n_ctx(session)) break;
        if ((st = decode(session, &token, 1, pos)) != BASALT_OK) {
            rc = report("basalt_session_decode", st);
            goto done;
        }
        ++pos;
    }
    printf("\n");
    rc = 0;

done:
    free(tokens);
    basalt_sampler_chain_destroy(chain);
    basalt_session_free(session);
    basalt_model_free(model);
    basalt_runtime_destroy(runtime);
    return rc;
}
