// Basalt SDK: a sampler component from a C++ class. The class is the sampler's logic, one object per sequence:
//   explicit T(const basalt::sdk::params& p);   // create: parse and check the parameters (p names the sampler)
//   void apply(basalt_candidates& c);            // transform one sequence's candidates (may be const)
//   void accept(int32_t token);                  // optional: record the chosen token
//   void reset();                                // optional: forget the per-sequence state
//   void set_vocab(const basalt_vocab_view& v);  // optional (ABI 1.5): the model's vocabulary, before any apply
//   void rollback(size_t n);                     // optional (ABI 1.5): forget the last n accepted tokens
// A class with accept or reset holds per-sequence state: the component clones it with its copy constructor.
// A class with neither is stateless: accept, reset and clone stay NULL (host defaults). basalt::sdk::sampler<T,
// spec> turns it into the C table with every entry point catching exceptions (basalt::sdk::guard), and into the
// component descriptor that BASALT_DECLARE_PLUGIN lists. Header-only C++17; nothing here crosses the ABI.
#pragma once

#include <basalt/plugin_sampler.h>
#include <basalt/sdk/declare-plugin.hpp>
#include <basalt/sdk/plugin.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace basalt::sdk {

// What a sampler component declares besides its logic (a constexpr object with static storage).
struct sampler_spec {
    const char* name;         // the component name used in chains, e.g. "top_k"
    const char* description;  // one line for `basalt plugins`
    uint32_t flags;           // BASALT_SAMPLER_* capabilities
    component_version version = {};

    // "sampler '<name>'", the prefix of every message the component reports.
    std::string label() const { return component_label("sampler", name); }
    // Throws error(status, "sampler '<name>': " + what).
    [[noreturn]] void fail(basalt_status status, const std::string& what) const {
        throw error(status, label() + ": " + what);
    }
};

namespace detail {

template <typename T, typename = void>
struct sampler_accepts : std::false_type {};
template <typename T>
struct sampler_accepts<T, std::void_t<decltype(std::declval<T&>().accept(int32_t{}))>> : std::true_type {};

template <typename T, typename = void>
struct sampler_resets : std::false_type {};
template <typename T>
struct sampler_resets<T, std::void_t<decltype(std::declval<T&>().reset())>> : std::true_type {};

template <typename T, typename = void>
struct sampler_sets_vocab : std::false_type {};
template <typename T>
struct sampler_sets_vocab<T,
                          std::void_t<decltype(std::declval<T&>().set_vocab(std::declval<const basalt_vocab_view&>()))>>
    : std::true_type {};

template <typename T, typename = void>
struct sampler_rolls_back : std::false_type {};
template <typename T>
struct sampler_rolls_back<T, std::void_t<decltype(std::declval<T&>().rollback(size_t{}))>> : std::true_type {};

// The static entry points of the sampler made of class T and its declaration Spec. create is thread-safe; the
// others touch only the instances they are given (one thread per instance, as the ABI says).
template <typename T, const sampler_spec& Spec>
struct sampler_entries {
    static constexpr bool kAccepts = detail::sampler_accepts<T>::value;
    static constexpr bool kResets = detail::sampler_resets<T>::value;
    static constexpr bool kSetsVocab = detail::sampler_sets_vocab<T>::value;
    static constexpr bool kRollsBack = detail::sampler_rolls_back<T>::value;
    static constexpr bool kStateful = kAccepts || kResets || kSetsVocab || kRollsBack;
    static_assert(std::is_constructible_v<T, const params&>, "a sampler class is constructible from sdk::params");
    static_assert(!kStateful || std::is_copy_constructible_v<T>,
                  "a sampler with accept/reset holds per-sequence state and needs a copy constructor (clone)");

    // basalt_sampler_iface.create: parses the parameters into a new T owned by the caller. Thread-safe.
    static basalt_status create(const basalt_host* /*host*/, const basalt_params* raw, void** out_instance) {
        return guard([&] {
            if (out_instance == nullptr) Spec.fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL");
            const params p(raw, Spec.label());
            *out_instance = new T(p);
        });
    }

    // basalt_sampler_iface.destroy: deletes an instance from create or clone; NULL is ignored.
    static void destroy(void* instance) { delete static_cast<T*>(instance); }

    // basalt_sampler_iface.apply: T::apply on each (instance, candidates) pair in order; stops at the first throw.
    static basalt_status apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
        return guard([&] {
            for (size_t s = 0; s < n; ++s) static_cast<T*>(instances[s])->apply(*candidates[s]);
        });
    }

    // basalt_sampler_iface.accept (stateful classes only): T::accept.
    static basalt_status accept(void* instance, int32_t token) {
        return guard([&] { static_cast<T*>(instance)->accept(token); });
    }

    // basalt_sampler_iface.reset (stateful classes only): T::reset.
    static basalt_status reset(void* instance) {
        return guard([&] { static_cast<T*>(instance)->reset(); });
    }

    // basalt_sampler_iface.clone (stateful classes only): a copy of the instance, owned by the caller.
    static basalt_status clone(const void* instance, void** out_instance) {
        return guard([&] { *out_instance = new T(*static_cast<const T*>(instance)); });
    }

    // basalt_sampler_iface.set_vocab (classes with set_vocab only): T::set_vocab; NULL is refused.
    static basalt_status set_vocab(void* instance, const basalt_vocab_view* vocab) {
        return guard([&] {
            if (vocab == nullptr) Spec.fail(BASALT_ERR_INVALID_ARGUMENT, "set_vocab: vocab is NULL");
            static_cast<T*>(instance)->set_vocab(*vocab);
        });
    }

    // basalt_sampler_iface.rollback (classes with rollback only): T::rollback.
    static basalt_status rollback(void* instance, size_t n) {
        return guard([&] { static_cast<T*>(instance)->rollback(n); });
    }

    // The entries present for T (NULL where T has nothing to say and the host's default applies).
    static constexpr basalt_status (*accept_entry())(void*, int32_t) {
        if constexpr (kAccepts) return &accept;
        return nullptr;
    }
    static constexpr basalt_status (*reset_entry())(void*) {
        if constexpr (kResets) return &reset;
        return nullptr;
    }
    static constexpr basalt_status (*set_vocab_entry())(void*, const basalt_vocab_view*) {
        if constexpr (kSetsVocab) return &set_vocab;
        return nullptr;
    }
    static constexpr basalt_status (*rollback_entry())(void*, size_t) {
        if constexpr (kRollsBack) return &rollback;
        return nullptr;
    }
    static constexpr basalt_status (*clone_entry())(const void*, void**) {
        if constexpr (kStateful) return &clone;
        return nullptr;
    }
};

}  // namespace detail

// The sampler component made of class T and its declaration Spec: its C table `iface` and descriptor `desc`
// (constant-initialised), what BASALT_DECLARE_PLUGIN lists.
template <typename T, const sampler_spec& Spec>
struct sampler {
    using entries = detail::sampler_entries<T, Spec>;

    static constexpr basalt_sampler_iface iface = {
        sizeof(basalt_sampler_iface),
        Spec.flags,
        &entries::create,
        &entries::destroy,
        &entries::apply,
        entries::accept_entry(),
        entries::reset_entry(),
        entries::clone_entry(),
        entries::set_vocab_entry(),
        entries::rollback_entry(),
    };
    static constexpr basalt_component_desc desc =
        make_component_desc(BASALT_COMPONENT_SAMPLER, Spec.name, Spec.description, Spec.version, &iface);
};

}  // namespace basalt::sdk
