// The one front-end setup of the basalt commands that compute (run, batch, chat, serve, bench, eval, perplexity,
// steer, exposure): their shared options and how their values become basalt.hpp parameters. Every bad value found
// here throws UsageError before anything is loaded, so it exits kExitUsage from every command.
#pragma once

#include <basalt/basalt.hpp>

#include "cli.hpp"

namespace basalt::cli {

// Session options shared by every computing command: --backend, --device (the one device choice), --backend-param,
// --kv-cache, --kv-type/--k-type/--v-type, --kv-residual, --threads, --ctx, --batch, --moe-router.
void add_session_options(po::options_description& d);
// Decoding-strategy options of run: --decoder SPEC, --draft MODEL, --amateur MODEL.
void add_decoder_options(po::options_description& d);
// --draft-adaptive on|off (the speculative decoder's adaptive draft length; run, batch, serve, bench).
void add_draft_adaptive_option(po::options_description& d);
// --admission on-demand|reserve and --kv-slots N (the engine's KV budget; run, batch, serve, bench).
void add_admission_options(po::options_description& d);
// --max-step-ms auto|off|MS|Fx (the engine's step-time budget; run, batch, serve, bench) with the command's default
// (the engine's own is auto; batch's is off).
void add_max_step_option(po::options_description& d, const char* default_value = "auto");
// A --max-step-ms value as basalt_engine_params.max_step_ms / max_step_factor (auto: 0, 0; off: -1, 0; MS: MS, 0;
// Fx: 0, F). UsageError for another value.
void max_step(const std::string& value, double& ms, double& factor);
// --draft-adaptive as given ("on" or "off"), "" when absent; UsageError for another value.
std::string draft_adaptive(const po::variables_map& vm);

// The cache sequences one request of decoder spec "NAME[:k=v,...]" takes on model: the decoder's n_seq (beams),
// plus its snapshot sequences when the model keeps a recurrent state (speculative decoding on a hybrid model).
// Throws cpp::Error for an unknown or refused spec. Thread-safe.
uint32_t decoder_sequences(const cpp::Runtime& rt, const cpp::Model& model, const std::string& spec);

// The runtime the global options ask for (--plugin, --no-default-plugins). Pure function.
cpp::RuntimeOptions runtime_options(const GlobalOptions& g);
// Backend, device, backend and cache parameters, threads and MoE router from the session options. Throws UsageError
// for a --backend-param that is not KEY=VALUE or that names the device (use --device), and for an unknown
// --kv-type/--k-type/--v-type name.
cpp::ComputeParams compute_params(const po::variables_map& vm);
// Session parameters from the session options (--ctx, --batch and compute_params). Throws as compute_params.
cpp::SessionParams session_params(const po::variables_map& vm);
// Engine parameters from the session options (--ctx: each request's context, --batch the step's token budget) and,
// where the command has them, --parallel, --chunk, --max-batch-tokens, --no-prefix-cache, --moe-stats, --admission,
// --kv-slots, --max-step-ms, --prefix-state-mib. Throws as compute_params and max_step, and UsageError for an
// --admission that is not on-demand or reserve.
cpp::EngineParams engine_params(const po::variables_map& vm);
// Everything open_engine needs: the runtime (global options), --model, the second model (--draft or --amateur; both
// is a UsageError) and engine_params(vm). Throws as engine_params.
cpp::EngineOptions engine_options(const po::variables_map& vm, const GlobalOptions& g);

}  // namespace basalt::cli
