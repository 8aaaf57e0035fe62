#include "engine-setup.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace basalt::cli {

void add_session_options(po::options_description& d) {
    d.add_options()("backend", po::value<std::string>()->default_value("cpu"), "compute backend component")(
        "kv-cache", po::value<std::string>()->default_value("paged"),
        "KV cache manager NAME[:key=value,...]: paged, or sink:n_sink=4,window=252 (streaming, docs/kv-cache.md)")(
        "threads,t", int_option("threads", 0, 4096)->default_value(0), "backend threads (0: all cores)")(
        "ctx,c", int_option("ctx", 0, INT32_MAX)->default_value(0), "context size (0: training context, at most 4096)")(
        "batch,b", int_option("batch", 0, INT32_MAX)->default_value(512), "tokens per forward pass (0: 512)")(
        "kv-type", po::value<std::string>()->default_value("f16"),
        "stored type of K and V (f32, f16, q8_0, q4_0, kivi_t8/4/2 per token, kivi_c8/4/2 per channel; "
        "docs/kv-cache.md)")("k-type", po::value<std::string>(), "stored type of K (overrides --kv-type)")(
        "v-type", po::value<std::string>(), "stored type of V (overrides --kv-type)")(
        "kv-residual", int_option("kv-residual", 0, 65536)->default_value(0),
        "residual window of quantized K/V: the newest tokens (up to R, a multiple of 32) stay F32 until their unit "
        "of R is full (kivi_c* need one, e.g. 32 or 128)")(
        "device", int_option("device", 0, INT32_MAX),
        "backend device index, the one way to choose a device (see basalt plugins; default: the first)")(
        "backend-param", po::value<std::vector<std::string>>()->composing(),
        "KEY=VALUE passed to the backend (repeatable), e.g. isa=avx2 for cpu")(
        "moe-router", po::value<std::string>()->default_value("dropless"),
        "MoE routing: dropless (top-k), or capacity:factor=C,overflow=drop|reroute (each expert takes at most "
        "ceil(C x tokens x k / n_expert) assignments per forward pass; docs/moe.md)");
}

void add_decoder_options(po::options_description& d) {
    d.add_options()("decoder", po::value<std::string>()->default_value("sample"),
                    "decoding strategy NAME[:key=value,...]: sample, beam:width=4,length_penalty=1.0, "
                    "speculative:k=4, contrastive:alpha=0.1 (docs/decoding.md)")(
        "draft", po::value<std::string>(), "draft model for speculative decoding (a file or a shipped name: draft)")(
        "amateur", po::value<std::string>(), "amateur model for contrastive decoding (a file or a shipped name)");
    add_draft_adaptive_option(d);
}

void add_draft_adaptive_option(po::options_description& d) {
    d.add_options()("draft-adaptive", po::value<std::string>(),
                    "speculative decoding: on (default) chooses each round's draft length, none included, from the "
                    "running acceptance and the measured step costs; off drafts the fixed k (docs/decoding.md)");
}

void add_admission_options(po::options_description& d) {
    d.add_options()("admission", po::value<std::string>(),
                    "on-demand (default): admit while the KV blocks a request needs now are free, preempting the "
                    "newest running requests (recomputed later) when blocks run out; reserve: admit only when "
                    "prompt + max tokens fit, never preempt (docs/engine.md)")(
        "kv-slots", int_option("kv-slots", 0, INT32_MAX),
        "KV slots (token positions) shared by all running requests (default: --ctx x --parallel)");
}

void add_max_step_option(po::options_description& d, const char* default_value) {
    d.add_options()("max-step-ms", po::value<std::string>()->default_value(default_value),
                    "step-time budget while requests decode: prompt pieces join a step only as far as its predicted "
                    "time stays within it. auto: 2x the decode rows' own; Fx: F times theirs (F >= 1); MS: that many "
                    "ms; off: none, the --chunk pieces as packed (docs/engine.md)");
}

void max_step(const std::string& v, double& ms, double& factor) {
    const std::string what = "--max-step-ms: '" + v + "' is not auto, off, a number of ms > 0 or a factor Fx >= 1";
    ms = 0;
    factor = 0;
    if (v == "auto") return;
    if (v == "off") {
        ms = -1;
        return;
    }
    const bool is_factor = !v.empty() && v.back() == 'x';
    const std::string num = is_factor ? v.substr(0, v.size() - 1) : v;
    size_t used = 0;
    double x = 0;
    try {
        x = std::stod(num, &used);
    } catch (const std::exception&) {
        throw UsageError(what);
    }
    if (used != num.size() || !std::isfinite(x) || (is_factor ? x < 1 : x <= 0)) throw UsageError(what);
    (is_factor ? factor : ms) = x;
}

std::string draft_adaptive(const po::variables_map& vm) {
    if (vm.count("draft-adaptive") == 0) return {};
    const std::string v = vm["draft-adaptive"].as<std::string>();
    if (v != "on" && v != "off") throw UsageError("--draft-adaptive: '" + v + "' is not on or off");
    return v;
}

uint32_t decoder_sequences(const cpp::Runtime& rt, const cpp::Model& model, const std::string& spec) {
    const basalt_decoder_needs needs = rt.decoder_needs(spec);
    return needs.n_seq + (model.info().n_layer_recurrent > 0 ? needs.n_snapshot_seq : 0);
}

cpp::RuntimeOptions runtime_options(const GlobalOptions& g) {
    cpp::RuntimeOptions o;
    o.flags = g.no_default_plugins ? static_cast<uint32_t>(BASALT_RUNTIME_NO_DEFAULT_PLUGINS) : 0U;
    o.plugins = g.plugins;
    return o;
}

namespace {

// A tensor type name as the options give it; UsageError naming the option when basalt does not know it.
std::string type_option(const po::variables_map& vm, const char* name, const std::string& fallback) {
    const std::string t = vm.count(name) != 0 ? vm[name].as<std::string>() : fallback;
    int32_t id = 0;
    if (basalt_dtype_from_name(t.c_str(), &id) != BASALT_OK)
        throw UsageError(std::string("--") + name + ": " + basalt_last_error());
    return t;
}

uint32_t u32(const po::variables_map& vm, const char* name) {
    return static_cast<uint32_t>(vm[name].as<long long>());
}

}  // namespace

cpp::ComputeParams compute_params(const po::variables_map& vm) {
    cpp::ComputeParams c;
    c.backend = vm["backend"].as<std::string>();
    c.kv_cache = vm["kv-cache"].as<std::string>();
    c.n_threads = u32(vm, "threads");
    c.moe_router = vm["moe-router"].as<std::string>();
    const std::string kv_type = type_option(vm, "kv-type", "f16");
    c.kv_params.add("k_type", vm.count("k-type") != 0 ? type_option(vm, "k-type", kv_type) : kv_type);
    c.kv_params.add("v_type", vm.count("v-type") != 0 ? type_option(vm, "v-type", kv_type) : kv_type);
    if (const long long residual = vm["kv-residual"].as<long long>(); residual != 0) {
        // Checked here so that the message names the option typed, not the manager's "residual" parameter.
        if (residual % 32 != 0)
            throw UsageError("--kv-residual must be 0 or a multiple of 32 up to 65536, not " +
                             std::to_string(residual));
        c.kv_params.add("residual", std::to_string(residual));
    }
    if (vm.count("device") != 0) c.device = u32(vm, "device");
    if (vm.count("backend-param") != 0) {
        for (const std::string& kv : vm["backend-param"].as<std::vector<std::string>>()) {
            const size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) throw UsageError("--backend-param '" + kv + "' is not KEY=VALUE");
            if (kv.substr(0, eq) == "device")
                throw UsageError("--backend-param '" + kv + "': choose the device with --device " + kv.substr(eq + 1));
            c.backend_params.add(kv.substr(0, eq), kv.substr(eq + 1));
        }
    }
    return c;
}

cpp::SessionParams session_params(const po::variables_map& vm) {
    cpp::SessionParams p;
    p.compute = compute_params(vm);
    p.n_ctx = u32(vm, "ctx");
    p.n_batch = u32(vm, "batch");
    return p;
}

cpp::EngineParams engine_params(const po::variables_map& vm) {
    cpp::EngineParams p;
    p.compute = compute_params(vm);
    p.n_ctx = u32(vm, "ctx");
    p.max_batch_tokens = u32(vm, "batch");
    if (vm.count("max-batch-tokens") != 0) p.max_batch_tokens = u32(vm, "max-batch-tokens");
    if (vm.count("parallel") != 0) p.n_parallel = u32(vm, "parallel");
    if (vm.count("chunk") != 0) p.prefill_chunk = u32(vm, "chunk");
    if (vm.count("no-prefix-cache") != 0 && vm["no-prefix-cache"].as<bool>()) p.flags |= BASALT_ENGINE_NO_PREFIX_CACHE;
    if (vm.count("moe-stats") != 0 && vm["moe-stats"].as<bool>()) p.flags |= BASALT_ENGINE_MOE_STATS;
    if (vm.count("admission") != 0) {
        const std::string a = vm["admission"].as<std::string>();
        if (a != "on-demand" && a != "reserve")
            throw UsageError("--admission: '" + a + "' is not on-demand or reserve");
        if (a == "reserve") p.flags |= BASALT_ENGINE_ADMIT_RESERVE;
    }
    if (vm.count("kv-slots") != 0) p.n_kv_slots = u32(vm, "kv-slots");
    if (vm.count("max-step-ms") != 0) max_step(vm["max-step-ms"].as<std::string>(), p.max_step_ms, p.max_step_factor);
    if (vm.count("prefix-state-mib") != 0) p.prefix_state_bytes = uint64_t{u32(vm, "prefix-state-mib")} << 20;
    return p;
}

cpp::EngineOptions engine_options(const po::variables_map& vm, const GlobalOptions& g) {
    if (vm.count("draft") != 0 && vm.count("amateur") != 0)
        throw UsageError("give --draft or --amateur, not both: the engine attaches one second model");
    cpp::EngineOptions o;
    o.params = engine_params(vm);
    o.runtime = runtime_options(g);
    o.model = vm["model"].as<std::string>();
    if (vm.count("draft") != 0) o.second_model = vm["draft"].as<std::string>();
    if (vm.count("amateur") != 0) o.second_model = vm["amateur"].as<std::string>();
    return o;
}

}  // namespace basalt::cli
