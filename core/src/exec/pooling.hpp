// Pooling and normalisation of embeddings (docs/embeddings.md): a model's per-token hidden states turned into one
// vector per input (mean, first token, last token) or kept per token, then L2-normalised (the default, as Ollama
// and llama-server do) or not, and optionally truncated to their first `dimensions` values (Matryoshka models) before
// the normalisation. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace basalt {

struct ModelHparams;

// The values of llama.cpp's <arch>.pooling_type.
enum class Pooling : int32_t { NONE = 0, MEAN = 1, CLS = 2, LAST = 3, RANK = 4 };

// "none", "mean", "cls", "last", "rank" (static strings).
const char* pooling_name(Pooling p);
// The pooling of a name above; nullopt for any other.
std::optional<Pooling> pooling_from_name(std::string_view name);
// The model's pooling: its file's pooling_type, else mean for an encoder-only model and last for a decoder.
Pooling model_pooling(const ModelHparams& hp);
// Why the model cannot embed with pooling p ("" when it can): a decoder-only model (its hidden states are not
// wired out yet), rank pooling without a rank head.
std::string embed_refusal(const ModelHparams& hp, Pooling p);

// The vectors of one input from its n rows of hidden states (n x n_embd, in order): one vector (mean, cls = first
// row, last = last row) or all n rows (none). RANK is the head's scores, not pooled here (refused).
std::vector<float> pool(const float* rows, size_t n, size_t n_embd, Pooling p);
// Truncates each vector of `v` (vectors of n_embd values) to its first `dimensions` (0: all; more than n_embd is
// refused by the caller) and, with l2, scales each to unit Euclidean length (a zero vector stays zero).
std::vector<float> finish_vectors(const std::vector<float>& v, size_t n_embd, size_t dimensions, bool l2);

}  // namespace basalt
