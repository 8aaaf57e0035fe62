// Writes the models of unrunnable-models.hpp into a folder for the CLI tests (a CTest fixture):
//   basalt-test-make-unrunnable DIR  ->  DIR/complete.gguf, DIR/missing-tensor.gguf, DIR/zero-dim.gguf,
//   DIR/unknown-rope-scaling.gguf, DIR/soft-cap.gguf, DIR/rope-freqs.gguf, DIR/yarn.gguf, DIR/yarn-beta.gguf,
//   DIR/mistral3.gguf, DIR/invented-arch.gguf
#include <cstdio>
#include <filesystem>
#include <string>

#include "unrunnable-models.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const struct {
        const char* file;
        test::Unrunnable variant;
    } models[] = {{"complete.gguf", test::Unrunnable::kComplete},
                  {"missing-tensor.gguf", test::Unrunnable::kMissingTensor},
                  {"zero-dim.gguf", test::Unrunnable::kZeroDim},
                  {"unknown-rope-scaling.gguf", test::Unrunnable::kUnknownRopeScaling},
                  {"soft-cap.gguf", test::Unrunnable::kSoftCap},
                  {"rope-freqs.gguf", test::Unrunnable::kRopeFreqs},
                  {"yarn.gguf", test::Unrunnable::kYarn},
                  {"yarn-beta.gguf", test::Unrunnable::kYarnBeta},
                  {"mistral3.gguf", test::Unrunnable::kMistral3},
                  {"invented-arch.gguf", test::Unrunnable::kInventedArch}};
    for (const auto& m : models) {
        const std::string error = test::write_unrunnable_model((dir / m.file).string(), m.variant);
        if (!error.empty()) {
            std::fprintf(stderr, "%s: %s\n", m.file, error.c_str());
            return 1;
        }
    }
    return 0;
}
