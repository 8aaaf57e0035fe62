/*
 * c-generate: text generation from C99 through the public C API only, with Basalt's engine.
 *
 *   c-generate MODEL PROMPT [N_PREDICT [SAMPLER_CHAIN]]
 *
 * Loads MODEL (GGUF), creates an engine over it, submits one request (PROMPT, up to N_PREDICT new tokens,
 * default 32, with the sampler chain, default "greedy", e.g. "top_k:40;top_p:0.9;temp:0.7;dist:seed=42"), and
 * prints the text as the engine streams it through a callback. The output is the same as
 * `basalt run -m MODEL -p PROMPT -n N_PREDICT --samplers CHAIN` prints on stdout: both go through the engine.
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

/* Called by the engine after each step with the request's new text (UTF-8 complete; borrowed for the call). */
static void on_output(basalt_request* request, const int32_t* tokens, size_t n_tokens, const char* text,
                      size_t text_len, int32_t finish_reason, void* user_data) {
    (void)request;
    (void)tokens;
    (void)n_tokens;
    (void)finish_reason;
    (void)user_data;
    fwrite(text, 1, text_len, stdout);
    fflush(stdout);
}

int main(int argc, char** argv) {
    const char* model_path;
    const char* prompt;
    long n_predict = 32;
    const char* chain_spec = "greedy";
    basalt_runtime* runtime = NULL;
    basalt_model* model = NULL;
    basalt_engine* engine = NULL;
    basalt_request* request = NULL;
    basalt_engine_params ep;
    basalt_request_params rp;
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
        if (end == argv[3] || *end != '\0' || n_predict < 0 || n_predict > 0x7fffffffL) {
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
    memset(&ep, 0, sizeof ep);
    ep.struct_size = sizeof ep; /* zero fields: training context (at most 4096), one request at a time, cpu */
    if ((st = basalt_engine_create(runtime, model, &ep, &engine)) != BASALT_OK) {
        rc = report("basalt_engine_create", st);
        goto done;
    }
    memset(&rp, 0, sizeof rp);
    rp.struct_size = sizeof rp;
    rp.prompt = prompt;
    rp.prompt_len = strlen(prompt); /* tokenized with BOS as the vocabulary asks */
    rp.samplers = chain_spec;
    rp.max_tokens = (int32_t)n_predict;
    rp.seed = -1; /* the chain's own */
    rp.callback = on_output;
    if ((st = basalt_engine_submit(engine, &rp, &request)) != BASALT_OK) {
        rc = report("basalt_engine_submit", st);
        goto done;
    }
    /* steps until every request has finished (this thread runs the engine's loop) */
    if ((st = basalt_engine_run(engine)) != BASALT_OK) {
        rc = report("basalt_engine_run", st);
        goto done;
    }
    if (basalt_request_finish_reason(request) == BASALT_FINISH_ERROR) {
        fprintf(stderr, "c-generate: the request failed: %s\n", basalt_request_error(request));
        goto done;
    }
    printf("\n");
    rc = 0;
done:
    basalt_request_free(request);
    basalt_engine_destroy(engine);
    basalt_model_free(model);
    basalt_runtime_destroy(runtime);
    return rc;
}
