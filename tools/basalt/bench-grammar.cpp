// `basalt bench --mode grammar`: the grammar sampler (plugin "grammar", through the C API as any front end uses it)
// on JSON Schemas of several shapes and the vocabularies of --model and each --vocab (any GGUF with a tokenizer; a
// vocab-only file is enough). Per vocabulary the token trie is built once (the first grammar sampler given the
// vocabulary; timed apart). Per schema and round: the compile (the sampler's create, schema to grammar, and
// set_vocab, the matcher), then a seeded random walk of --steps tokens through the grammar (each step picks an
// allowed token that does not end generation, and resets the sampler where none is left) timing per step:
//   mask          the sampler's apply on a one-candidate array: the token mask as the sampler gets it (cached per
//                 parse state, computed on a miss) with nothing to apply it to;
//   mask + apply  that plus the apply on the whole vocabulary's candidate array, in id order, as a chain hands it
//                 over (the mask is cached by then): what a step's apply costs, and what llama.cpp's grammar
//                 sampler apply does;
//   accept        the sampler's accept of the picked token.
// Times are the thread's CPU time in microseconds (the machine may be shared): mean and p99 of the steps, the
// median of --repetitions rounds; rounds interleave the schemas and vocabularies, and each round starts cold (new
// samplers; the masks they cached are gone). --walk-dir DIR writes each walk of the first round (N.json, the schema;
// N.tokens, the picked tokens, -1 a reset) for bench/llama-cpp-grammar.cpp's side-by-side.
#include "bench-grammar.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine-setup.hpp"

namespace basalt::cli {
namespace {

double cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

struct Shape {
    const char* name;
    const char* schema;
};

// Several shapes: a flat object, nested objects and arrays with bounded strings, enums and formats, patterns, any
// JSON, and a large tool-call schema (one of eight functions with their arguments, as tool_choice required builds).
const Shape kShapes[] = {
    {"flat object",
     R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"email":{"type":"string"}},"required":["name","age"],"additionalProperties":false})"},
    {"nested + arrays",
     R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":999},"tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":4}},"required":["id","tags"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false})"},
    {"enum + formats",
     R"({"type":"object","properties":{"kind":{"enum":["alpha","beta","gamma"]},"when":{"type":"string","format":"date-time"},"uid":{"type":"string","format":"uuid"}},"required":["kind","when","uid"],"additionalProperties":false})"},
    {"patterns",
     R"({"type":"object","properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"},"phone":{"type":"string","pattern":"^\\+[0-9]{7,12}$"},"code":{"type":"string","pattern":"^[a-z][a-z0-9_]{2,15}$"},"day":{"type":"string","format":"date"}},"required":["sku","phone","code","day"],"additionalProperties":false})"},
    {"any JSON", R"({})"},
    {"tool call (8 functions)",
     R"({"anyOf":[)"
     R"({"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object","properties":{"location":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},"required":["location","unit"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false},)"
     R"({"type":"object","properties":{"name":{"const":"search_web"},"arguments":{"type":"object","properties":{"query":{"type":"string","maxLength":64},"max_results":{"type":"integer","minimum":1,"maximum":20}},"required":["query","max_results"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false},)"
     R"({"type":"object","properties":{"name":{"const":"send_email"},"arguments":{"type":"object","properties":{"to":{"type":"array","items":{"type":"string","pattern":"^[a-z0-9.]+@[a-z0-9]+\\.[a-z]{2,4}$"},"minItems":1,"maxItems":5},"subject":{"type":"string","maxLength":80},"body":{"type":"string"}},"required":["to","subject","body"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false},)"
     R"({"type":"object","properties":{"name":{"const":"create_event"},"arguments":{"type":"object","properties":{"title":{"type":"string"},"start":{"type":"string","format":"date-time"},"duration_minutes":{"type":"integer","minimum":5,"maximum":480},"attendees":{"type":"array","items":{"type":"string"},"maxItems":8}},"required":["title","start","duration_minutes"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false},)"
     R"({"type":"object","properties":{"name":{"const":"set_reminder"},"arguments":{"type":"object","properties":{"text":{"type":"string","minLength":1},"at":{"type":"string","format":"date-time"},"repeat":{"enum":["never","daily","weekly","monthly"]}},"required":["text","at","repeat"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false},)"
     R"({"type":"object","properties":{"name":{"const":"get_stock_price"},"arguments":{"type":"object","properties":{"symbol":{"type":"string","pattern":"^[A-Z]{1,5}$"},"currency":{"enum":["USD","EUR","JPY"]}},"required":["symbol"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false},)"
     R"({"type":"object","properties":{"name":{"const":"translate"},"arguments":{"type":"object","properties":{"text":{"type":"string"},"source":{"enum":["en","de","fr","ja","zh"]},"target":{"enum":["en","de","fr","ja","zh"]}},"required":["text","target"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false},)"
     R"({"type":"object","properties":{"name":{"const":"run_query"},"arguments":{"type":"object","properties":{"sql":{"type":"string","maxLength":200},"limit":{"type":"integer","minimum":1,"maximum":1000},"dry_run":{"type":"boolean"}},"required":["sql","limit","dry_run"],"additionalProperties":false}},"required":["name","arguments"],"additionalProperties":false})"
     R"(]})"},
};

struct Figures {
    double mean = 0, p99 = 0;
};

Figures summarise(std::vector<double> us) {
    Figures f;
    if (us.empty()) return f;
    for (const double x : us) f.mean += x;
    f.mean /= static_cast<double>(us.size());
    std::sort(us.begin(), us.end());
    f.p99 = us[std::min(us.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(us.size())))];
    return f;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct Row {  // one (vocabulary, shape): each figure per round
    std::vector<double> compile_ms, mask_mean, mask_p99, apply_mean, apply_p99, accept_mean, accept_p99;
};

struct Vocab {
    std::string path;
    std::unique_ptr<cpp::Model> model;
    size_t n_vocab = 0;
    std::vector<uint8_t> eog;
    double trie_ms = 0;
    // Keeps the vocabulary's token trie alive between the schemas' samplers (destroyed before the model).
    std::unique_ptr<basalt_sampler, void (*)(basalt_sampler*)> holder{nullptr, basalt_sampler_destroy};
};

void check(basalt_status st) {
    if (st != BASALT_OK) throw cpp::Error(st, basalt_last_error());
}

// A grammar sampler of kind json_schema over the vocabulary of v.
basalt_sampler* make_sampler(const cpp::Runtime& rt, const Vocab& v, const char* schema) {
    const char* keys[] = {"kind", "text"};
    const char* values[] = {"json_schema", schema};
    basalt_params p{};
    p.struct_size = sizeof(p);
    p.count = 2;
    p.keys = keys;
    p.values = values;
    basalt_sampler* s = nullptr;
    check(basalt_sampler_create(rt.get(), "grammar", &p, &s));
    const basalt_status st = basalt_sampler_set_vocab(s, v.model->get());
    if (st != BASALT_OK) {
        const std::string message = basalt_last_error();
        basalt_sampler_destroy(s);
        throw cpp::Error(st, message);
    }
    return s;
}

// One walk; appends this round's figures to row. walk (when non-null) gets the picked tokens.
void walk(const cpp::Runtime& rt, const Vocab& v, const Shape& shape, int steps, uint64_t seed, Row& row,
          std::vector<int32_t>* walk_out) {
    double t0 = cpu_us();
    basalt_sampler* s = make_sampler(rt, v, shape.schema);
    row.compile_ms.push_back((cpu_us() - t0) / 1000);
    std::unique_ptr<basalt_sampler, void (*)(basalt_sampler*)> owned(s, basalt_sampler_destroy);
    std::mt19937_64 rng(seed);
    std::vector<basalt_token_data> data(v.n_vocab);
    std::vector<double> mask, apply, accept;
    std::vector<int32_t> allowed;
    int32_t last = 0;
    for (int i = 0; i < steps; ++i) {
        basalt_token_data one{last, 0.f, 0.f};
        basalt_candidates c1{};
        c1.struct_size = sizeof(c1);
        c1.data = &one;
        c1.size = 1;
        c1.selected = -1;
        t0 = cpu_us();
        check(basalt_sampler_apply(s, &c1));
        mask.push_back(cpu_us() - t0);
        for (size_t t = 0; t < data.size(); ++t) data[t] = basalt_token_data{static_cast<int32_t>(t), 0.f, 0.f};
        basalt_candidates c{};
        c.struct_size = sizeof(c);
        c.data = data.data();
        c.size = data.size();
        c.selected = -1;
        t0 = cpu_us();
        check(basalt_sampler_apply(s, &c));
        apply.push_back(mask.back() + cpu_us() - t0);  // the step's mask (a miss included) and its application
        allowed.clear();
        for (size_t k = 0; k < c.size; ++k) {
            const basalt_token_data& d = c.data[k];
            if (!std::isinf(d.logit) && v.eog[static_cast<size_t>(d.id)] == 0) allowed.push_back(d.id);
        }
        if (allowed.empty()) {  // complete (only end-of-generation left) or a dead end: start again
            check(basalt_sampler_reset(s));
            if (walk_out != nullptr) walk_out->push_back(-1);
            continue;
        }
        last = allowed[rng() % allowed.size()];
        t0 = cpu_us();
        check(basalt_sampler_accept(s, last));
        accept.push_back(cpu_us() - t0);
        if (walk_out != nullptr) walk_out->push_back(last);
    }
    const Figures m = summarise(mask), a = summarise(apply), x = summarise(accept);
    row.mask_mean.push_back(m.mean);
    row.mask_p99.push_back(m.p99);
    row.apply_mean.push_back(a.mean);
    row.apply_p99.push_back(a.p99);
    row.accept_mean.push_back(x.mean);
    row.accept_p99.push_back(x.p99);
}

}  // namespace

int run_grammar_bench(const po::variables_map& vm, const GlobalOptions& g) {
    const int steps = static_cast<int>(vm["steps"].as<long long>());
    const int reps = static_cast<int>(vm["repetitions"].as<long long>());
    const std::string walk_dir = vm.count("walk-dir") != 0 ? vm["walk-dir"].as<std::string>() : "";
    std::vector<std::string> paths = {vm["model"].as<std::string>()};
    if (vm.count("vocab") != 0) {
        for (const std::string& p : vm["vocab"].as<std::vector<std::string>>()) paths.push_back(p);
    }
    const cpp::Runtime rt(runtime_options(g));
    std::vector<Vocab> vocabs(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
        Vocab& v = vocabs[i];
        v.path = paths[i];
        v.model = std::make_unique<cpp::Model>(paths[i], &rt);
        v.n_vocab = v.model->info().n_vocab;
        v.eog.resize(v.n_vocab);
        for (size_t t = 0; t < v.n_vocab; ++t)
            v.eog[t] = basalt_token_is_eog(v.model->get(), static_cast<int32_t>(t)) != 0 ? 1 : 0;
        const double t0 = cpu_us();
        v.holder.reset(make_sampler(rt, v, "{}"));  // builds the vocabulary's view and token trie
        v.trie_ms = (cpu_us() - t0) / 1000;
    }
    const size_t n_shapes = std::size(kShapes);
    std::vector<Row> rows(vocabs.size() * n_shapes);
    for (int r = 0; r < reps; ++r) {
        for (size_t vi = 0; vi < vocabs.size(); ++vi) {
            for (size_t si = 0; si < n_shapes; ++si) {
                const size_t n = vi * n_shapes + si;
                std::vector<int32_t> tokens;
                const bool write = r == 0 && !walk_dir.empty();
                walk(rt, vocabs[vi], kShapes[si], steps, 11 + si, rows[n], write ? &tokens : nullptr);
                if (write) {
                    std::ofstream(walk_dir + "/" + std::to_string(n) + ".json") << kShapes[si].schema;
                    std::ofstream out(walk_dir + "/" + std::to_string(n) + ".tokens");
                    for (const int32_t t : tokens) out << t << '\n';
                    if (!out) throw cpp::Error(BASALT_ERR_IO, "cannot write the walk into '" + walk_dir + "'");
                }
            }
        }
    }
    const bool json = vm["json"].as<bool>();
    std::ostringstream os;
    os << std::fixed;
    if (!json) {
        os << "grammar sampler, " << steps << " steps per walk, median of " << reps
           << " interleaved rounds, thread CPU time\n\n"
           << "| vocabulary | schema | compile ms | mask us mean | p99 | mask + apply us mean | p99 | accept us mean | "
              "p99 |\n|---|---|---|---|---|---|---|---|---|\n";
    }
    for (size_t n = 0; n < rows.size(); ++n) {
        const Vocab& v = vocabs[n / n_shapes];
        const Row& w = rows[n];
        const char* shape = kShapes[n % n_shapes].name;
        if (json) {
            os << std::setprecision(3) << "{\"mode\":\"grammar\",\"vocabulary\":\"" << v.path
               << "\",\"n_vocab\":" << v.n_vocab << ",\"schema\":\"" << shape << "\",\"walk\":" << n
               << ",\"compile_ms\":" << median(w.compile_ms) << ",\"mask_us_mean\":" << median(w.mask_mean)
               << ",\"mask_us_p99\":" << median(w.mask_p99) << ",\"mask_apply_us_mean\":" << median(w.apply_mean)
               << ",\"mask_apply_us_p99\":" << median(w.apply_p99) << ",\"accept_us_mean\":" << median(w.accept_mean)
               << ",\"accept_us_p99\":" << median(w.accept_p99) << "}\n";
        } else {
            os << "| " << v.path << " (" << v.n_vocab << ") | " << shape << " | " << std::setprecision(2)
               << median(w.compile_ms) << " | " << std::setprecision(1) << median(w.mask_mean) << " | "
               << median(w.mask_p99) << " | " << median(w.apply_mean) << " | " << median(w.apply_p99) << " | "
               << median(w.accept_mean) << " | " << median(w.accept_p99) << " |\n";
        }
    }
    if (!json) {
        os << "\ntoken trie, once per vocabulary:";
        for (const Vocab& v : vocabs) os << ' ' << v.path << ' ' << std::setprecision(1) << v.trie_ms << " ms;";
        os << '\n';
    }
    std::cout << os.str();
    return kExitOk;
}

}  // namespace basalt::cli
