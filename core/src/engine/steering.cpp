#include "engine/steering.hpp"

#include <basalt/plugin_steering.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "host/host-services.hpp"
#include "support/error.hpp"
#include "support/params.hpp"

namespace basalt::engine {
namespace {

// A trailing piece that reads whole as a number is a scale; a non-finite one (nan, inf, 1e99) is refused as a
// scale rather than read as part of the file name.
bool is_number(const std::string& s, float& out, const std::string& spec) {
    if (s.empty()) return false;
    char* end = nullptr;
    const float v = std::strtof(s.c_str(), &end);
    if (*end != '\0') return false;
    if (!std::isfinite(v))
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering spec '{}': scale '{}' is not a finite number", spec, s);
    out = v;
    return true;
}

bool is_range(const std::string& s) {
    const size_t dash = s.find('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == s.size()) return false;
    for (size_t i = 0; i < s.size(); ++i)
        if (i != dash && (s[i] < '0' || s[i] > '9')) return false;
    return true;
}

uint64_t fnv(uint64_t h, const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

}  // namespace

SteerSpec parse_steer_spec(const std::string& spec) {
    SteerSpec s;
    std::string rest = spec;
    const size_t last = rest.rfind(':');
    if (last != std::string::npos) {
        const std::string tail = rest.substr(last + 1);
        const size_t prev = rest.rfind(':', last == 0 ? std::string::npos : last - 1);
        float v = 0;
        if (is_range(tail) && prev != std::string::npos && last > 0 &&
            is_number(rest.substr(prev + 1, last - prev - 1), v, spec)) {
            s.layers = tail;
            s.scale = v;
            rest = rest.substr(0, prev);
        } else if (is_number(tail, v, spec)) {
            s.scale = v;
            rest = rest.substr(0, last);
        }
    }
    if (rest.empty())
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering spec '{}' names no file or vector (FILE[:SCALE[:A-B]])", spec);
    s.file = rest;
    return s;
}

void SteerRegistry::add(const std::string& name, SteerTable table) {
    if (name.empty() || name.size() > 255 || name.find(':') != std::string::npos)
        fail(BASALT_ERR_INVALID_ARGUMENT, "control vector name '{}' must be 1..255 bytes without ':'", name);
    std::lock_guard lock(mutex_);
    if (!tables_.emplace(name, std::move(table)).second)
        fail(BASALT_ERR_DUPLICATE, "a control vector named '{}' is already loaded", name);
}

bool SteerRegistry::find(const std::string& name, SteerTable& out) const {
    std::lock_guard lock(mutex_);
    const auto it = tables_.find(name);
    if (it == tables_.end()) return false;
    out = it->second;
    return true;
}

size_t SteerRegistry::size() const {
    std::lock_guard lock(mutex_);
    return tables_.size();
}

namespace {

// "A-B" (both within the model's layers, A <= B) into first and last; throws naming the spec.
void steer_range(const SteerSpec& s, const std::string& spec, uint32_t n_layer, uint32_t& first, uint32_t& last) {
    first = 0;
    last = n_layer - 1;
    if (s.layers.empty()) return;
    const size_t dash = s.layers.find('-');
    const unsigned long a = std::strtoul(s.layers.substr(0, dash).c_str(), nullptr, 10);
    const unsigned long b = std::strtoul(s.layers.substr(dash + 1).c_str(), nullptr, 10);
    if (a > b)
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering spec '{}': layers '{}' is not a range A-B (0 <= A <= B)", spec,
             s.layers);
    if (b >= n_layer || s.layers.size() > 20) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering spec '{}': layers '{}' is past the model's {} layers (0..{})", spec,
             s.layers, n_layer, n_layer - 1);
    }
    first = static_cast<uint32_t>(a);
    last = static_cast<uint32_t>(b);
}

}  // namespace

SteerTable load_steering(basalt_runtime& runtime, const ModelHparams& hp, const std::vector<std::string>& specs,
                         const SteerRegistry* registry, const std::string& component) {
    if (hp.encoder_decoder) {
        fail(BASALT_ERR_UNSUPPORTED, "steering is not supported for encoder-decoder models ('{}'): refused at submit",
             hp.arch);
    }
    const Component* c = runtime.plugins.find(BASALT_COMPONENT_STEERING, component);
    if (c == nullptr) {
        std::string names;
        for (const auto& comp : runtime.plugins.components())
            if (comp.kind == BASALT_COMPONENT_STEERING) names += (names.empty() ? "" : ", ") + comp.name;
        fail(BASALT_ERR_NOT_FOUND, "no steering component named '{}' is loaded (available: {})", component,
             names.empty() ? "none" : names);
    }
    const auto table = read_table<basalt_steering_iface>(*c);
    const size_t E = hp.n_embd;
    SteerTable t;
    t.vectors.assign(static_cast<size_t>(hp.n_layer) * E, 0.f);
    t.layers.assign(hp.n_layer, 0);
    std::vector<float> v(E);
    for (const std::string& text : specs) {
        const SteerSpec s = parse_steer_spec(text);
        uint32_t first = 0, last = 0;
        steer_range(s, text, hp.n_layer, first, last);
        SteerTable named;
        if (registry != nullptr && registry->find(s.file, named)) {
            // A loaded vector: scaled and limited here, no file opened.
            for (uint32_t il = first; il <= last; ++il) {
                if (named.layers[il] == 0) continue;
                const float* src = named.vectors.data() + il * E;
                float* dst = t.vectors.data() + il * E;
                for (size_t i = 0; i < E; ++i) dst[i] += s.scale * src[i];
                t.layers[il] = 1;
            }
            continue;
        }
        ParamPairs kv = {{"file", s.file}, {"scale", fmt::format("{}", s.scale)}};
        if (!s.layers.empty()) kv.emplace_back("layers", s.layers);
        const ParamsView p(kv);
        void* hook = nullptr;
        clear_plugin_error();
        const basalt_status st = table.create(host_services(), hp.n_layer, hp.n_embd, &p.params, &hook);
        if (st != BASALT_OK || hook == nullptr) {
            fail(st != BASALT_OK ? st : BASALT_ERR_PLUGIN, "{}",
                 plugin_error_message().empty() ? "steering '" + component + "': create failed"
                                                : plugin_error_message());
        }
        std::unique_ptr<void, void (*)(void*)> guard(hook, table.destroy);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            uint32_t mode = 0;
            clear_plugin_error();
            if (table.layer_mode(hook, il, &mode) != BASALT_OK) {
                fail(BASALT_ERR_PLUGIN, "steering '{}': layer_mode({}): {}", component, il, plugin_error_message());
            }
            if ((mode & BASALT_STEERING_ADD) == 0) continue;
            if (table.vector == nullptr) {
                fail(BASALT_ERR_PLUGIN, "steering '{}' asks to ADD at layer {} but has no vector entry", component, il);
            }
            float scale = 1.f;
            clear_plugin_error();
            if (const basalt_status vs = table.vector(hook, il, v.data(), E, &scale); vs != BASALT_OK)
                fail(vs, "steering '{}': vector({}): {}", component, il, plugin_error_message());
            float* dst = t.vectors.data() + il * E;
            for (size_t i = 0; i < E; ++i) dst[i] += scale * v[i];
            t.layers[il] = 1;
        }
    }
    uint64_t h = 1469598103934665603ULL;
    h = fnv(h, t.layers.data(), t.layers.size());
    h = fnv(h, t.vectors.data(), 4 * t.vectors.size());
    t.hash = h == 0 ? 1 : h;
    return t;
}

uint64_t steer_salt(uint64_t salt, uint64_t hash) {
    if (hash == 0) return salt;
    uint64_t x = salt ^ (hash + 0x9e3779b97f4a7c15ULL + (salt << 6) + (salt >> 2));
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 29;
    return x == 0 ? 1 : x;
}

}  // namespace basalt::engine
