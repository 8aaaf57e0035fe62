// bench-backend-ops: times MATMUL (matvec T=1 and prefill T=128) per weight type at real shapes through the
// backend plugin, and prints GB/s (weight bytes streamed) and GFLOP/s beside the machine's measured read
// bandwidth and arithmetic peaks (int8 dot for quantized weights, fp32 FMA for float ones), so kernels are judged
// against both roofs. Times are the fastest of the repeated calls.
//   bench-backend-ops [--threads 1,2] [--isa auto] [--types q8_0,f16] [--shapes 576x1536,...] [--tokens 1,128]
//                     [--plugin path/to/basalt-backend-cpu.so]   (another build of the plugin, e.g. a baseline)
//                     [--backend vulkan --plugin path/to/basalt-backend-vulkan.so]   (another backend; no isa)
//                     [--param KEY=VALUE ...]   (more backend parameters, e.g. repack=0)
//                     [--cpu-time 1]   (time calls by the calling thread's CPU time: with --threads 1, on a busy
//                                       machine)
#include <basalt/plugin_backend.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bandwidth-probe.hpp"
#include "compute-probe.hpp"
#include "host/host-services.hpp"
#include "host/plugin-host.hpp"

// plugin-host.cpp labels components with basalt_component_kind_name, which lives in the shared library's API
// layer, not in basalt_core; this weak stand-in lets a basalt_core-only binary link the plugin host.
extern "C" __attribute__((weak)) const char* basalt_component_kind_name(basalt_component_kind kind) {
    static const char* const kNames[] = {"", "backend", "kv_cache", "sampler", "decoder", "steering"};
    return kind >= BASALT_COMPONENT_BACKEND && kind <= BASALT_COMPONENT_STEERING ? kNames[kind] : "unknown";
}

namespace {

using Clock = std::chrono::steady_clock;

struct TypeRow {
    const char* name;
    basalt_dtype type;
    int block;
    int bytes;
};

const TypeRow kTypes[] = {
    {"f32", BASALT_DTYPE_F32, 1, 4},       {"f16", BASALT_DTYPE_F16, 1, 2},       {"bf16", BASALT_DTYPE_BF16, 1, 2},
    {"q8_0", BASALT_DTYPE_Q8_0, 32, 34},   {"q4_0", BASALT_DTYPE_Q4_0, 32, 18},   {"q4_1", BASALT_DTYPE_Q4_1, 32, 20},
    {"q5_0", BASALT_DTYPE_Q5_0, 32, 22},   {"q5_1", BASALT_DTYPE_Q5_1, 32, 24},   {"q2_K", BASALT_DTYPE_Q2_K, 256, 84},
    {"q3_K", BASALT_DTYPE_Q3_K, 256, 110}, {"q4_K", BASALT_DTYPE_Q4_K, 256, 144}, {"q5_K", BASALT_DTYPE_Q5_K, 256, 176},
    {"q6_K", BASALT_DTYPE_Q6_K, 256, 210}, {"mxfp4", BASALT_DTYPE_MXFP4, 32, 17},
};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (!item.empty()) out.push_back(item);
    }
    return out;
}

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// --cpu-time: calls are timed by the calling thread's CPU time instead of the wall clock. With --threads 1 the
// calling thread does all the work, so on a loaded machine this measures the kernel, not the time it waited for a
// core (a call longer than the scheduler's slice is otherwise always stretched by the other jobs).
bool g_cpu_time = false;

double now_seconds() {
    if (g_cpu_time) {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    }
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

struct Bench {
    const basalt_backend_iface* iface;
    void* be;
};

// Times one MATMUL node; returns seconds per call.
double time_matmul(const Bench& b, const TypeRow& t, int64_t k, int64_t n, int64_t m) {
    const uint64_t wbytes = static_cast<uint64_t>(k / t.block * t.bytes * n);
    basalt_buffer* wb = nullptr;
    basalt_buffer* io = nullptr;
    if (b.iface->buffer_alloc(b.be, wbytes, BASALT_BUFFER_WEIGHTS, &wb) != BASALT_OK) return -1;
    if (b.iface->buffer_alloc(b.be, static_cast<uint64_t>(4 * (k + n) * m), BASALT_BUFFER_IO, &io) != BASALT_OK)
        return -1;
    {
        // Random blocks with small positive fp16 scales (bytes 0x11 0x11 = a normal half) are valid data.
        std::vector<uint8_t> w(wbytes);
        std::mt19937 rng(7);
        for (auto& x : w) x = static_cast<uint8_t>(rng() & 0x3f);
        // MXFP4's first byte is an E8M0 exponent: a small one makes every product subnormal (slow on x86).
        if (t.type == BASALT_DTYPE_MXFP4) {
            for (size_t o = 0; o < w.size(); o += 17) w[o] = static_cast<uint8_t>(120 + rng() % 8);
        }
        b.iface->buffer_write(b.be, wb, 0, w.data(), w.size());
        std::vector<float> x(static_cast<size_t>((k + n) * m), 0.25f);
        b.iface->buffer_write(b.be, io, 0, x.data(), x.size() * 4);
    }
    basalt_tensor tw{}, tx{}, to{};
    for (basalt_tensor* p : {&tw, &tx, &to}) p->struct_size = sizeof(basalt_tensor);
    tw.dtype = t.type;
    tw.n_dims = 2;
    tw.ne[0] = k;
    tw.ne[1] = n;
    tw.ne[2] = tw.ne[3] = 1;
    tw.nb[0] = t.bytes;
    tw.nb[1] = k / t.block * t.bytes;
    tw.nb[2] = tw.nb[3] = tw.nb[1] * n;
    tw.buffer = wb;
    tw.name = "w";
    tx.dtype = BASALT_DTYPE_F32;
    tx.n_dims = 2;
    tx.ne[0] = k;
    tx.ne[1] = m;
    tx.ne[2] = tx.ne[3] = 1;
    tx.nb[0] = 4;
    tx.nb[1] = 4 * k;
    tx.nb[2] = tx.nb[3] = 4 * k * m;
    tx.buffer = io;
    tx.name = "x";
    to = tx;
    to.ne[0] = n;
    to.nb[1] = 4 * n;
    to.nb[2] = to.nb[3] = 4 * n * m;
    to.offset = static_cast<uint64_t>(4 * k * m);
    to.name = "out";
    basalt_graph_node node{};
    node.struct_size = sizeof(node);
    node.op = BASALT_OP_MATMUL;
    node.name = "bench";
    node.output = 2;
    node.n_inputs = 2;
    node.inputs[0] = 0;
    node.inputs[1] = 1;
    const basalt_tensor* ts[] = {&tw, &tx, &to};
    const basalt_graph_node* ns[] = {&node};
    basalt_graph g{sizeof(basalt_graph), 0, 3, ts, 1, ns};
    double per = -1;
    if (b.iface->graph_compute(b.be, &g) == BASALT_OK) {
        for (int i = 0; i < 2; ++i) b.iface->graph_compute(b.be, &g);
        // The fastest call: on a shared machine the mean mostly measures the other load.
        int iters = 0;
        const auto t0 = Clock::now();
        while (iters < 5 || seconds_since(t0) < 0.4) {
            const double t1 = now_seconds();
            b.iface->graph_compute(b.be, &g);
            const double dt = now_seconds() - t1;
            per = per < 0 ? dt : std::min(per, dt);
            ++iters;
        }
    }
    b.iface->buffer_free(b.be, wb);
    b.iface->buffer_free(b.be, io);
    return per;
}

}  // namespace

int main(int argc, char** argv) {
    std::string threads_arg = "1,2", isa = "auto",
                types_arg = "f32,f16,bf16,q8_0,q4_0,q4_1,q5_0,q5_1,q2_K,q3_K,q4_K,q5_K,q6_K,mxfp4";
    std::string shapes_arg = "576x1536,1536x576,576x49152", tokens_arg = "1,128";
    std::string plugin = BASALT_BENCH_BACKEND_CPU;
    std::string backend = "cpu";
    std::vector<std::string> param_keys, param_vals;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--threads")
            threads_arg = argv[i + 1];
        else if (a == "--isa")
            isa = argv[i + 1];
        else if (a == "--types")
            types_arg = argv[i + 1];
        else if (a == "--shapes")
            shapes_arg = argv[i + 1];
        else if (a == "--tokens")
            tokens_arg = argv[i + 1];
        else if (a == "--cpu-time")
            g_cpu_time = std::string(argv[i + 1]) == "1";
        else if (a == "--plugin")
            plugin = argv[i + 1];
        else if (a == "--backend")
            backend = argv[i + 1];
        else if (const std::string kv = argv[i + 1]; a == "--param" && kv.find('=') != std::string::npos) {
            param_keys.push_back(kv.substr(0, kv.find('=')));
            param_vals.push_back(kv.substr(kv.find('=') + 1));
        } else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    basalt::PluginHost host;
    host.load(plugin);
    const auto* comp = host.find(BASALT_COMPONENT_BACKEND, backend);
    if (comp == nullptr) return 1;
    const auto* iface = static_cast<const basalt_backend_iface*>(comp->iface);
    for (const auto& th : split(threads_arg)) {
        // The machine's limit at this thread count (whatever --isa the backend is given): the best of 8 passes.
        const double bw = basalt::bench::BandwidthProbe(static_cast<unsigned>(std::stoi(th))).measure(8) / 1e9;
        basalt::bench::ComputeProbe peaks(static_cast<unsigned>(std::stoi(th)));
        peaks.measure(5);
        std::printf(
            "\n== threads %s, isa %s: measured read bandwidth %.1f GB/s, int8 dot peak %.0f GOP/s (%s), "
            "fp32 FMA peak %.0f GFLOP/s (%s) ==\n",
            th.c_str(), isa.c_str(), bw, peaks.int8_ops() / 1e9, peaks.int8_isa(), peaks.fp32_flops() / 1e9,
            peaks.fp32_isa());
        std::printf("%-6s %-11s %5s %10s %9s %8s %9s %6s\n", "type", "KxN", "T", "us/call", "GB/s", "%bw", "GFLOP/s",
                    "%peak");
        // Only the CPU backend takes an ISA.
        std::vector<const char*> keys = {"threads"};
        std::vector<const char*> vals = {th.c_str()};
        if (backend == "cpu") {
            keys.push_back("isa");
            vals.push_back(isa.c_str());
        }
        for (size_t i = 0; i < param_keys.size(); ++i) {
            keys.push_back(param_keys[i].c_str());
            vals.push_back(param_vals[i].c_str());
        }
        basalt_params p{sizeof(basalt_params), 0, static_cast<uint32_t>(keys.size()), keys.data(), vals.data()};
        void* be = nullptr;
        if (iface->create(basalt::host_services(), 0, &p, &be) != BASALT_OK) {
            std::fprintf(stderr, "create failed (isa %s)\n", isa.c_str());
            return 1;
        }
        Bench b{iface, be};
        for (const auto& tn : split(types_arg)) {
            const TypeRow* t = nullptr;
            for (const auto& r : kTypes) {
                if (tn == r.name) t = &r;
            }
            if (t == nullptr) continue;
            for (const auto& sh : split(shapes_arg)) {
                const auto x = sh.find('x');
                const int64_t k = std::stoll(sh.substr(0, x));
                const int64_t n = std::stoll(sh.substr(x + 1));
                if (k % t->block != 0) continue;
                for (const auto& tk : split(tokens_arg)) {
                    const int64_t m = std::stoll(tk);
                    const double s = time_matmul(b, *t, k, n, m);
                    if (s < 0) {
                        std::printf("%-6s %-11s %5lld  unsupported\n", t->name, sh.c_str(), static_cast<long long>(m));
                        continue;
                    }
                    const double gbs = static_cast<double>(k / t->block * t->bytes * n) / s / 1e9;
                    const double gflops = 2.0 * static_cast<double>(k * n * m) / s / 1e9;
                    // Quantized weights meet int8 activations (Q8_0 / Q8_1 / Q8_K): their roof is the int8 peak.
                    const bool flt = t->block == 1;
                    const double peak = (flt ? peaks.fp32_flops() : peaks.int8_ops()) / 1e9;
                    std::printf("%-6s %-11s %5lld %10.1f %9.2f %7.0f%% %9.2f %5.0f%%\n", t->name, sh.c_str(),
                                static_cast<long long>(m), s * 1e6, gbs, 100.0 * gbs / bw, gflops,
                                100.0 * gflops / peak);
                }
            }
        }
        iface->destroy(be);
    }
    return 0;
}
