#include "moe-stats.hpp"

#include <algorithm>
#include <vector>

namespace basalt::cli {

nlohmann::json moe_stats_json(basalt_session* session, const cpp::Model& model, const std::string& router) {
    return moe_stats_json([session](uint32_t il, basalt_moe_stats* st, uint64_t* per,
                                    size_t n) { return basalt_session_moe_stats(session, il, st, per, n); },
                          model, router);
}

nlohmann::json moe_stats_json(const std::function<basalt_status(uint32_t, basalt_moe_stats*, uint64_t*, size_t)>& get,
                              const cpp::Model& model, const std::string& router) {
    const basalt_model_info info = model.info();
    nlohmann::json layers = nlohmann::json::array();
    uint64_t tokens = 0, assignments = 0, dropped = 0, rerouted = 0;
    double worst = 0;
    std::vector<uint64_t> per(info.n_expert);
    for (uint32_t il = 0; il < info.n_layer; ++il) {
        basalt_moe_stats st{};
        st.struct_size = sizeof(st);
        cpp::check(get(il, &st, per.data(), per.size()));
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
    return {{"router", router},
            {"n_expert", info.n_expert},
            {"k", info.n_expert_used},
            {"assignments", assignments},
            {"dropped", dropped},
            {"rerouted", rerouted},
            {"dropped_fraction", all > 0 ? static_cast<double>(dropped) / all : 0.0},
            {"rerouted_fraction", all > 0 ? static_cast<double>(rerouted) / all : 0.0},
            {"max_imbalance", worst},
            {"layers", layers}};
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

}  // namespace basalt::cli
