// RAII owners of C API handles used by the CLI subcommands, printing the library's message on failure.
#pragma once

#include <basalt/basalt.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace basalt::cli {

class Model {
  public:
    explicit Model(const std::string& path) {
        if (basalt_model_load(nullptr, path.c_str(), nullptr, &m_) != BASALT_OK) print_error(basalt_last_error());
    }
    ~Model() { basalt_model_free(m_); }
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;
    bool ok() const { return m_ != nullptr; }
    basalt_model* get() const { return m_; }

  private:
    basalt_model* m_ = nullptr;
};

class Session {
  public:
    Session(basalt_runtime* rt, const basalt_model* model, const basalt_session_params& p) {
        if (basalt_session_create(rt, model, &p, &s_) != BASALT_OK) print_error(basalt_last_error());
    }
    ~Session() { basalt_session_free(s_); }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    bool ok() const { return s_ != nullptr; }
    basalt_session* get() const { return s_; }

  private:
    basalt_session* s_ = nullptr;
};

class Engine {
  public:
    Engine(basalt_runtime* rt, const basalt_model* model, const basalt_engine_params& p) {
        if (basalt_engine_create(rt, model, &p, &e_) != BASALT_OK) print_error(basalt_last_error());
    }
    ~Engine() { basalt_engine_destroy(e_); }
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    bool ok() const { return e_ != nullptr; }
    basalt_engine* get() const { return e_; }

  private:
    basalt_engine* e_ = nullptr;
};

// Owns a request handle.
struct RequestHandle {
    basalt_request* r = nullptr;
    RequestHandle() = default;
    RequestHandle(const RequestHandle&) = delete;
    RequestHandle& operator=(const RequestHandle&) = delete;
    ~RequestHandle() { basalt_request_free(r); }
};

// Tokenizes text; returns false (after printing the error) on failure.
bool tokenize(const basalt_model* model, const std::string& text, uint32_t flags, std::vector<int32_t>& out);
// The text of one token; "" on failure.
std::string piece(const basalt_model* model, int32_t token, bool special);
// Parses "1,2,3" (spaces allowed); returns false naming the bad entry.
bool parse_ids(const std::string& s, std::vector<int32_t>& out);
// Session options shared by run/eval/perplexity/bench.
void add_session_options(po::options_description& d);
// The MoE routing statistics of a session that collects them (basalt_session_set_moe_stats) as JSON: router,
// totals (dropped / rerouted counts and fractions of every layer's assignments, the largest imbalance) and per layer
// (passes, tokens, assignments, dropped, rerouted, imbalance, per_expert). False after printing the error.
bool moe_stats_json(basalt_session* session, const basalt_model* model, const std::string& router, nlohmann::json& out);
// The same from any source of per-layer statistics (get: basalt_session_moe_stats or basalt_engine_moe_stats bound to
// their handle).
bool moe_stats_json(const std::function<basalt_status(uint32_t, basalt_moe_stats*, uint64_t*, size_t)>& get,
                    const basalt_model* model, const std::string& router, nlohmann::json& out);
// The same as lines of text.
void print_moe_stats(const nlohmann::json& stats, std::ostream& os);
// Decoding-strategy options of run and batch: --decoder SPEC, --draft MODEL, --amateur MODEL.
void add_decoder_options(po::options_description& d);
// Loads the second model that --draft or --amateur names (not both) into out (left empty when neither is given);
// returns kExitOk, or after printing why kExitUsage (both given) or kExitError (the model failed to load).
int load_second_model(const po::variables_map& vm, std::unique_ptr<Model>& out);
// What decoder spec ("NAME[:key=value,...]") needs for one request; false after printing the library's message.
bool decoder_needs(basalt_runtime* rt, const std::string& spec, basalt_decoder_needs& out);
// Storage the params point into; must outlive the basalt_session_params.
struct SessionStrings {
    std::string kv_type;         // --kv-type (both), overridden per side by --k-type / --v-type
    std::string k_type, v_type;  // the stored types of K and V
    std::string kv_residual;     // --kv-residual ("" when 0)
    std::vector<const char*> keys, values;
    basalt_params kv_params{};
    std::vector<std::string> backend_strings;  // KEY, VALUE, KEY, VALUE ... of --device / --backend-param
    std::vector<const char*> backend_keys, backend_values;
    basalt_params backend_params{};
    std::string moe_router;  // --moe-router
};
// Session parameters from the options of add_session_options (strings kept in `keep`). Throws
// std::invalid_argument naming a --backend-param that is not KEY=VALUE.
basalt_session_params session_params(const po::variables_map& vm, SessionStrings& keep);
// Engine parameters from the same options: --ctx is each request's context, --batch the step's token budget.
basalt_engine_params engine_params(const po::variables_map& vm, SessionStrings& keep);

}  // namespace basalt::cli
