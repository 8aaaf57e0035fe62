#include "host/plugin-host.hpp"

#include <basalt/plugin_backend.h>
#include <basalt/plugin_decoder.h>
#include <basalt/plugin_kv_cache.h>
#include <basalt/plugin_sampler.h>
#include <basalt/plugin_steering.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

#include <boost/dll/shared_library.hpp>

#include "host/host-services.hpp"
#include "support/error.hpp"
#include "support/log.hpp"

namespace fs = std::filesystem;

namespace basalt {

struct PluginHost::Library {
    std::string file;
    boost::dll::shared_library lib;
    void (*shutdown)() = nullptr;

    ~Library() {
        if (shutdown != nullptr) {
            try {
                shutdown();
            } catch (...) {
                log::warn("plugin '{}': shutdown threw an exception (ignored)", file);
            }
        }
        // lib's destructor unloads the library after shutdown returned
    }
};

namespace {

// A required function pointer of an interface table, by offset.
struct RequiredEntry {
    size_t offset;
    const char* name;
};

#define BASALT_REQ(type, field)       \
    RequiredEntry {                   \
        offsetof(type, field), #field \
    }

struct KindRules {
    basalt_component_kind kind;
    size_t min_size;
    std::vector<RequiredEntry> required;
};

const std::vector<KindRules>& kind_rules() {
    static const std::vector<KindRules> rules = {
        {BASALT_COMPONENT_BACKEND,
         BASALT_BACKEND_IFACE_MIN_SIZE,
         {BASALT_REQ(basalt_backend_iface, device_count), BASALT_REQ(basalt_backend_iface, device_info),
          BASALT_REQ(basalt_backend_iface, create), BASALT_REQ(basalt_backend_iface, destroy),
          BASALT_REQ(basalt_backend_iface, buffer_alloc), BASALT_REQ(basalt_backend_iface, buffer_free),
          BASALT_REQ(basalt_backend_iface, buffer_write), BASALT_REQ(basalt_backend_iface, buffer_read),
          BASALT_REQ(basalt_backend_iface, supports_node), BASALT_REQ(basalt_backend_iface, graph_compute)}},
        {BASALT_COMPONENT_KV_CACHE,
         BASALT_KV_CACHE_IFACE_MIN_SIZE,
         {BASALT_REQ(basalt_kv_cache_iface, create), BASALT_REQ(basalt_kv_cache_iface, destroy),
          BASALT_REQ(basalt_kv_cache_iface, layout), BASALT_REQ(basalt_kv_cache_iface, reserve),
          BASALT_REQ(basalt_kv_cache_iface, visible), BASALT_REQ(basalt_kv_cache_iface, seq_drop),
          BASALT_REQ(basalt_kv_cache_iface, seq_fork)}},
        {BASALT_COMPONENT_SAMPLER,
         BASALT_SAMPLER_IFACE_MIN_SIZE,
         {BASALT_REQ(basalt_sampler_iface, create), BASALT_REQ(basalt_sampler_iface, destroy),
          BASALT_REQ(basalt_sampler_iface, apply)}},
        {BASALT_COMPONENT_DECODER,
         BASALT_DECODER_IFACE_MIN_SIZE,
         {BASALT_REQ(basalt_decoder_iface, create), BASALT_REQ(basalt_decoder_iface, destroy),
          BASALT_REQ(basalt_decoder_iface, requirements), BASALT_REQ(basalt_decoder_iface, begin),
          BASALT_REQ(basalt_decoder_iface, plan), BASALT_REQ(basalt_decoder_iface, consume)}},
        {BASALT_COMPONENT_STEERING,
         BASALT_STEERING_IFACE_MIN_SIZE,
         {BASALT_REQ(basalt_steering_iface, create), BASALT_REQ(basalt_steering_iface, destroy),
          BASALT_REQ(basalt_steering_iface, layer_mode)}},
    };
    return rules;
}

#undef BASALT_REQ

const KindRules* rules_for(basalt_component_kind kind) {
    for (const auto& r : kind_rules()) {
        if (r.kind == kind) return &r;
    }
    return nullptr;
}

// Reads a function pointer stored at `offset` of a table, or nullptr when it lies past `size`.
template <typename Fn>
Fn read_entry(const void* table, uint32_t size, size_t offset) {
    Fn fn = nullptr;
    if (offset + sizeof(Fn) <= size) std::memcpy(&fn, static_cast<const char*>(table) + offset, sizeof(Fn));
    return fn;
}

bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
               c == '.' || c == '+';
    });
}

constexpr size_t kMaxComponents = 4096;

// Boost.DLL wraps dlerror() in its own text; keep only the loader's reason.
std::string loader_reason(const std::string& what) {
    const std::string marker = "dlerror system message: ";
    const size_t at = what.find(marker);
    if (at == std::string::npos) return what;
    const size_t begin = at + marker.size();
    const size_t end = what.rfind("):");
    return what.substr(begin, end != std::string::npos && end > begin ? end - begin : std::string::npos);
}

}  // namespace

const char* kind_name(basalt_component_kind kind) noexcept {
    static const char* const kNames[] = {"", "backend", "kv_cache", "sampler", "decoder", "steering"};
    return kind >= BASALT_COMPONENT_BACKEND && kind <= BASALT_COMPONENT_STEERING ? kNames[kind] : "unknown";
}

std::string component_label(basalt_component_kind kind, const std::string& name) {
    return fmt::format("{} '{}'", kind_name(kind), name);
}

SamplerVtable sampler_vtable(const Component& c) {
    SamplerVtable vt;
    const auto* t = static_cast<const basalt_sampler_iface*>(c.iface);
    const uint32_t size = c.iface_size;
    if (offsetof(basalt_sampler_iface, flags) + sizeof(t->flags) <= size) {
        std::memcpy(&vt.flags, reinterpret_cast<const char*>(t) + offsetof(basalt_sampler_iface, flags),
                    sizeof(vt.flags));
    }
    vt.create = read_entry<decltype(vt.create)>(t, size, offsetof(basalt_sampler_iface, create));
    vt.destroy = read_entry<decltype(vt.destroy)>(t, size, offsetof(basalt_sampler_iface, destroy));
    vt.apply = read_entry<decltype(vt.apply)>(t, size, offsetof(basalt_sampler_iface, apply));
    vt.accept = read_entry<decltype(vt.accept)>(t, size, offsetof(basalt_sampler_iface, accept));
    vt.reset = read_entry<decltype(vt.reset)>(t, size, offsetof(basalt_sampler_iface, reset));
    vt.clone = read_entry<decltype(vt.clone)>(t, size, offsetof(basalt_sampler_iface, clone));
    vt.set_vocab = read_entry<decltype(vt.set_vocab)>(t, size, offsetof(basalt_sampler_iface, set_vocab));
    vt.rollback = read_entry<decltype(vt.rollback)>(t, size, offsetof(basalt_sampler_iface, rollback));
    return vt;
}

PluginHost::PluginHost() = default;

PluginHost::~PluginHost() {
    components_.clear();
    while (!libraries_.empty()) libraries_.pop_back();  // reverse load order
}

const Component* PluginHost::find(basalt_component_kind kind, const std::string& name) const {
    for (const auto& c : components_) {
        if (c.kind == kind && c.name == name) return &c;
    }
    return nullptr;
}

void PluginHost::load(const fs::path& path_in) {
    std::error_code ec;
    if (path_in.empty()) fail(BASALT_ERR_INVALID_ARGUMENT, "plugin path is empty");
    if (!fs::exists(path_in, ec)) fail(BASALT_ERR_NOT_FOUND, "plugin '{}': no such file", path_in.string());
    if (!fs::is_regular_file(path_in, ec)) fail(BASALT_ERR_FORMAT, "plugin '{}': not a regular file", path_in.string());
    fs::path path = fs::canonical(path_in, ec);
    if (ec) path = fs::absolute(path_in);
    const std::string file = path.string();
    for (const auto& lib : libraries_) {
        if (lib->file == file) {
            log::debug("plugin '{}' is already loaded", file);
            return;
        }
    }

    auto library = std::make_unique<Library>();
    library->file = file;
    try {
        library->lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
        fail(BASALT_ERR_FORMAT, "plugin '{}': cannot be loaded as a shared library: {}", file, loader_reason(e.what()));
    }
    if (!library->lib.has(BASALT_PLUGIN_INIT_SYMBOL)) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': does not export {} (not a Basalt plugin?)", file,
             BASALT_PLUGIN_INIT_SYMBOL);
    }
    auto& init = library->lib.get<std::remove_pointer_t<basalt_plugin_init_fn>>(BASALT_PLUGIN_INIT_SYMBOL);

    const basalt_plugin_desc* desc = nullptr;
    basalt_status st = BASALT_ERR_INTERNAL;
    clear_plugin_error();
    try {
        st = init(BASALT_ABI_VERSION_MAJOR, BASALT_ABI_VERSION_MINOR, host_services(), &desc);
    } catch (const std::exception& e) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': {} threw an exception: {} (plugins must catch)", file,
             BASALT_PLUGIN_INIT_SYMBOL, e.what());
    } catch (...) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': {} threw a non-standard exception (plugins must catch)", file,
             BASALT_PLUGIN_INIT_SYMBOL);
    }
    if (st != BASALT_OK) {
        std::string msg = plugin_error_message();
        if (msg.empty()) msg = "no message given";
        fail(st == BASALT_ERR_ABI_MISMATCH ? BASALT_ERR_ABI_MISMATCH : BASALT_ERR_PLUGIN,
             "plugin '{}': initialisation failed with {}: {}", file, status_name(st), msg);
    }
    if (desc == nullptr) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': {} returned success but no descriptor", file, BASALT_PLUGIN_INIT_SYMBOL);
    }
    // From here on the plugin is initialised: any failure must call its shutdown before unloading.
    const size_t major_end = offsetof(basalt_plugin_desc, abi_minor) + sizeof(desc->abi_minor);
    if (desc->struct_size < major_end) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': descriptor struct_size {} is too small to hold its ABI version", file,
             desc->struct_size);
    }
    if (desc->abi_major != BASALT_ABI_VERSION_MAJOR) {
        fail(BASALT_ERR_ABI_MISMATCH,
             "plugin '{}': built for Basalt ABI {}.{}, but this host implements ABI {}.{}; rebuild the plugin against "
             "ABI {}.x",
             file, desc->abi_major, desc->abi_minor, BASALT_ABI_VERSION_MAJOR, BASALT_ABI_VERSION_MINOR,
             BASALT_ABI_VERSION_MAJOR);
    }
    if (BASALT_HAS_FIELD(desc, basalt_plugin_desc, shutdown)) library->shutdown = desc->shutdown;
    if (!BASALT_HAS_FIELD(desc, basalt_plugin_desc, components)) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': descriptor struct_size {} is smaller than the minimum {}", file,
             desc->struct_size, offsetof(basalt_plugin_desc, components) + sizeof(desc->components));
    }
    if (desc->name == nullptr || !valid_name(desc->name)) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': descriptor has a missing or invalid name", file);
    }
    if (desc->n_components > kMaxComponents) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': descriptor lists {} components (at most {} allowed)", file,
             desc->n_components, kMaxComponents);
    }
    if (desc->n_components > 0 && desc->components == nullptr) {
        fail(BASALT_ERR_PLUGIN, "plugin '{}': descriptor lists {} components but the array is NULL", file,
             desc->n_components);
    }

    std::vector<Component> found;
    for (size_t i = 0; i < desc->n_components; ++i) {
        const basalt_component_desc* cd = desc->components[i];
        if (cd == nullptr) fail(BASALT_ERR_PLUGIN, "plugin '{}': component #{} is NULL", file, i);
        if (!BASALT_HAS_FIELD(cd, basalt_component_desc, iface)) {
            fail(BASALT_ERR_PLUGIN, "plugin '{}': component #{} has struct_size {}, smaller than the minimum {}", file,
                 i, cd->struct_size, offsetof(basalt_component_desc, iface) + sizeof(cd->iface));
        }
        if (cd->name == nullptr || !valid_name(cd->name)) {
            fail(BASALT_ERR_PLUGIN,
                 "plugin '{}': component #{} has a missing or invalid name (1-64 of [A-Za-z0-9_.+-])", file, i);
        }
        Component c;
        c.kind = cd->kind;
        c.name = cd->name;
        const KindRules* rules = rules_for(cd->kind);
        if (rules == nullptr) {
            // a kind from a newer minor this host does not know: skip it, keep the rest of the plugin
            log::warn("plugin '{}': component '{}' has unknown kind {} (newer ABI?); ignored", file, c.name, cd->kind);
            continue;
        }
        const std::string label = component_label(c.kind, c.name);
        if (cd->iface == nullptr) fail(BASALT_ERR_PLUGIN, "plugin '{}': {} has no interface table", file, label);
        uint32_t iface_size = 0;
        std::memcpy(&iface_size, cd->iface, sizeof(iface_size));
        if (iface_size < rules->min_size) {
            fail(BASALT_ERR_PLUGIN, "plugin '{}': {} interface table struct_size {} is smaller than the minimum {}",
                 file, label, iface_size, rules->min_size);
        }
        for (const auto& req : rules->required) {
            if (read_entry<void (*)()>(cd->iface, iface_size, req.offset) == nullptr) {
                fail(BASALT_ERR_PLUGIN, "plugin '{}': {} leaves the required entry '{}' NULL", file, label, req.name);
            }
        }
        for (const auto& other : found) {
            if (other.kind == c.kind && other.name == c.name) {
                fail(BASALT_ERR_DUPLICATE, "plugin '{}': lists {} twice", file, label);
            }
        }
        if (const Component* existing = find(c.kind, c.name); existing != nullptr) {
            fail(BASALT_ERR_DUPLICATE, "plugin '{}': {} is already provided by '{}'", file, label,
                 existing->file.empty() ? std::string("the application (registered in process)") : existing->file);
        }
        c.description = cd->description != nullptr ? cd->description : "";
        c.version = {cd->version_major, cd->version_minor, cd->version_patch};
        c.plugin_name = desc->name;
        c.file = file;
        c.plugin_abi_major = desc->abi_major;
        c.plugin_abi_minor = desc->abi_minor;
        c.iface = cd->iface;
        c.iface_size = iface_size;
        c.desc = cd;
        found.push_back(std::move(c));
    }
    if (desc->abi_minor != BASALT_ABI_VERSION_MINOR) {
        log::info("plugin '{}': built for ABI {}.{}, host is {}.{} (compatible)", file, desc->abi_major,
                  desc->abi_minor, BASALT_ABI_VERSION_MAJOR, BASALT_ABI_VERSION_MINOR);
    }

    libraries_.push_back(std::move(library));
    for (auto& c : found) {
        log::debug("registered {} v{}.{}.{} from '{}'", component_label(c.kind, c.name), c.version[0], c.version[1],
                   c.version[2], file);
        components_.push_back(std::move(c));
    }
    std::stable_sort(components_.begin(), components_.end(), [](const Component& a, const Component& b) {
        return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
    });
}

void PluginHost::register_sampler(const std::string& name, const basalt_sampler_iface* iface) {
    const std::string label = component_label(BASALT_COMPONENT_SAMPLER, name);
    if (!valid_name(name)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "cannot register sampler '{}': a name is 1-64 characters of [A-Za-z0-9_.+-]",
             name);
    }
    if (iface == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "cannot register {}: the interface table is NULL", label);
    const KindRules* rules = rules_for(BASALT_COMPONENT_SAMPLER);
    if (iface->struct_size < rules->min_size) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "cannot register {}: interface table struct_size {} is smaller than the minimum {}", label,
             iface->struct_size, rules->min_size);
    }
    for (const auto& req : rules->required) {
        if (read_entry<void (*)()>(iface, iface->struct_size, req.offset) == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "cannot register {}: the required entry '{}' is NULL", label, req.name);
        }
    }
    if (const Component* existing = find(BASALT_COMPONENT_SAMPLER, name); existing != nullptr) {
        fail(BASALT_ERR_DUPLICATE, "cannot register {}: it is already provided by '{}'", label,
             existing->file.empty() ? std::string("the application (registered in process)") : existing->file);
    }
    basalt_sampler_iface& copy = own_tables_.emplace_back();
    const size_t n = std::min<size_t>(iface->struct_size, sizeof(basalt_sampler_iface));
    std::memcpy(&copy, iface, n);
    copy.struct_size = static_cast<uint32_t>(n);
    Component c;
    c.kind = BASALT_COMPONENT_SAMPLER;
    c.name = name;
    c.description = "registered in process";
    c.plugin_name = "in-process";
    c.plugin_abi_major = BASALT_ABI_VERSION_MAJOR;
    c.plugin_abi_minor = BASALT_ABI_VERSION_MINOR;
    c.iface = &copy;
    c.iface_size = copy.struct_size;
    log::debug("registered {} in process", label);
    components_.push_back(std::move(c));
    std::stable_sort(components_.begin(), components_.end(), [](const Component& a, const Component& b) {
        return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
    });
}

void PluginHost::discover_file(const fs::path& file) {
    try {
        load(file);
    } catch (const Error& e) {
        log::warn("skipping plugin: {}", e.what());
    } catch (const std::exception& e) {
        log::warn("skipping plugin '{}': {}", file.string(), e.what());
    }
}

void PluginHost::discover_dir(const fs::path& dir) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto& p = it->path();
        if (p.extension() == ".so" && it->is_regular_file(ec)) files.push_back(p);
    }
    if (ec) {
        log::warn("cannot list plugin folder '{}': {}", dir.string(), ec.message());
        return;
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) discover_file(f);
}

void PluginHost::discover_path_list(const std::string& list) {
    size_t start = 0;
    while (start <= list.size()) {
        size_t end = list.find(':', start);
        if (end == std::string::npos) end = list.size();
        const std::string entry = list.substr(start, end - start);
        start = end + 1;
        if (entry.empty()) continue;
        std::error_code ec;
        if (fs::is_directory(entry, ec)) {
            discover_dir(entry);
        } else if (fs::exists(entry, ec)) {
            discover_file(entry);
        } else {
            log::warn("BASALT_PLUGIN_PATH entry '{}' does not exist; skipped", entry);
        }
    }
}

}  // namespace basalt
