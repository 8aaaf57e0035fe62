// The object behind the opaque basalt_sampler handle: one instance of a loaded sampler component, with the host's
// checks around each of its entry points. The C API (api-sampler.cpp) and the typed chain use the same object.
#pragma once

#include <basalt/basalt.h>

#include <memory>
#include <string>

#include "host/plugin-host.hpp"
#include "support/params.hpp"

struct basalt_sampler {
    // The component's name and table, copied: the registry may reorder while instances live.
    std::string name;
    const void* iface = nullptr;  // identifies the component (batches must not mix components)
    basalt::SamplerVtable vt;
    void* instance = nullptr;
    basalt::ParamPairs params;                 // kept so the host can clone a sampler whose table has no clone entry
    const basalt_vocab_view* vocab = nullptr;  // given by set_vocab (borrowed)

    basalt_sampler() = default;
    basalt_sampler(const basalt_sampler&) = delete;
    basalt_sampler& operator=(const basalt_sampler&) = delete;
    ~basalt_sampler();

    // The loaded sampler component `name`; throws Error NOT_FOUND naming the samplers loaded.
    static const basalt::Component& find_component(const basalt::PluginHost& plugins, const std::string& name);
    // Creates an instance of sampler component `name` with params; throws Error (NOT_FOUND naming the samplers
    // loaded, or the plugin's refusal naming the sampler).
    static std::unique_ptr<basalt_sampler> create(const basalt::PluginHost& plugins, const std::string& name,
                                                  basalt::ParamPairs params);
    // Applies samplers[i] to candidates[i], all of one component, in one plugin call; checks what the plugin did
    // with each candidate array (never grown, a selection inside it). Throws Error.
    static void apply_batch(basalt_sampler* const* samplers, basalt_candidates* const* candidates, size_t n);
    void apply(basalt_candidates& candidates);
    // Records an accepted token (no-op for samplers without history); throws Error.
    void accept(int32_t token);
    // Forgets the history; throws Error.
    void reset();
    // A copy with the same state (the plugin's clone, or a fresh instance from the same params); throws Error.
    std::unique_ptr<basalt_sampler> clone() const;
    // Gives the instance the model's vocabulary (borrowed; must outlive the instance and its clones) when the
    // sampler takes one; kept so clones made by create get it too. Throws Error.
    void set_vocab(const basalt_vocab_view* vocab);
    // Forgets the last n accepted tokens; throws Error UNSUPPORTED when the sampler cannot.
    void rollback(size_t n);
    // BASALT_SAMPLER_* flags of the component.
    uint32_t flags() const { return vt.flags; }
};

namespace basalt {
using Sampler = basalt_sampler;
}  // namespace basalt
