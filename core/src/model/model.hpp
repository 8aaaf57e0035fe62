// The object behind the opaque basalt_model handle: the mapped file, its hyper-parameters, and strings
// handed out through the C API.
#pragma once

#include <basalt/basalt.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "model/gguf.hpp"
#include "model/model-hparams.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocab-view.hpp"

struct basalt_model {
    basalt::gguf::MappedGguf gguf;
    basalt::ModelHparams hparams;
    // Renderings returned by basalt_model_meta, kept alive until the model is freed.
    mutable std::mutex meta_mutex;
    mutable std::map<std::string, std::string> meta_text;
    // String array elements returned by basalt_model_meta_array_string (NUL-terminated copies), by (key, index).
    mutable std::map<std::pair<std::string, size_t>, std::string> meta_elements;
    // Built on first use (so `inspect` works on files whose vocabulary is not supported).
    mutable std::mutex tokenizer_mutex;
    mutable std::unique_ptr<basalt::Tokenizer> tokenizer;

    // Returns the tokenizer, building it on first use; throws Error naming the vocabulary problem.
    const basalt::Tokenizer& tok() const {
        std::lock_guard lock(tokenizer_mutex);
        if (!tokenizer) tokenizer = basalt::Tokenizer::create(gguf.file);
        return *tokenizer;
    }
    // The vocabulary as samplers see it (basalt_vocab_view, for samplers that take it), built on first use and
    // kept with the model; throws as tok(). Thread-safe.
    const basalt_vocab_view* sampler_vocab() const {
        const basalt::Tokenizer& t = tok();
        std::lock_guard lock(tokenizer_mutex);
        if (!vocab_view) vocab_view = std::make_unique<basalt::VocabView>(t);
        return vocab_view->view();
    }
    mutable std::unique_ptr<basalt::VocabView> vocab_view;  // guarded by tokenizer_mutex
};
