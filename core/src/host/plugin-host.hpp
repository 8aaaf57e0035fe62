// The plugin host: loads plugin libraries with Boost.DLL, validates their descriptors against the ABI
// rules (major version, struct sizes, required entries, unique names) and keeps the component registry.
#pragma once

#include <basalt/basalt.h>
#include <basalt/plugin.h>
#include <basalt/plugin_sampler.h>

#include <array>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace basalt {

// One registered component, with host-owned copies of its descriptor strings.
struct Component {
    basalt_component_kind kind = 0;
    std::string name;
    std::string description;
    std::array<uint32_t, 3> version{};
    std::string plugin_name;
    std::string file;
    uint32_t plugin_abi_major = 0;
    uint32_t plugin_abi_minor = 0;
    const void* iface = nullptr;  // the plugin's table; read only up to iface_size
    uint32_t iface_size = 0;
    // The plugin's descriptor (NULL for in-process components): a backend's description is read from it again
    // once the backend has been asked for its devices (one that enumerates them on first use names them then).
    const basalt_component_desc* desc = nullptr;
};

// A sampler table normalised by the host: entries past the plugin's struct_size read as nullptr.
struct SamplerVtable {
    uint32_t flags = 0;
    decltype(basalt_sampler_iface::create) create = nullptr;
    decltype(basalt_sampler_iface::destroy) destroy = nullptr;
    decltype(basalt_sampler_iface::apply) apply = nullptr;
    decltype(basalt_sampler_iface::accept) accept = nullptr;
    decltype(basalt_sampler_iface::reset) reset = nullptr;
    decltype(basalt_sampler_iface::clone) clone = nullptr;
    decltype(basalt_sampler_iface::set_vocab) set_vocab = nullptr;  // since 1.5
    decltype(basalt_sampler_iface::rollback) rollback = nullptr;    // since 1.5
};

// Reads a sampler component's table without touching bytes past its struct_size.
SamplerVtable sampler_vtable(const Component& component);

// Returns the static name of a component kind ("backend", "kv_cache", ...; "unknown" otherwise).
const char* kind_name(basalt_component_kind kind) noexcept;
// Returns "sampler 'greedy'" style labels for messages.
std::string component_label(basalt_component_kind kind, const std::string& name);

class PluginHost {
  public:
    PluginHost();
    ~PluginHost();
    PluginHost(const PluginHost&) = delete;
    PluginHost& operator=(const PluginHost&) = delete;

    // Loads one library; throws Error (and registers nothing of it) on any problem. Loading a file that is
    // already loaded is a no-op.
    void load(const std::filesystem::path& path);
    // Loads every *.so in `dir` (sorted); failures are logged as warnings naming file and reason.
    void discover_dir(const std::filesystem::path& dir);
    // Loads a ':'-separated list of folders and files, as in $BASALT_PLUGIN_PATH, skipping failures with warnings.
    void discover_path_list(const std::string& list);

    // Registers a sampler provided by the application itself, without a library: the same checks as a plugin's
    // component (name syntax, table size, required entries, a name unique among samplers); throws Error. The
    // table is copied (up to its struct_size); the functions it points to must outlive the host.
    void register_sampler(const std::string& name, const basalt_sampler_iface* iface);

    // Registered components ordered by kind, then name. Registering or loading reorders it: hold names, not
    // pointers, across those calls.
    const std::vector<Component>& components() const { return components_; }
    // Finds a component, or nullptr.
    const Component* find(basalt_component_kind kind, const std::string& name) const;

  private:
    struct Library;
    void discover_file(const std::filesystem::path& file);
    std::vector<std::unique_ptr<Library>> libraries_;
    std::vector<Component> components_;
    std::deque<basalt_sampler_iface> own_tables_;  // copies of in-process tables (stable addresses)
};

}  // namespace basalt

namespace basalt {

// Copies a component's interface table into a full-size, zero-initialised struct of the host's version:
// entries past the plugin's struct_size read as NULL / 0. T is the kind's *_iface type.
template <typename T>
T read_table(const Component& c) {
    T t{};
    const size_t n = c.iface_size < sizeof(T) ? c.iface_size : sizeof(T);
    std::memcpy(&t, c.iface, n);
    t.struct_size = static_cast<uint32_t>(n);
    return t;
}

}  // namespace basalt
