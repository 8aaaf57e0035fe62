// Basalt SDK: a decoder (decoding strategy) component from a C++ class. The class is the strategy's logic, one
// object per request (abi/include/basalt/plugin_decoder.h describes the state machine):
//   explicit T(const basalt::sdk::params& p);                 // create: parse and check the parameters
//   basalt::sdk::decoder_needs requirements() const;          // sequences, models, outputs, flags
//   void begin(const basalt_decoder_host& host, const basalt_decoder_request& request);
//   void plan(basalt_decoder_plan& plan, int32_t& finish);    // write the next round's feeds
//   void consume(const basalt_decoder_result* results, size_t n_results);
// basalt::sdk::decoder<T, spec> turns it into the C table: every entry point catches exceptions (an sdk::error
// becomes its status and message, a host_error from check_host returns the host's status and keeps its message),
// refuses a NULL instance or NULL out-arguments with "decoder '<name>': ..." messages, refuses a begin without a
// host or a prompt, and writes requirements only into the fields the caller's struct_size covers.
// Header-only C++17; nothing here crosses the ABI.
#pragma once

#include <basalt/plugin_decoder.h>
#include <basalt/sdk/declare-plugin.hpp>
#include <basalt/sdk/plugin.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace basalt::sdk {

// What a decoder component declares besides its logic (a constexpr object with static storage).
struct decoder_spec {
    const char* name;         // the decoder's name in requests, e.g. "beam"
    const char* description;  // one line for `basalt plugins`
    component_version version = {};

    // "decoder '<name>'", the prefix of every message the component reports.
    std::string label() const { return component_label("decoder", name); }
    // Throws error(status, "decoder '<name>': " + what).
    [[noreturn]] void fail(basalt_status status, const std::string& what) const {
        throw error(status, label() + ": " + what);
    }
};

// What a decoder instance needs from the engine (basalt_decoder_info without the size stamp).
struct decoder_needs {
    uint32_t n_seq = 1;           // request-local sequences at most
    uint32_t n_models = 1;        // 2 with a draft/amateur model
    uint32_t n_outputs = 1;       // hypotheses emitted (n-best)
    uint32_t flags = 0;           // BASALT_DECODER_NEEDS_*, BASALT_DECODER_SNAPSHOTS_RECURRENT
    uint32_t n_snapshot_seq = 0;  // more sequences for snapshots, granted on a model with a recurrent state (1.8)
};

namespace detail {

// The static entry points of the decoder made of class T and its declaration Spec. create is thread-safe; the
// others touch only the instance they are given (one thread at a time per instance, as the ABI says).
template <typename T, const decoder_spec& Spec>
struct decoder_entries {
    static_assert(std::is_constructible_v<T, const params&>, "a decoder class is constructible from sdk::params");

    // The instance behind a handle; a NULL handle is an error naming the decoder.
    static T& self(void* d) {
        if (d == nullptr) Spec.fail(BASALT_ERR_INVALID_ARGUMENT, "instance is NULL");
        return *static_cast<T*>(d);
    }

    // basalt_decoder_iface.create: parses the parameters into a new T owned by the caller. Thread-safe.
    static basalt_status create(const basalt_host* /*host*/, const basalt_params* raw, void** out) {
        return guard([&] {
            if (out == nullptr) Spec.fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL");
            const params p(raw, Spec.label());
            *out = new T(p);
        });
    }

    // basalt_decoder_iface.destroy: deletes an instance; NULL is ignored.
    static void destroy(void* d) { delete static_cast<T*>(d); }

    // basalt_decoder_iface.requirements: T::requirements written into the fields out's struct_size covers.
    static basalt_status requirements(void* d, basalt_decoder_info* out) {
        return guard([&] {
            const T& s = self(d);
            if (out == nullptr) Spec.fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL");
            const decoder_needs needs = s.requirements();
            if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_seq)) out->n_seq = needs.n_seq;
            if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_models)) out->n_models = needs.n_models;
            if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_outputs)) out->n_outputs = needs.n_outputs;
            if (BASALT_HAS_FIELD(out, basalt_decoder_info, flags)) out->flags = needs.flags;
            if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_snapshot_seq)) out->n_snapshot_seq = needs.n_snapshot_seq;
        });
    }

    // basalt_decoder_iface.begin: T::begin once the host and a non-empty prompt are there.
    static basalt_status begin(void* d, const basalt_decoder_host* host, const basalt_decoder_request* request) {
        return guard([&] {
            T& s = self(d);
            if (host == nullptr || request == nullptr || request->prompt == nullptr || request->n_prompt == 0)
                Spec.fail(BASALT_ERR_INVALID_ARGUMENT, "begin needs a host and a prompt");
            s.begin(*host, *request);
        });
    }

    // basalt_decoder_iface.plan: T::plan with both out-arguments present.
    static basalt_status plan(void* d, basalt_decoder_plan* plan, int32_t* out_finish) {
        return guard([&] {
            T& s = self(d);
            if (plan == nullptr || out_finish == nullptr) Spec.fail(BASALT_ERR_INVALID_ARGUMENT, "plan: NULL argument");
            s.plan(*plan, *out_finish);
        });
    }

    // basalt_decoder_iface.consume: T::consume (the results are T's to check).
    static basalt_status consume(void* d, const basalt_decoder_result* results, size_t n_results) {
        return guard([&] { self(d).consume(results, n_results); });
    }
};

}  // namespace detail

// The decoder component made of class T and its declaration Spec: its C table `iface` and descriptor `desc`
// (constant-initialised), what BASALT_DECLARE_PLUGIN lists.
template <typename T, const decoder_spec& Spec>
struct decoder {
    using entries = detail::decoder_entries<T, Spec>;

    static constexpr basalt_decoder_iface iface = {
        sizeof(basalt_decoder_iface),
        0,
        &entries::create,
        &entries::destroy,
        nullptr,  // reserved_run (ABI 1.0's run)
        &entries::requirements,
        &entries::begin,
        &entries::plan,
        &entries::consume,
    };
    static constexpr basalt_component_desc desc =
        make_component_desc(BASALT_COMPONENT_DECODER, Spec.name, Spec.description, Spec.version, &iface);
};

}  // namespace basalt::sdk
