#include "exec/pooling.hpp"

#include <cmath>
#include <string>

#include "model/model-hparams.hpp"
#include "support/error.hpp"

namespace basalt {

const char* pooling_name(Pooling p) {
    switch (p) {
        case Pooling::NONE:
            return "none";
        case Pooling::MEAN:
            return "mean";
        case Pooling::CLS:
            return "cls";
        case Pooling::LAST:
            return "last";
        case Pooling::RANK:
            return "rank";
    }
    return "?";
}

std::optional<Pooling> pooling_from_name(std::string_view name) {
    for (Pooling p : {Pooling::NONE, Pooling::MEAN, Pooling::CLS, Pooling::LAST, Pooling::RANK}) {
        if (name == pooling_name(p)) return p;
    }
    return std::nullopt;
}

Pooling model_pooling(const ModelHparams& hp) {
    if (hp.pooling >= 0) return static_cast<Pooling>(hp.pooling);
    return hp.encoder_only ? Pooling::MEAN : Pooling::LAST;
}

std::string embed_refusal(const ModelHparams& hp, Pooling p) {
    if (!hp.encoder_only) {
        return "'" + hp.arch +
               "' is a generative (decoder) model; embeddings come from encoder-only embedding models (bert)";
    }
    if (p == Pooling::RANK && hp.n_cls_out == 0) {
        return "'" + hp.arch + "' has no rank head (cls.output.weight or cls.weight): it cannot rerank";
    }
    return {};
}

std::vector<float> pool(const float* rows, size_t n, size_t n_embd, Pooling p) {
    if (n == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "pooling an empty input");
    switch (p) {
        case Pooling::NONE:
            return {rows, rows + n * n_embd};
        case Pooling::MEAN: {
            // Summed in double: the mean of a long input does not depend on the order of its rows.
            std::vector<double> sum(n_embd, 0.0);
            for (size_t t = 0; t < n; ++t) {
                for (size_t i = 0; i < n_embd; ++i) sum[i] += rows[t * n_embd + i];
            }
            std::vector<float> out(n_embd);
            for (size_t i = 0; i < n_embd; ++i) out[i] = static_cast<float>(sum[i] / static_cast<double>(n));
            return out;
        }
        case Pooling::CLS:
            return {rows, rows + n_embd};
        case Pooling::LAST:
            return {rows + (n - 1) * n_embd, rows + n * n_embd};
        case Pooling::RANK:
            break;
    }
    fail(BASALT_ERR_INVALID_ARGUMENT, "pooling '{}' gives the rank head's scores, not pooled rows", pooling_name(p));
}

std::vector<float> finish_vectors(const std::vector<float>& v, size_t n_embd, size_t dimensions, bool l2) {
    const size_t d = dimensions == 0 || dimensions > n_embd ? n_embd : dimensions;
    const size_t n = n_embd == 0 ? 0 : v.size() / n_embd;
    std::vector<float> out;
    out.reserve(n * d);
    for (size_t k = 0; k < n; ++k) {
        const float* x = v.data() + k * n_embd;
        double sq = 0;
        for (size_t i = 0; i < d; ++i) sq += static_cast<double>(x[i]) * x[i];
        const double scale = l2 && sq > 0 ? 1.0 / std::sqrt(sq) : 1.0;
        for (size_t i = 0; i < d; ++i) out.push_back(static_cast<float>(x[i] * scale));
    }
    return out;
}

}  // namespace basalt
