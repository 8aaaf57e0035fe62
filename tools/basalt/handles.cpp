#include "handles.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

namespace basalt::cli {

bool tokenize(const basalt_model* model, const std::string& text, uint32_t flags, std::vector<int32_t>& out) {
    size_t n = 0;
    out.assign(text.size() + 8, 0);
    basalt_status st = basalt_tokenize(model, text.data(), text.size(), flags, out.data(), out.size(), &n);
    if (st == BASALT_ERR_CAPACITY) {
        out.assign(n, 0);
        st = basalt_tokenize(model, text.data(), text.size(), flags, out.data(), out.size(), &n);
    }
    if (st != BASALT_OK) {
        print_error(basalt_last_error());
        return false;
    }
    out.resize(n);
    return true;
}

std::string piece(const basalt_model* model, int32_t token, bool special) {
    char buf[256];
    size_t len = 0;
    basalt_status st = basalt_token_to_piece(model, token, special ? 1 : 0, buf, sizeof(buf), &len);
    if (st == BASALT_ERR_CAPACITY) {
        std::string big(len + 1, '\0');
        if (basalt_token_to_piece(model, token, special ? 1 : 0, big.data(), big.size(), &len) != BASALT_OK) return {};
        big.resize(len);
        return big;
    }
    return st == BASALT_OK ? std::string(buf, len) : std::string();
}

bool parse_ids(const std::string& s, std::vector<int32_t>& out) {
    out.clear();
    if (s.find_first_not_of(" \t") == std::string::npos) {
        print_error("no token ids given (expected a list such as 1,2,3)");
        return false;
    }
    // Entries separated by commas (or by spaces alone, "1 2 3"); every entry must be an id.
    const bool commas = s.find(',') != std::string::npos;
    size_t i = 0;
    for (;;) {
        const size_t end = commas ? std::min(s.find(',', i), s.size()) : std::min(s.find(' ', i), s.size());
        size_t a = i, b = end;
        while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
        while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
        if (a == b) {
            if (!commas && end < s.size()) {  // runs of spaces between space-separated ids
                i = end + 1;
                continue;
            }
            if (commas || out.empty()) {
                print_error("an empty entry in the id list '" + s + "' (expected ids separated by commas, e.g. 1,2,3)");
                return false;
            }
        } else {
            int32_t v = 0;
            auto [p, ec] = std::from_chars(s.data() + a, s.data() + b, v);
            if (ec != std::errc() || p != s.data() + b) {
                print_error("'" + s.substr(a, b - a) + "' is not a token id");
                return false;
            }
            out.push_back(v);
        }
        if (end >= s.size()) break;
        i = end + 1;
    }
    return true;
}

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
        "backend device index (see basalt plugins; default: the first, or "
        "BASALT_VK_DEVICE for vulkan)")("backend-param", po::value<std::vector<std::string>>()->composing(),
                                        "KEY=VALUE passed to the backend (repeatable), e.g. isa=avx2 for cpu")(
        "moe-router", po::value<std::string>()->default_value("dropless"),
        "MoE routing: dropless (top-k), or capacity:factor=C,overflow=drop|reroute (each expert takes at most "
        "ceil(C x tokens x k / n_expert) assignments per forward pass; docs/moe.md)");
}

bool moe_stats_json(basalt_session* session, const basalt_model* model, const std::string& router,
                    nlohmann::json& out) {
    return moe_stats_json([session](uint32_t il, basalt_moe_stats* st, uint64_t* per,
                                    size_t n) { return basalt_session_moe_stats(session, il, st, per, n); },
                          model, router, out);
}

bool moe_stats_json(const std::function<basalt_status(uint32_t, basalt_moe_stats*, uint64_t*, size_t)>& get,
                    const basalt_model* model, const std::string& router, nlohmann::json& out) {
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    if (basalt_model_describe(model, &info) != BASALT_OK) {
        print_error(basalt_last_error());
        return false;
    }
    nlohmann::json layers = nlohmann::json::array();
    uint64_t tokens = 0, assignments = 0, dropped = 0, rerouted = 0;
    double worst = 0;
    std::vector<uint64_t> per(info.n_expert);
    for (uint32_t il = 0; il < info.n_layer; ++il) {
        basalt_moe_stats st{};
        st.struct_size = sizeof(st);
        if (get(il, &st, per.data(), per.size()) != BASALT_OK) {
            print_error(basalt_last_error());
            return false;
        }
        layers.push_back({{"layer", il},
                          {"passes", st.passes},
                          {"tokens", st.tokens},
                          {"assignments", st.assignments},
                          {"dropped", st.dropped},
                          {"rerouted", st.rerouted},
                          {"imbalance", st.imbalance},
                          {"per_expert", per}});
        tokens += st.tokens;
        assignments += st.assignments;
        dropped += st.dropped;
        rerouted += st.rerouted;
        worst = std::max(worst, st.imbalance);
    }
    // Fractions of all (token, rank) assignments over every layer.
    const double all = static_cast<double>(tokens) * info.n_expert_used;
    out = {{"router", router},
           {"n_expert", info.n_expert},
           {"k", info.n_expert_used},
           {"assignments", assignments},
           {"dropped", dropped},
           {"rerouted", rerouted},
           {"dropped_fraction", all > 0 ? static_cast<double>(dropped) / all : 0.0},
           {"rerouted_fraction", all > 0 ? static_cast<double>(rerouted) / all : 0.0},
           {"max_imbalance", worst},
           {"layers", layers}};
    return true;
}

void print_moe_stats(const nlohmann::json& s, std::ostream& os) {
    os << "moe router " << s["router"].get<std::string>() << ": dropped " << s["dropped"] << " ("
       << 100.0 * s["dropped_fraction"].get<double>() << "%), rerouted " << s["rerouted"] << " ("
       << 100.0 * s["rerouted_fraction"].get<double>() << "%) of the assignments\n";
    for (const auto& l : s["layers"]) {
        os << "  layer " << l["layer"] << ": per expert " << l["per_expert"].dump() << ", dropped " << l["dropped"]
           << ", rerouted " << l["rerouted"] << ", imbalance " << l["imbalance"].get<double>() << '\n';
    }
}

void add_decoder_options(po::options_description& d) {
    d.add_options()("decoder", po::value<std::string>()->default_value("sample"),
                    "decoding strategy NAME[:key=value,...]: sample, beam:width=4,length_penalty=1.0, "
                    "speculative:k=4, contrastive:alpha=0.1 (docs/decoding.md)")(
        "draft", po::value<std::string>(), "draft model for speculative decoding (a file or a shipped name: draft)")(
        "amateur", po::value<std::string>(), "amateur model for contrastive decoding (a file or a shipped name)");
}

int load_second_model(const po::variables_map& vm, std::unique_ptr<Model>& out) {
    if (vm.count("draft") != 0 && vm.count("amateur") != 0) {
        print_error("give --draft or --amateur, not both: the engine attaches one second model");
        return kExitUsage;
    }
    const char* key = vm.count("draft") != 0 ? "draft" : (vm.count("amateur") != 0 ? "amateur" : nullptr);
    if (key == nullptr) return kExitOk;
    out = std::make_unique<Model>(vm[key].as<std::string>());
    return out->ok() ? kExitOk : kExitError;
}

bool decoder_needs(basalt_runtime* rt, const std::string& spec, basalt_decoder_needs& out) {
    out = basalt_decoder_needs{};
    out.struct_size = sizeof(out);
    if (basalt_decoder_requirements(rt, spec.c_str(), &out) != BASALT_OK) {
        print_error(basalt_last_error());
        return false;
    }
    return true;
}

basalt_session_params session_params(const po::variables_map& vm, SessionStrings& keep) {
    keep.kv_type = vm["kv-type"].as<std::string>();
    keep.k_type = vm.count("k-type") != 0 ? vm["k-type"].as<std::string>() : keep.kv_type;
    keep.v_type = vm.count("v-type") != 0 ? vm["v-type"].as<std::string>() : keep.kv_type;
    const long long residual = vm.count("kv-residual") != 0 ? vm["kv-residual"].as<long long>() : 0;
    keep.kv_residual = residual != 0 ? std::to_string(residual) : "";
    keep.keys = {"k_type", "v_type"};
    keep.values = {keep.k_type.c_str(), keep.v_type.c_str()};
    if (!keep.kv_residual.empty()) {
        keep.keys.push_back("residual");
        keep.values.push_back(keep.kv_residual.c_str());
    }
    keep.kv_params = basalt_params{};
    keep.kv_params.struct_size = sizeof(basalt_params);
    keep.kv_params.count = keep.keys.size();
    keep.kv_params.keys = keep.keys.data();
    keep.kv_params.values = keep.values.data();
    keep.backend_strings.clear();
    if (vm.count("device") != 0) {
        keep.backend_strings.push_back("device");
        keep.backend_strings.push_back(std::to_string(vm["device"].as<long long>()));
    }
    if (vm.count("backend-param") != 0) {
        for (const std::string& kv : vm["backend-param"].as<std::vector<std::string>>()) {
            const size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                throw std::invalid_argument("--backend-param '" + kv + "' is not KEY=VALUE");
            }
            keep.backend_strings.push_back(kv.substr(0, eq));
            keep.backend_strings.push_back(kv.substr(eq + 1));
        }
    }
    keep.backend_keys.clear();
    keep.backend_values.clear();
    for (size_t i = 0; i + 1 < keep.backend_strings.size(); i += 2) {
        keep.backend_keys.push_back(keep.backend_strings[i].c_str());
        keep.backend_values.push_back(keep.backend_strings[i + 1].c_str());
    }
    keep.backend_params = basalt_params{};
    keep.backend_params.struct_size = sizeof(basalt_params);
    keep.backend_params.count = keep.backend_keys.size();
    keep.backend_params.keys = keep.backend_keys.data();
    keep.backend_params.values = keep.backend_values.data();
    basalt_session_params p{};
    p.kv_params = &keep.kv_params;
    p.backend_params = keep.backend_keys.empty() ? nullptr : &keep.backend_params;
    p.struct_size = sizeof(p);
    p.n_ctx = static_cast<uint32_t>(vm["ctx"].as<long long>());
    p.n_batch = static_cast<uint32_t>(vm["batch"].as<long long>());
    p.n_threads = static_cast<uint32_t>(vm["threads"].as<long long>());
    p.backend = vm["backend"].as<std::string>().c_str();
    p.kv_cache = vm["kv-cache"].as<std::string>().c_str();
    keep.moe_router = vm["moe-router"].as<std::string>();
    p.moe_router = keep.moe_router.c_str();
    return p;
}

basalt_engine_params engine_params(const po::variables_map& vm, SessionStrings& keep) {
    const basalt_session_params sp = session_params(vm, keep);
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_ctx = sp.n_ctx;
    p.n_parallel = 1;
    p.max_batch_tokens = sp.n_batch;
    p.n_threads = sp.n_threads;
    p.backend = sp.backend;
    p.kv_cache = sp.kv_cache;
    p.backend_params = sp.backend_params;
    p.kv_params = sp.kv_params;
    p.moe_router = sp.moe_router;
    if (vm.count("no-prefix-cache") != 0 && vm["no-prefix-cache"].as<bool>()) p.flags |= BASALT_ENGINE_NO_PREFIX_CACHE;
    return p;
}

}  // namespace basalt::cli
