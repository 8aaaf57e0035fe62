// steering-vector: ADD mode. Reads llama.cpp control-vector GGUF files (general.architecture "controlvector", one
// F32 tensor "direction.N" of n_embd values per layer N >= 1, added to the output of layer N counted from 0, as
// llama.cpp's tensor_for(il) does), sums several files, scales the sum and limits it to a layer range.
// Parameters: file (repeatable; the files sum), scale (default 1), layers ("A-B" inclusive, or "A"; default all).
// The plugin cannot link libbasalt, so it carries its own bounds-checked reader of the few GGUF parts it needs.
#include <basalt/plugin_steering.h>
#include <basalt/sdk/declare-plugin.hpp>
#include <basalt/sdk/plugin.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr const char* kName = "vector";
const std::string kWho = "steering 'vector'";
// The general.architecture of a control-vector file: the format this plugin reads, not a model architecture (the
// plugin cannot reach libbasalt's architecture table).
const std::string kControlVectorFormat = "controlvector";

// The largest control-vector file read (a vector of 1M floats for each of 64 layers is 256 MiB).
constexpr uint64_t kMaxFileBytes = 256ull << 20;

[[noreturn]] void refuse(basalt_status st, const std::string& what) {
    throw basalt::sdk::error(st, kWho + ": " + what);
}

// Refuses what is not a regular file (a FIFO, a device, a directory) and a file over the bound.
void check_regular(const struct stat& st, const std::string& path) {
    if (S_ISDIR(st.st_mode)) refuse(BASALT_ERR_INVALID_ARGUMENT, "control vector '" + path + "' is a directory");
    if (!S_ISREG(st.st_mode)) {
        refuse(BASALT_ERR_INVALID_ARGUMENT,
               "control vector '" + path + "' is not a regular file (a FIFO, socket or device is never read)");
    }
    if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
        refuse(BASALT_ERR_INVALID_ARGUMENT, "control vector '" + path + "' has " + std::to_string(st.st_size) +
                                                " bytes, more than the bound of " + std::to_string(kMaxFileBytes) +
                                                " (256 MiB)");
    }
}

// The file's bytes: checked with stat before it is opened (a FIFO is never opened), opened non-blocking and
// checked again on the descriptor (the path may have changed), read to its end under the size bound.
std::vector<uint8_t> read_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        refuse(BASALT_ERR_NOT_FOUND, "cannot open control vector '" + path + "': " + std::strerror(errno));
    check_regular(st, path);
    struct Fd {
        int fd;
        ~Fd() {
            if (fd >= 0) ::close(fd);
        }
    } const file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
    const int fd = file.fd;
    if (fd < 0) refuse(BASALT_ERR_NOT_FOUND, "cannot open control vector '" + path + "': " + std::strerror(errno));
    if (::fstat(fd, &st) != 0)
        refuse(BASALT_ERR_IO, "cannot stat control vector '" + path + "': " + std::strerror(errno));
    check_regular(st, path);
    std::vector<uint8_t> bytes;
    uint8_t chunk[65536];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) refuse(BASALT_ERR_IO, "cannot read control vector '" + path + "': " + std::strerror(errno));
        if (n == 0) break;
        if (bytes.size() + static_cast<size_t>(n) > kMaxFileBytes) {
            refuse(BASALT_ERR_INVALID_ARGUMENT, "control vector '" + path + "' is larger than the bound of " +
                                                    std::to_string(kMaxFileBytes) + " bytes (256 MiB)");
        }
        bytes.insert(bytes.end(), chunk, chunk + n);
    }
    return bytes;
}

// Sequential reads over the file's bytes; every read checks the bounds.
class Reader {
  public:
    Reader(const std::vector<uint8_t>& b, const std::string& path) : b_(b), path_(path) {}
    template <typename T>
    T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, b_.data() + at_, sizeof(T));
        at_ += sizeof(T);
        return v;
    }
    std::string str() {
        const auto n = get<uint64_t>();
        need(n);
        std::string s(reinterpret_cast<const char*>(b_.data() + at_), static_cast<size_t>(n));
        at_ += static_cast<size_t>(n);
        return s;
    }
    void skip(uint64_t n) {
        need(n);
        at_ += static_cast<size_t>(n);
    }
    size_t pos() const { return at_; }
    void need(uint64_t n) const {
        if (n > b_.size() - at_)
            refuse(BASALT_ERR_FORMAT, path_ + ": truncated GGUF (at byte " + std::to_string(at_) + ")");
    }

  private:
    const std::vector<uint8_t>& b_;
    const std::string& path_;
    size_t at_ = 0;
};

// GGUF value types: sizes of the fixed-size ones (0: string or array).
uint64_t value_size(uint32_t type, const std::string& path) {
    switch (type) {
        case 0:
        case 1:
        case 7:
            return 1;  // u8 i8 bool
        case 2:
        case 3:
            return 2;  // u16 i16
        case 4:
        case 5:
        case 6:
            return 4;  // u32 i32 f32
        case 10:
        case 11:
        case 12:
            return 8;  // u64 i64 f64
        case 8:
        case 9:
            return 0;  // string, array
        default:
            refuse(BASALT_ERR_FORMAT, path + ": unknown GGUF value type " + std::to_string(type));
    }
}

struct ControlVector {
    std::string model_hint;
    int64_t layer_count = -1;
    std::map<uint32_t, std::vector<float>> directions;  // layer -> n_embd values
};

ControlVector read_control_vector(const std::string& path) {
    const std::vector<uint8_t> bytes = read_file(path);
    Reader r(bytes, path);
    if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0)
        refuse(BASALT_ERR_FORMAT, path + ": not a GGUF file");
    r.skip(4);
    const auto version = r.get<uint32_t>();
    if (version < 2 || version > 3) refuse(BASALT_ERR_FORMAT, path + ": GGUF version " + std::to_string(version));
    const auto n_tensors = r.get<uint64_t>();
    const auto n_kv = r.get<uint64_t>();
    if (n_tensors > bytes.size() || n_kv > bytes.size()) refuse(BASALT_ERR_FORMAT, path + ": impossible counts");
    ControlVector cv;
    std::string arch;
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
        const std::string key = r.str();
        const auto type = r.get<uint32_t>();
        if (type == 8) {
            const std::string v = r.str();
            if (key == "general.architecture") arch = v;
            if (key == "controlvector.model_hint") cv.model_hint = v;
        } else if (type == 9) {
            const auto et = r.get<uint32_t>();
            const auto n = r.get<uint64_t>();
            const uint64_t es = value_size(et, path);
            if (et == 8) {
                for (uint64_t j = 0; j < n; ++j) r.str();
            } else if (et == 9 || n > bytes.size()) {
                refuse(BASALT_ERR_FORMAT, path + ": metadata '" + key + "' is an unsupported array");
            } else {
                r.skip(es * n);
            }
        } else {
            const uint64_t es = value_size(type, path);
            if (key == "controlvector.layer_count" && (type == 4 || type == 5)) {
                cv.layer_count = type == 4 ? static_cast<int64_t>(r.get<uint32_t>()) : r.get<int32_t>();
            } else if (key == "general.alignment" && type == 4) {
                alignment = r.get<uint32_t>();
                if (alignment == 0 || (alignment & (alignment - 1)) != 0)
                    refuse(BASALT_ERR_FORMAT, path + ": general.alignment " + std::to_string(alignment));
            } else {
                r.skip(es);
            }
        }
    }
    if (arch != kControlVectorFormat) {
        refuse(BASALT_ERR_FORMAT,
               path + ": general.architecture is '" + arch + "', not '" + kControlVectorFormat + "'");
    }
    struct Info {
        std::string name;
        uint64_t n = 1, offset = 0;
        uint32_t type = 0, n_dims = 0;
    };
    std::vector<Info> infos;
    for (uint64_t i = 0; i < n_tensors; ++i) {
        Info t;
        t.name = r.str();
        t.n_dims = r.get<uint32_t>();
        if (t.n_dims == 0 || t.n_dims > 4)
            refuse(BASALT_ERR_FORMAT, path + ": tensor '" + t.name + "' has " + std::to_string(t.n_dims) + " dims");
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            const auto ne = r.get<uint64_t>();
            if (ne == 0 || ne > bytes.size())
                refuse(BASALT_ERR_FORMAT, path + ": tensor '" + t.name + "' has a bad shape");
            t.n *= ne;
            if (t.n > bytes.size())
                refuse(BASALT_ERR_FORMAT, path + ": tensor '" + t.name + "' is larger than the file");
        }
        t.type = r.get<uint32_t>();
        t.offset = r.get<uint64_t>();
        infos.push_back(std::move(t));
    }
    const uint64_t data = (r.pos() + alignment - 1) / alignment * alignment;
    for (const Info& t : infos) {
        if (t.name.rfind("direction.", 0) != 0) continue;
        const std::string num = t.name.substr(10);
        char* end = nullptr;
        const long layer = std::strtol(num.c_str(), &end, 10);
        if (num.empty() || *end != '\0' || layer < 1 || layer > 1000000) {
            refuse(BASALT_ERR_FORMAT, path + ": tensor '" + t.name + "' does not name a layer >= 1");
        }
        if (t.type != 0) refuse(BASALT_ERR_FORMAT, path + ": tensor '" + t.name + "' is not F32");
        if (t.offset > bytes.size() || data > bytes.size() - t.offset || 4 * t.n > bytes.size() - data - t.offset)
            refuse(BASALT_ERR_FORMAT, path + ": tensor '" + t.name + "' lies outside the file");
        std::vector<float> v(static_cast<size_t>(t.n));
        std::memcpy(v.data(), bytes.data() + data + t.offset, 4 * v.size());
        for (size_t i = 0; i < v.size(); ++i) {
            if (!std::isfinite(v[i])) {
                refuse(BASALT_ERR_FORMAT, path + ": tensor '" + t.name + "' holds a non-finite value (" +
                                              (std::isnan(v[i]) ? "nan" : "inf") + ") at index " + std::to_string(i));
            }
        }
        cv.directions[static_cast<uint32_t>(layer)] = std::move(v);
    }
    if (cv.directions.empty())
        refuse(BASALT_ERR_FORMAT, path + ": holds no direction.N tensor (a control vector with no directions)");
    return cv;
}

struct Hook {
    uint32_t n_layers = 0, n_embd = 0;
    float scale = 1.f;
    std::vector<float> sum;       // n_layers x n_embd
    std::vector<uint8_t> hooked;  // per layer
};

void parse_layers(const std::string& s, uint32_t& first, uint32_t& last) {
    const size_t dash = s.find('-');
    char* end = nullptr;
    const std::string a = s.substr(0, dash), b = dash == std::string::npos ? a : s.substr(dash + 1);
    const long lo = std::strtol(a.c_str(), &end, 10);
    const bool ok_a = !a.empty() && *end == '\0';
    const long hi = std::strtol(b.c_str(), &end, 10);
    if (!ok_a || b.empty() || *end != '\0' || lo < 0 || hi < lo) {
        refuse(BASALT_ERR_INVALID_ARGUMENT, "layers '" + s + "' is not a range A-B (0 <= A <= B)");
    }
    first = static_cast<uint32_t>(lo);
    last = static_cast<uint32_t>(hi);
}

basalt_status vector_create(const basalt_host* /*host*/, uint32_t n_layers, uint32_t n_embd,
                            const basalt_params* params, void** out_hook) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, kWho);
        p.expect_only({"file", "scale", "layers"});
        auto h = std::make_unique<Hook>();
        h->n_layers = n_layers;
        h->n_embd = n_embd;
        h->scale = p.get_float("scale", 1.f);
        uint32_t first = 0, last = UINT32_MAX;
        if (auto l = p.find("layers")) parse_layers(std::string(*l), first, last);
        h->sum.assign(static_cast<size_t>(n_layers) * n_embd, 0.f);
        h->hooked.assign(n_layers, 0);
        size_t files = 0;
        for (size_t i = 0; i < p.size(); ++i) {
            if (p.key(i) != "file") continue;
            const std::string path(p.value(i));
            const ControlVector cv = read_control_vector(path);
            ++files;
            if (cv.layer_count >= static_cast<int64_t>(n_layers)) {
                refuse(BASALT_ERR_INVALID_ARGUMENT, path + ": controlvector.layer_count " +
                                                        std::to_string(cv.layer_count) + " does not fit the model's " +
                                                        std::to_string(n_layers) + " layers (directions 1.." +
                                                        std::to_string(n_layers - 1) + ")");
            }
            for (const auto& [layer, v] : cv.directions) {
                if (v.size() != n_embd) {
                    refuse(BASALT_ERR_INVALID_ARGUMENT, path + ": direction." + std::to_string(layer) + " has " +
                                                            std::to_string(v.size()) +
                                                            " values, the model's n_embd is " + std::to_string(n_embd));
                }
                if (layer >= n_layers) {
                    refuse(BASALT_ERR_INVALID_ARGUMENT, path + ": direction." + std::to_string(layer) +
                                                            " is past the model's " + std::to_string(n_layers) +
                                                            " layers (0.." + std::to_string(n_layers - 1) + ")");
                }
                if (layer < first || layer > last) continue;
                float* dst = h->sum.data() + static_cast<size_t>(layer) * n_embd;
                for (uint32_t i2 = 0; i2 < n_embd; ++i2) dst[i2] += v[i2];
                h->hooked[layer] = 1;
            }
        }
        if (files == 0) refuse(BASALT_ERR_INVALID_ARGUMENT, "no 'file' given (a llama.cpp control-vector GGUF)");
        *out_hook = h.release();
    });
}

void vector_destroy(void* hook) {
    delete static_cast<Hook*>(hook);
}

basalt_status vector_layer_mode(void* hook, uint32_t layer, uint32_t* out_mode) {
    return basalt::sdk::guard([&] {
        const auto* h = static_cast<const Hook*>(hook);
        *out_mode = layer < h->n_layers && h->hooked[layer] != 0 ? static_cast<uint32_t>(BASALT_STEERING_ADD) : 0u;
    });
}

basalt_status vector_vector(void* hook, uint32_t layer, float* out, size_t n_embd, float* out_scale) {
    return basalt::sdk::guard([&] {
        const auto* h = static_cast<const Hook*>(hook);
        if (layer >= h->n_layers || n_embd != h->n_embd) {
            refuse(BASALT_ERR_INVALID_ARGUMENT, "vector(layer " + std::to_string(layer) + ", n_embd " +
                                                    std::to_string(n_embd) + ") outside the hook's " +
                                                    std::to_string(h->n_layers) + " x " + std::to_string(h->n_embd));
        }
        std::memcpy(out, h->sum.data() + static_cast<size_t>(layer) * n_embd, 4 * n_embd);
        *out_scale = h->scale;
    });
}

const basalt_steering_iface kIface = {
    sizeof(basalt_steering_iface), 0, vector_create, vector_destroy, vector_layer_mode, vector_vector, nullptr,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_STEERING,
    kName,
    "adds llama.cpp control vectors (GGUF direction.N), summed, scaled, over a layer range",
    1,
    0,
    0,
    0,
    &kIface,
};

}  // namespace

BASALT_DECLARE_PLUGIN("steering-vector", basalt::sdk::component<kComponent>)
