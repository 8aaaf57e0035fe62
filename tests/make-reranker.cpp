// Writes the small reranker of reranker-model.hpp with tiny-bert's vocabulary, for the /v1/rerank server test.
// basalt-test-make-reranker OUT.gguf VOCAB_MODEL.gguf
#include <cstdio>

#include "reranker-model.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: basalt-test-make-reranker OUT.gguf VOCAB_MODEL.gguf\n");
        return 2;
    }
    test::RerankerHead head;
    const std::string why = test::write_reranker(argv[1], argv[2], head);
    if (!why.empty()) {
        std::fprintf(stderr, "basalt-test-make-reranker: %s\n", why.c_str());
        return 1;
    }
    return 0;
}
