// `basalt steer build`: a steering direction per layer from two sets of prompts (positive, negative). Each prompt's
// residual stream at the output of every chosen layer (the steering hook point) is observed and averaged over its
// tokens; the direction is the difference of the two sets' means (mean-diff), or the first principal component of
// the paired differences (pca, as llama.cpp's cvector-generator: unit length, sign toward the positive set). The
// result is a llama.cpp control-vector GGUF (direction.N for layer N >= 1) that `--steer` and llama.cpp load.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "engine-setup.hpp"

namespace basalt::cli {
namespace {

// Prompts of a file: fortune style (entries separated by lines holding only "%") when such a line exists, else
// one prompt per non-empty line.
bool read_prompts(const std::string& path, std::vector<std::string>& out) {
    std::ifstream is(path, std::ios::binary);
    if (!is) {
        print_error("cannot open '" + path + "'");
        return false;
    }
    std::vector<std::string> lines;
    std::string line;
    bool fortune = false;
    while (std::getline(is, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        fortune = fortune || line == "%";
        lines.push_back(line);
    }
    std::string cur;
    for (const auto& l : lines) {
        if (!fortune) {
            if (!l.empty()) out.push_back(l);
            continue;
        }
        if (l == "%") {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += (cur.empty() ? "" : "\n") + l;
        }
    }
    if (fortune && !cur.empty()) out.push_back(cur);
    if (out.empty()) print_error("'" + path + "' holds no prompt");
    return !out.empty();
}

void progress(size_t done, size_t total) {
    constexpr size_t kWidth = 30;
    const size_t filled = total == 0 ? kWidth : done * kWidth / total;
    std::cerr << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, ' ') << "] " << done << '/' << total
              << " prompts" << std::flush;
    if (done == total) std::cerr << '\n';
}

// Mean residual row of each observed layer over the prompt's tokens: [layer][n_embd] (empty rows for others).
bool observe_prompt(basalt_session* s, const cpp::Model& model, const std::string& text,
                    const std::vector<uint32_t>& layers, size_t n_embd, std::vector<std::vector<double>>& out) {
    std::vector<int32_t> ids = model.tokenize(text, BASALT_TOKENIZE_ADD_SPECIAL);
    if (ids.empty()) {
        print_error("a prompt tokenizes to nothing");
        return false;
    }
    ids.resize(std::min<size_t>(ids.size(), basalt_session_n_ctx(s)));
    basalt_session_seq_drop(s, 0);
    std::vector<int32_t> pos(ids.size()), seq(ids.size(), 0);
    for (size_t i = 0; i < ids.size(); ++i) pos[i] = static_cast<int32_t>(i);
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = ids.size();
    b.tokens = ids.data();
    b.positions = pos.data();
    b.seq_ids = seq.data();
    if (basalt_session_decode(s, &b) != BASALT_OK) {
        print_error(basalt_last_error());
        return false;
    }
    for (uint32_t il : layers) {
        const float* rows = nullptr;
        size_t n = 0;
        if (basalt_session_observed(s, il, &rows, &n) != BASALT_OK || n == 0) {
            print_error(std::string("observing layer ") + std::to_string(il) + ": " + basalt_last_error());
            return false;
        }
        std::vector<double> mean(n_embd, 0.0);
        for (size_t r = 0; r < n; ++r)
            for (size_t i = 0; i < n_embd; ++i) mean[i] += rows[r * n_embd + i];
        for (double& v : mean) v /= static_cast<double>(n);
        out[il] = std::move(mean);
    }
    return true;
}

// First principal component of the rows (uncentred, as cvector-generator), by power iteration; unit length.
std::vector<double> principal(const std::vector<std::vector<double>>& rows, size_t n) {
    std::vector<double> v(n, 1.0 / std::sqrt(static_cast<double>(n)));
    for (int it = 0; it < 500; ++it) {
        std::vector<double> w(n, 0.0);
        for (const auto& r : rows) {
            double d = 0;
            for (size_t i = 0; i < n; ++i) d += r[i] * v[i];
            for (size_t i = 0; i < n; ++i) w[i] += d * r[i];
        }
        double norm = 0;
        for (double x : w) norm += x * x;
        norm = std::sqrt(norm);
        if (norm == 0) return v;
        double change = 0;
        for (size_t i = 0; i < n; ++i) {
            w[i] /= norm;
            change += std::abs(w[i] - v[i]);
        }
        v = std::move(w);
        if (change < 1e-10) break;
    }
    return v;
}

int run_steer(const po::variables_map& vm, const GlobalOptions& g) {
    const cpp::SessionParams sp = session_params(vm);  // a bad option value exits before anything loads
    if (vm["action"].as<std::string>() != "build") {
        print_error("unknown steer action '" + vm["action"].as<std::string>() + "' (known: build)");
        return kExitUsage;
    }
    const std::string method = vm["method"].as<std::string>();
    if (method != "mean-diff" && method != "pca") {
        print_error("--method must be mean-diff or pca, not '" + method + "'");
        return kExitUsage;
    }
    std::vector<std::string> pos_prompts, neg_prompts;
    if (!read_prompts(vm["positive"].as<std::string>(), pos_prompts) ||
        !read_prompts(vm["negative"].as<std::string>(), neg_prompts))
        return kExitError;
    const cpp::Runtime rt(runtime_options(g));
    const cpp::Model model(vm["model"].as<std::string>());
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    if (basalt_model_describe(model.get(), &info) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    const uint32_t n_layer = info.n_layer;
    const size_t n_embd = info.n_embd;
    if (n_layer < 2) {
        print_error("the model has " + std::to_string(n_layer) + " layer(s); control vectors start at layer 1");
        return kExitError;
    }
    uint32_t first = 1, last = n_layer - 1;
    if (vm.count("layers") != 0) {
        const std::string r = vm["layers"].as<std::string>();
        const size_t dash = r.find('-');
        char* end = nullptr;
        const long a = std::strtol(r.c_str(), &end, 10);
        const bool ok_a = end != r.c_str() && (dash == std::string::npos ? *end == '\0' : end == r.c_str() + dash);
        const long b = dash == std::string::npos ? a : std::strtol(r.c_str() + dash + 1, &end, 10);
        if (!ok_a || *end != '\0' || a < 1 || b < a || b >= static_cast<long>(n_layer)) {
            print_error("--layers '" + r + "' must be A-B with 1 <= A <= B <= " + std::to_string(n_layer - 1) +
                        " (llama.cpp's files have no layer 0)");
            return kExitUsage;
        }
        first = static_cast<uint32_t>(a);
        last = static_cast<uint32_t>(b);
    }
    if (method == "pca" && pos_prompts.size() != neg_prompts.size()) {
        print_error("--method pca pairs the prompts: the positive file has " + std::to_string(pos_prompts.size()) +
                    ", the negative " + std::to_string(neg_prompts.size()));
        return kExitUsage;
    }
    const cpp::Session session(rt, model, sp);
    std::vector<uint32_t> layers;
    std::vector<uint8_t> flags(n_layer, 0);
    for (uint32_t il = first; il <= last; ++il) {
        layers.push_back(il);
        flags[il] = 1;
    }
    if (basalt_session_set_observe(session.get(), flags.data(), n_layer) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    // means[set][prompt][layer][i]
    std::vector<std::vector<std::vector<double>>> means[2];
    const size_t total = pos_prompts.size() + neg_prompts.size();
    size_t done = 0;
    for (int set = 0; set < 2; ++set) {
        for (const std::string& p : set == 0 ? pos_prompts : neg_prompts) {
            std::vector<std::vector<double>> m(n_layer);
            if (!observe_prompt(session.get(), model, p, layers, n_embd, m)) return kExitError;
            means[set].push_back(std::move(m));
            progress(++done, total);
        }
    }
    basalt_gguf_writer* w = nullptr;
    if (basalt_gguf_writer_create(&w) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    std::unique_ptr<basalt_gguf_writer, void (*)(basalt_gguf_writer*)> guard(w, basalt_gguf_writer_destroy);
    bool ok =
        basalt_gguf_writer_set_string(w, "general.architecture", "controlvector") == BASALT_OK &&
        basalt_gguf_writer_set_string(w, "controlvector.model_hint", info.arch) == BASALT_OK &&
        basalt_gguf_writer_set_i32(w, "controlvector.layer_count", static_cast<int32_t>(n_layer - 1)) == BASALT_OK;
    for (uint32_t il : layers) {
        std::vector<double> dir(n_embd, 0.0);
        if (method == "mean-diff") {
            for (int set = 0; set < 2; ++set) {
                const double sign = set == 0 ? 1.0 : -1.0;
                for (const auto& m : means[set])
                    for (size_t i = 0; i < n_embd; ++i)
                        dir[i] += sign * m[il][i] / static_cast<double>(means[set].size());
            }
        } else {
            std::vector<std::vector<double>> diffs;
            for (size_t k = 0; k < means[0].size(); ++k) {
                std::vector<double> d(n_embd);
                for (size_t i = 0; i < n_embd; ++i) d[i] = means[0][k][il][i] - means[1][k][il][i];
                diffs.push_back(std::move(d));
            }
            dir = principal(diffs, n_embd);
            double proj = 0;
            for (const auto& d : diffs)
                for (size_t i = 0; i < n_embd; ++i) proj += d[i] * dir[i];
            if (proj < 0)
                for (double& x : dir) x = -x;
        }
        const std::vector<float> f(dir.begin(), dir.end());
        const int64_t ne[1] = {static_cast<int64_t>(n_embd)};
        ok = ok && basalt_gguf_writer_add_tensor_f32(w, ("direction." + std::to_string(il)).c_str(), BASALT_DTYPE_F32,
                                                     ne, 1, f.data(), f.size()) == BASALT_OK;
    }
    const std::string out = vm["output"].as<std::string>();
    if (!ok || basalt_gguf_writer_write(w, out.c_str()) != BASALT_OK) {
        print_error(basalt_last_error());
        return kExitError;
    }
    std::cerr << "wrote " << out << ": " << method << " directions for layers " << first << "-" << last << " from "
              << pos_prompts.size() << " positive and " << neg_prompts.size() << " negative prompts\n";
    return kExitOk;
}

const Registrar kSteer{Command{
    "steer", "build a steering vector (llama.cpp control-vector GGUF) from contrastive prompts",
    "basalt steer build -m MODEL --positive FILE --negative FILE [--layers A-B] [--method mean-diff|pca] -o VEC.gguf",
    [](po::options_description& d, po::positional_options_description& pos) {
        d.add_options()("action", po::value<std::string>()->required(), "build")(
            "model,m", po::value<std::string>()->required(), "GGUF model file or shipped model name")(
            "positive", po::value<std::string>()->required(),
            "prompts toward the direction: one per line, or fortune style ('%' lines between entries)")(
            "negative", po::value<std::string>()->required(), "prompts away from it (same format)")(
            "layers", po::value<std::string>(), "layers A-B (1 <= A <= B < n_layer; default all from 1)")(
            "method", po::value<std::string>()->default_value("mean-diff"),
            "mean-diff (difference of the sets' mean activations, averaged over each prompt's tokens) or pca "
            "(first principal component of the paired differences, unit length)")(
            "output,o", po::value<std::string>()->required(), "the control-vector GGUF to write");
        pos.add("action", 1);
        add_session_options(d);
    },
    run_steer}};

}  // namespace
}  // namespace basalt::cli
