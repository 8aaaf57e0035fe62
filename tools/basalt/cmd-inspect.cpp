// `basalt inspect MODEL`: architecture, hyper-parameters, parameter count, tensor types, and the memory plan
// (weights + KV cache + scratch) for a context and batch size, as a table or JSON.
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "cli.hpp"

namespace basalt::cli {
namespace {

// The name of a BASALT_POOLING_* value (basalt_model_info.pooling).
const char* pooling_name(int32_t pooling) {
    static const char* const kNames[] = {"model", "none", "mean", "cls", "last", "rank"};
    return pooling >= 0 && pooling <= BASALT_POOLING_RANK ? kNames[pooling] : "?";
}

std::string human(uint64_t bytes) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(2);
    if (bytes >= (1ull << 30)) {
        os << static_cast<double>(bytes) / static_cast<double>(1ull << 30) << " GiB";
    } else if (bytes >= (1ull << 20)) {
        os << static_cast<double>(bytes) / static_cast<double>(1ull << 20) << " MiB";
    } else if (bytes >= (1ull << 10)) {
        os << static_cast<double>(bytes) / 1024.0 << " KiB";
    } else {
        os.str("");
        os << bytes << " B";
    }
    return os.str();
}

struct Usage {
    uint64_t tensors = 0, params = 0, bytes = 0;
};

int run_inspect(const po::variables_map& vm, const GlobalOptions& /*g*/) {
    const std::string path = vm["model"].as<std::string>();
    basalt_model* model = nullptr;
    if (basalt_model_load(nullptr, path.c_str(), nullptr, &model) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    struct Guard {
        basalt_model* m;
        ~Guard() { basalt_model_free(m); }
    } guard{model};

    basalt_model_info info{};
    info.struct_size = sizeof(info);
    if (basalt_model_describe(model, &info) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    basalt_plan_params pp{};
    pp.struct_size = sizeof(pp);
    pp.n_ctx = static_cast<uint32_t>(vm["ctx"].as<long long>());
    pp.n_batch = static_cast<uint32_t>(vm["batch"].as<long long>());
    pp.n_seq_max = static_cast<uint32_t>(vm["seqs"].as<long long>());
    pp.k_type = -1;
    pp.v_type = -1;
    if (vm.count("kv-type") != 0U) {
        int32_t t = 0;
        if (basalt_dtype_from_name(vm["kv-type"].as<std::string>().c_str(), &t) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitUsage;
        }
        pp.k_type = pp.v_type = t;
    }
    for (const char* opt : {"k-type", "v-type"}) {
        if (vm.count(opt) == 0U) continue;
        int32_t t = 0;
        if (basalt_dtype_from_name(vm[opt].as<std::string>().c_str(), &t) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitUsage;
        }
        (std::string(opt) == "k-type" ? pp.k_type : pp.v_type) = t;
    }
    pp.kv_residual = static_cast<uint32_t>(vm["kv-residual"].as<long long>());
    basalt_memory_plan plan{};
    plan.struct_size = sizeof(plan);
    if (basalt_model_plan(model, &pp, &plan) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    // The sessions' KV caches (kv-paged) store a quantized type in blocks of 32 along each head: a plan for a head
    // that is not whole blocks describes a cache `basalt run` refuses, and inspect says so.
    std::string kv_refused;
    for (const auto& [which, type, hd, name] : {std::tuple{"K", plan.k_type, info.head_dim_k, "head_dim_k"},
                                                std::tuple{"V", plan.v_type, info.head_dim_v, "head_dim_v"}}) {
        if (kv_refused.empty() && type != BASALT_DTYPE_F32 && type != BASALT_DTYPE_F16 && hd % 32 != 0)
            kv_refused = std::string(which) + " type " + basalt_dtype_name(type) +
                         " is stored in blocks of 32 along each head, but this model's " + name + " is " +
                         std::to_string(hd) + ": basalt run refuses this cache (f16 or f32 fit any head)";
    }
    // Whether a session could run it (the graph built against the tensors, nothing allocated). A broken file
    // (a required tensor missing or unusable) makes inspect fail after its report; an architecture this build has
    // no graph builder for does not.
    const basalt_status run_status = basalt_model_check_runnable(model);
    const std::string run_error = run_status == BASALT_OK ? "" : basalt_last_error();
    const int rc = run_status == BASALT_OK || run_status == BASALT_ERR_UNSUPPORTED ? kExitOk : kExitError;
    auto finish = [&] {
        if (rc != kExitOk) print_error(run_error);
        return rc;
    };
    std::map<std::string, Usage> types;
    for (size_t i = 0; i < basalt_model_tensor_count(model); ++i) {
        basalt_model_tensor t{};
        t.struct_size = sizeof(t);
        if (basalt_model_tensor_info(model, i, &t) != BASALT_OK) {
            print_error(basalt_last_error());
            return kExitError;
        }
        Usage& u = types[basalt_dtype_name(t.type)];
        u.tensors += 1;
        u.params += static_cast<uint64_t>(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
        u.bytes += t.n_bytes;
    }

    if (vm["json"].as<bool>()) {
        Json j(std::cout);
        j.begin_object();
        j.key("file").value(path);
        j.key("file_bytes").value(static_cast<long long>(info.file_bytes));
        j.key("gguf_version").value(static_cast<long long>(info.gguf_version));
        j.key("arch").value(info.arch);
        j.key("name").value(info.name);
        j.key("supported").value(info.supported != 0);
        j.key("runnable").value(run_status == BASALT_OK);
        if (run_status != BASALT_OK) j.key("runnable_error").value(run_error);
        j.key("rope_scaling").value(info.rope_scaling != nullptr ? info.rope_scaling : "none");
        if (info.pooling != BASALT_POOLING_MODEL) {  // an embedding model (docs/embeddings.md)
            j.key("pooling").value(pooling_name(info.pooling));
            j.key("rank_outputs").value(static_cast<long long>(info.n_cls_out));
        }
        j.key("hparams").begin_object();
        j.key("n_layer").value(static_cast<long long>(info.n_layer));
        j.key("n_embd").value(static_cast<long long>(info.n_embd));
        j.key("n_head").value(static_cast<long long>(info.n_head));
        j.key("n_head_kv").value(static_cast<long long>(info.n_head_kv));
        j.key("head_dim_k").value(static_cast<long long>(info.head_dim_k));
        j.key("head_dim_v").value(static_cast<long long>(info.head_dim_v));
        j.key("n_ff").value(static_cast<long long>(info.n_ff));
        j.key("n_vocab").value(static_cast<long long>(info.n_vocab));
        j.key("n_ctx_train").value(static_cast<long long>(info.n_ctx_train));
        j.key("n_expert").value(static_cast<long long>(info.n_expert));
        j.key("n_expert_used").value(static_cast<long long>(info.n_expert_used));
        j.key("sliding_window").value(static_cast<long long>(info.sliding_window));
        j.end_object();
        j.key("n_params").value(static_cast<long long>(info.n_params));
        j.key("n_tensors").value(static_cast<long long>(info.n_tensors));
        j.key("tensor_types").begin_array();
        for (const auto& [name, u] : types) {
            j.begin_object();
            j.key("type").value(name);
            j.key("tensors").value(static_cast<long long>(u.tensors));
            j.key("params").value(static_cast<long long>(u.params));
            j.key("bytes").value(static_cast<long long>(u.bytes));
            j.end_object();
        }
        j.end_array();
        j.key("plan").begin_object();
        j.key("n_ctx").value(static_cast<long long>(plan.n_ctx));
        j.key("n_batch").value(static_cast<long long>(plan.n_batch));
        j.key("n_seq_max").value(static_cast<long long>(plan.n_seq_max));
        j.key("k_type").value(basalt_dtype_name(plan.k_type));
        j.key("v_type").value(basalt_dtype_name(plan.v_type));
        j.key("kv_residual").value(static_cast<long long>(pp.kv_residual));
        j.key("weight_bytes").value(static_cast<long long>(plan.weight_bytes));
        j.key("kv_bytes_per_token").value(static_cast<long long>(plan.kv_bytes_per_token));
        j.key("kv_bytes").value(static_cast<long long>(plan.kv_bytes));
        j.key("kv_cells_full").value(static_cast<long long>(plan.kv_cells_full));
        j.key("kv_cells_window").value(static_cast<long long>(plan.kv_cells_window));
        j.key("scratch_bytes").value(static_cast<long long>(plan.scratch_bytes));
        j.key("logits_bytes").value(static_cast<long long>(plan.logits_bytes));
        j.key("host_bytes").value(static_cast<long long>(plan.host_bytes));
        j.key("total_bytes").value(static_cast<long long>(plan.total_bytes));
        if (!kv_refused.empty()) j.key("refused").value(kv_refused);
        j.end_object();
        j.end_object();
        std::cout << '\n';
        return finish();
    }

    // Encoder-decoder models (t5): block_count is the encoder's; the decoder's is its own key (default the same).
    std::string decoder_layers;
    if (uint32_t n_dec = 0; basalt_model_decoder_layers(model, &n_dec) == BASALT_OK && n_dec != 0)
        decoder_layers = " (encoder) + " + std::to_string(n_dec) + " (decoder)";
    std::cout << "file         " << path << " (" << human(info.file_bytes) << ", GGUF v" << info.gguf_version << ")\n"
              << "model        " << (info.name[0] != '\0' ? info.name : "(unnamed)") << ", architecture " << info.arch
              << (info.supported != 0 ? "" : " (no graph builder in this build)") << '\n'
              << "shape        " << info.n_layer << " layers" << decoder_layers << ", embd " << info.n_embd
              << ", heads " << info.n_head << " (kv " << info.n_head_kv << "), head dim " << info.head_dim_k << "/"
              << info.head_dim_v << ", ffn " << info.n_ff << ", vocab " << info.n_vocab << ", train ctx "
              << info.n_ctx_train << '\n';
    std::cout << "runnable     " << (run_status == BASALT_OK ? "yes" : "no (" + run_error + ")") << '\n';
    std::cout << "rope scaling " << (info.rope_scaling != nullptr ? info.rope_scaling : "none") << '\n';
    if (info.pooling != BASALT_POOLING_MODEL) {
        std::cout << "embeddings   pooling " << pooling_name(info.pooling)
                  << (info.n_cls_out > 0 ? ", rank head of " + std::to_string(info.n_cls_out) + " output(s)" : "")
                  << " (basalt embed; docs/embeddings.md)\n";
    }
    if (info.n_expert > 0)
        std::cout << "experts      " << info.n_expert << " (" << info.n_expert_used << " used per token)\n";
    if (info.sliding_window > 0)
        std::cout << "window       " << info.sliding_window << " tokens on sliding-window layers\n";
    std::cout << "parameters   " << info.n_params << " in " << info.n_tensors << " tensors\n"
              << "tensor types\n";
    for (const auto& [name, u] : types) {
        std::cout << "  " << std::left << std::setw(8) << name << std::right << std::setw(6) << u.tensors << " tensors "
                  << std::setw(14) << u.params << " params " << std::setw(12) << human(u.bytes) << '\n';
    }
    std::cout << "memory plan  ctx " << plan.n_ctx << ", batch " << plan.n_batch << ", K "
              << basalt_dtype_name(plan.k_type) << ", V " << basalt_dtype_name(plan.v_type)
              << (pp.kv_residual != 0 ? ", residual window " + std::to_string(pp.kv_residual) : "")
              << (plan.n_seq_max > 1 ? ", " + std::to_string(plan.n_seq_max) + " sequences" : "") << '\n'
              << "  weights    " << std::setw(12) << human(plan.weight_bytes) << '\n'
              << "  KV cache   " << std::setw(12) << human(plan.kv_bytes) << "  (" << plan.kv_bytes_per_token
              << " B per token";
    if (plan.kv_cells_window != 0) {
        std::cout << "; rows per layer: " << plan.kv_cells_full << " full, " << plan.kv_cells_window
                  << " sliding-window";
    }
    std::cout << ")\n";
    std::cout << "  scratch    " << std::setw(12) << human(plan.scratch_bytes) << "  (of it "
              << human(plan.logits_bytes) << " logits of a generation step, host copy and IO buffer)\n"
              << "  host       " << std::setw(12) << human(plan.host_bytes)
              << "  (parsed metadata and the tokenizer's vocabulary)\n"
              << "  total      " << std::setw(12) << human(plan.total_bytes) << '\n';
    if (!kv_refused.empty()) std::cout << "  refused    " << kv_refused << '\n';
    return finish();
}

const Registrar kInspect{Command{
    "inspect", "show a model's architecture, tensors, memory plan and whether it can run",
    "basalt inspect MODEL [--ctx N] [--batch N] [--seqs N] [--kv-type T | --k-type T --v-type T] [--kv-residual R] "
    "[--json]\n\n"
    "The 'runnable' line says whether a session could run the model: its graph is built against the file's tensors\n"
    "without allocating anything. 'no (reason)' names a tensor the graph needs that is missing, has a zero-sized\n"
    "dimension or another shape (a broken file: the report is printed, then inspect exits with status 1), or an\n"
    "architecture this build has no graph builder for (exit status 0: the file is fine). --json: \"runnable\" and\n"
    "\"runnable_error\". A KV type the sessions cannot store for this model's heads is planned and marked 'refused'\n"
    "(--json: plan.refused).",
    [](po::options_description& d, po::positional_options_description& pos) {
        d.add_options()("model,m", po::value<std::string>()->required(), "GGUF model file or shipped model name")(
            "ctx,c", int_option("ctx", 0, INT32_MAX)->default_value(0),
            "context size (0: training context, at most 4096)")(
            "batch,b", int_option("batch", 0, INT32_MAX)->default_value(512), "tokens per forward pass (0: 512)")(
            "seqs", int_option("seqs", 1, INT32_MAX)->default_value(1),
            "sequences of the session (sliding-window layers keep a window per sequence)")(
            "kv-type", po::value<std::string>(), "stored type of K and V (f32, f16, q8_0, ...; default f16)")(
            "k-type", po::value<std::string>(), "stored type of K only")("v-type", po::value<std::string>(),
                                                                         "stored type of V only")(
            "kv-residual", int_option("kv-residual", 0, 65536)->default_value(0),
            "residual window of quantized K/V (F32 rows per sequence; kivi_c* need one)")("json", po::bool_switch(),
                                                                                          "print JSON");
        pos.add("model", 1);
    },
    run_inspect}};

}  // namespace
}  // namespace basalt::cli
