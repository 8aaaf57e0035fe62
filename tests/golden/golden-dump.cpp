// golden-dump: writes llama.cpp's logits for one tiny GGUF model, in the format of ../shared/testdata/golden
// (see that README, "Golden files" and "How the goldens were produced"). Built by hand against the pinned
// llama.cpp (tests/golden/README.md says how); never part of Basalt's build or CI.
//
//   golden-dump MODEL.gguf ref|dflt OUTPREFIX [PROMPT]
//   golden-dump MODEL.gguf embed OUTPREFIX [PROMPT]
//
// Writes OUTPREFIX.batch.f32 (every prompt position, the whole prompt in one llama_decode), OUTPREFIX.seq.f32 (the
// same tokens one llama_decode each, fresh context), OUTPREFIX.gen.f32 (32 greedy steps after the batch prefill, no
// EOS stop, argmax ties to the lowest id) and OUTPREFIX.json (tokens, margins, batch-vs-seq, parameters).
// `ref`: K/V cache F32, flash attention off. `dflt`: llama.cpp's defaults (K/V F16, flash attention auto).
// `embed` (embedding models, ../shared/testdata/golden/README.md "Embedding goldens"): OUTPREFIX.embd.f32 (every
// row's output embedding, pooling NONE, the whole prompt in one llama_decode), OUTPREFIX.pooled.f32
// (llama_get_embeddings_seq with the file's pooling, not normalised: n_embd floats, or the rank head's n_cls_out
// scores for pooling RANK) and OUTPREFIX.json ("kind": "embeddings"); K/V F32 and flash attention off.
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int kGenSteps = 32;
constexpr const char* kPrompt = "Once upon a time, the stranger opened the wooden box.";

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "golden-dump: %s\n", what.c_str());
    std::exit(1);
}

struct Config {
    bool ref = true;
};

llama_context* new_context(llama_model* model, const Config& cfg) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 128;
    p.n_batch = 512;
    p.n_ubatch = 512;
    p.n_seq_max = 1;
    p.n_threads = 2;
    p.n_threads_batch = 2;
    if (cfg.ref) {
        p.type_k = GGML_TYPE_F32;
        p.type_v = GGML_TYPE_F32;
        p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    }
    llama_context* ctx = llama_init_from_model(model, p);
    if (ctx == nullptr) die("llama_init_from_model failed");
    return ctx;
}

// Decodes tokens at positions pos.. of sequence 0 with logits on every row; appends the rows to out.
void decode(llama_context* ctx, const std::vector<llama_token>& toks, int32_t pos, int32_t n_vocab,
            std::vector<float>& out) {
    llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
    for (size_t i = 0; i < toks.size(); ++i) {
        b.token[i] = toks[i];
        b.pos[i] = pos + static_cast<int32_t>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = static_cast<int32_t>(toks.size());
    if (llama_decode(ctx, b) != 0) die("llama_decode failed");
    for (size_t i = 0; i < toks.size(); ++i) {
        const float* row = llama_get_logits_ith(ctx, static_cast<int32_t>(i));
        out.insert(out.end(), row, row + n_vocab);
    }
    llama_batch_free(b);
}

// An embeddings context (K/V F32 and flash attention off, as `ref`) with the given pooling.
llama_context* new_embed_context(llama_model* model, enum llama_pooling_type pooling) {
    llama_context_params p = llama_context_default_params();
    p.n_ctx = 128;
    p.n_batch = 512;
    p.n_ubatch = 512;
    p.n_seq_max = 1;
    p.n_threads = 2;
    p.n_threads_batch = 2;
    p.embeddings = true;
    p.pooling_type = pooling;
    p.type_k = GGML_TYPE_F32;  // decoder embedders keep a cache within the pass: F32 as `ref`
    p.type_v = GGML_TYPE_F32;
    p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context* ctx = llama_init_from_model(model, p);
    if (ctx == nullptr) die("llama_init_from_model (embeddings) failed");
    return ctx;
}

// Runs the prompt as sequence 0 in one llama_decode with every row an output.
void decode_embed(llama_context* ctx, const std::vector<llama_token>& toks) {
    llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
    for (size_t i = 0; i < toks.size(); ++i) {
        b.token[i] = toks[i];
        b.pos[i] = static_cast<int32_t>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = static_cast<int32_t>(toks.size());
    if (llama_decode(ctx, b) != 0) die("llama_decode (embeddings) failed");
    llama_batch_free(b);
}

int32_t argmax(const float* row, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i) {
        if (row[i] > row[best]) best = i;
    }
    return best;
}

float margin(const float* row, int32_t n) {
    const int32_t b = argmax(row, n);
    float second = -INFINITY;
    for (int32_t i = 0; i < n; ++i) {
        if (i != b) second = std::max(second, row[i]);
    }
    return row[b] - second;
}

void write_f32(const std::string& path, const std::vector<float>& v) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(v.data(), sizeof(float), v.size(), f) != v.size()) die("cannot write " + path);
    std::fclose(f);
}

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

template <typename T>
std::string list(const std::vector<T>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(static_cast<double>(v[i]));
    return s + "]";
}

std::string quoted(const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') q += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            q += buf;
            continue;
        }
        q += c;
    }
    return q + "\"";
}

std::string base_name(const std::string& p) {
    const size_t slash = p.find_last_of('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

// The `embed` mode: per-row embeddings (pooling NONE) and the file's pooled result.
int dump_embeddings(llama_model* model, const std::vector<llama_token>& prompt, const std::string& prompt_text,
                    const std::string& model_path, const std::string& out) {
    const int32_t n = static_cast<int32_t>(prompt.size());
    const int32_t n_embd_out = llama_model_n_embd_out(model);
    std::vector<float> embd;
    {
        llama_context* ctx = new_embed_context(model, LLAMA_POOLING_TYPE_NONE);
        decode_embed(ctx, prompt);
        for (int32_t i = 0; i < n; ++i) {
            const float* row = llama_get_embeddings_ith(ctx, i);
            if (row == nullptr) die("llama_get_embeddings_ith failed");
            embd.insert(embd.end(), row, row + n_embd_out);
        }
        llama_free(ctx);
    }
    std::vector<float> pooled;
    int32_t pooling = 0;
    {
        llama_context* ctx = new_embed_context(model, LLAMA_POOLING_TYPE_UNSPECIFIED);
        pooling = llama_pooling_type(ctx);
        decode_embed(ctx, prompt);
        const float* v = llama_get_embeddings_seq(ctx, 0);
        if (v == nullptr) die("llama_get_embeddings_seq failed");
        const int32_t n_out =
            pooling == LLAMA_POOLING_TYPE_RANK ? static_cast<int32_t>(llama_model_n_cls_out(model)) : n_embd_out;
        pooled.assign(v, v + n_out);
        llama_free(ctx);
    }
    double rms = 0;
    for (float x : embd) rms += static_cast<double>(x) * x;
    rms = std::sqrt(rms / static_cast<double>(embd.size()));
    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    char arch[64] = "";
    llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);
    write_f32(out + ".embd.f32", embd);
    write_f32(out + ".pooled.f32", pooled);
    const std::string stem = base_name(out);
    std::string j = "{\n";
    j += " \"model\": " + quoted(base_name(model_path)) + ",\n";
    j += " \"model_desc\": " + quoted(desc) + ",\n";
    j += " \"arch\": " + quoted(arch) + ",\n";
    j += " \"n_embd\": " + std::to_string(n_embd_out) + ",\n";
    j += " \"prompt_text\": " + quoted(prompt_text) + ",\n";
    j += " \"prompt_tokens\": " + list(prompt) + ",\n";
    j += " \"n_prompt\": " + std::to_string(n) + ",\n";
    j += " \"kind\": \"embeddings\",\n";
    j += " \"pooling_type\": " + std::to_string(pooling) + ",\n";
    j += " \"n_pooled\": " + std::to_string(pooled.size()) + ",\n";
    j += " \"files\": {\n";
    j += "  \"embd\": {\"file\": " + quoted(stem + ".embd.f32") + ", \"dtype\": \"float32-le\", \"shape\": [" +
         std::to_string(n) + ", " + std::to_string(n_embd_out) +
         "], \"what\": \"every row's output embedding, pooling NONE, whole prompt in one llama_decode\"},\n";
    j += "  \"pooled\": {\"file\": " + quoted(stem + ".pooled.f32") + ", \"dtype\": \"float32-le\", \"shape\": [" +
         std::to_string(pooled.size()) +
         "], \"what\": \"llama_get_embeddings_seq(ctx, 0) with the file's pooling, not normalised\"}\n";
    j += " },\n";
    j += " \"params\": {\"kv_type\": \"f32\", \"flash_attn\": \"off\", \"n_threads\": 2, \"n_ctx\": 128, \"n_batch\": "
         "512, \"n_ubatch\": "
         "512, \"backend\": \"CPU\"},\n";
    j += " \"embedding_rms\": " + num(rms) + ",\n";
    j += " \"system_info\": " + quoted(llama_print_system_info()) + "\n";
    j += "}\n";
    FILE* f = std::fopen((out + ".json").c_str(), "w");
    if (f == nullptr || std::fputs(j.c_str(), f) < 0) die("cannot write " + out + ".json");
    std::fclose(f);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 4 ||
        (std::strcmp(argv[2], "ref") != 0 && std::strcmp(argv[2], "dflt") != 0 && std::strcmp(argv[2], "embed") != 0)) {
        std::fprintf(stderr, "usage: %s MODEL.gguf ref|dflt|embed OUTPREFIX [PROMPT]\n", argv[0]);
        return 2;
    }
    const std::string model_path = argv[1], out = argv[3];
    const std::string prompt_text = argc > 4 ? argv[4] : kPrompt;
    Config cfg;
    cfg.ref = std::strcmp(argv[2], "ref") == 0;

    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(model_path.c_str(), mp);
    if (model == nullptr) die("cannot load " + model_path);
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int32_t V = llama_vocab_n_tokens(vocab);

    std::vector<llama_token> prompt(prompt_text.size() + 8);
    const int32_t n = llama_tokenize(vocab, prompt_text.c_str(), static_cast<int32_t>(prompt_text.size()),
                                     prompt.data(), static_cast<int32_t>(prompt.size()), true, false);
    if (n <= 0) die("tokenization failed");
    prompt.resize(static_cast<size_t>(n));
    if (std::strcmp(argv[2], "embed") == 0) {
        const int rc = dump_embeddings(model, prompt, prompt_text, model_path, out);
        llama_model_free(model);
        llama_backend_free();
        return rc;
    }

    // 1. batch prefill, then the greedy continuation in the same context.
    std::vector<float> batch, gen;
    std::vector<llama_token> greedy;
    std::vector<float> margins;
    {
        llama_context* ctx = new_context(model, cfg);
        decode(ctx, prompt, 0, V, batch);
        const float* last = batch.data() + static_cast<size_t>(n - 1) * V;
        llama_token tok = argmax(last, V);
        margins.push_back(margin(last, V));
        for (int s = 0; s < kGenSteps; ++s) {
            greedy.push_back(tok);
            std::vector<float> row;
            decode(ctx, {tok}, n + s, V, row);
            gen.insert(gen.end(), row.begin(), row.end());
            tok = argmax(row.data(), V);
            if (s + 1 < kGenSteps) margins.push_back(margin(row.data(), V));
        }
        llama_free(ctx);
    }
    // 2. the same prompt one token per llama_decode, fresh context.
    std::vector<float> seq;
    {
        llama_context* ctx = new_context(model, cfg);
        for (int32_t i = 0; i < n; ++i) decode(ctx, {prompt[static_cast<size_t>(i)]}, i, V, seq);
        llama_free(ctx);
    }

    double max_diff = 0, max_rel = 0, max_logit = 0;
    int mismatches = 0;
    for (int32_t i = 0; i < n; ++i) {
        const float* a = batch.data() + static_cast<size_t>(i) * V;
        const float* b = seq.data() + static_cast<size_t>(i) * V;
        double row_diff = 0, row_max = 0;
        for (int32_t v = 0; v < V; ++v) {
            row_diff = std::max(row_diff, std::abs(static_cast<double>(a[v]) - b[v]));
            row_max = std::max(row_max, std::abs(static_cast<double>(a[v])));
        }
        max_diff = std::max(max_diff, row_diff);
        max_logit = std::max(max_logit, row_max);
        if (row_max > 0) max_rel = std::max(max_rel, row_diff / row_max);
        if (argmax(a, V) != argmax(b, V)) ++mismatches;
    }

    std::string text;
    for (llama_token t : greedy) {
        char buf[256];
        const int32_t len = llama_token_to_piece(vocab, t, buf, sizeof buf, 0, true);
        if (len > 0) text.append(buf, static_cast<size_t>(len));
    }
    std::string hex;
    for (unsigned char c : text) {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%02x", c);
        hex += buf;
    }
    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    char arch[64] = "";
    llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);

    write_f32(out + ".batch.f32", batch);
    write_f32(out + ".seq.f32", seq);
    write_f32(out + ".gen.f32", gen);
    const std::string stem = base_name(out);
    const std::string shape_p = "[" + std::to_string(n) + ", " + std::to_string(V) + "]";
    const std::string shape_g = "[" + std::to_string(kGenSteps) + ", " + std::to_string(V) + "]";
    std::string j = "{\n";
    j += " \"model\": " + quoted(base_name(model_path)) + ",\n";
    j += " \"model_desc\": " + quoted(desc) + ",\n";
    j += " \"arch\": " + quoted(arch) + ",\n";
    j += " \"n_vocab\": " + std::to_string(V) + ",\n";
    j += " \"n_embd\": " + std::to_string(llama_model_n_embd(model)) + ",\n";
    j += " \"encoder_decoder\": false,\n";
    j += " \"prompt_text\": " + quoted(prompt_text) + ",\n";
    j += " \"prompt_tokens\": " + list(prompt) + ",\n";
    j += " \"n_prompt\": " + std::to_string(n) + ",\n";
    j += " \"kind\": \"logits\",\n";
    j += " \"greedy_tokens\": " + list(greedy) + ",\n";
    j += " \"n_gen\": " + std::to_string(kGenSteps) + ",\n";
    j += " \"greedy_top1_top2_margin\": " + list(margins) + ",\n";
    j += " \"greedy_text_utf8_hex\": \"" + hex + "\",\n";
    j += " \"files\": {\n";
    j += "  \"batch\": {\"file\": " + quoted(stem + ".batch.f32") +
         ", \"dtype\": \"float32-le\", \"shape\": " + shape_p +
         ", \"what\": \"logits for every prompt position, whole prompt in one llama_decode\"},\n";
    j += "  \"seq\": {\"file\": " + quoted(stem + ".seq.f32") + ", \"dtype\": \"float32-le\", \"shape\": " + shape_p +
         ", \"what\": \"logits for every prompt position, prompt fed one token per llama_decode\"},\n";
    j += "  \"gen\": {\"file\": " + quoted(stem + ".gen.f32") + ", \"dtype\": \"float32-le\", \"shape\": " + shape_g +
         ", \"what\": \"row s = logits after feeding greedy token s at position n_prompt+s; argmax(row s) = greedy "
         "token s+1\"}\n";
    j += " },\n";
    j += std::string(" \"params\": {\"kv_type\": \"") + (cfg.ref ? "f32" : "f16") + "\", \"flash_attn\": \"" +
         (cfg.ref ? "off" : "auto") +
         "\", \"n_threads\": 2, \"n_ctx\": 128, \"n_batch\": 512, \"n_ubatch\": 512, \"backend\": \"CPU\"},\n";
    j += " \"batch_vs_seq\": {\"max_abs_diff\": " + num(max_diff) +
         ", \"max_diff_rel_to_row_maxabs\": " + num(max_rel) +
         ", \"argmax_mismatches\": " + std::to_string(mismatches) + ", \"max_abs_logit\": " + num(max_logit) + "},\n";
    j += " \"greedy_distinct_tokens\": " + std::to_string(std::set<llama_token>(greedy.begin(), greedy.end()).size()) +
         ",\n";
    j += " \"system_info\": " + quoted(llama_print_system_info()) + "\n";
    j += "}\n";
    FILE* f = std::fopen((out + ".json").c_str(), "w");
    if (f == nullptr || std::fputs(j.c_str(), f) < 0) die("cannot write " + out + ".json");
    std::fclose(f);

    llama_model_free(model);
    llama_backend_free();
    return 0;
}
