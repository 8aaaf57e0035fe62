// Replays fuzz inputs without libFuzzer: feeds every file of the folders (recursively, in name order) and files
// named on the command line to LLVMFuzzerTestOneInput. A crash or an abort fails the run, so CTest can replay the
// committed corpus and crashers in every build. Usage: replay PATH...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s PATH...  (files or folders of fuzz inputs)\n", argv[0]);
        return 2;
    }
    std::vector<fs::path> inputs;
    for (int k = 1; k < argc; ++k) {
        const fs::path p = argv[k];
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<fs::path> found;
            for (const auto& e : fs::recursive_directory_iterator(p)) {
                if (e.is_regular_file()) found.push_back(e.path());
            }
            std::sort(found.begin(), found.end());
            inputs.insert(inputs.end(), found.begin(), found.end());
        } else if (fs::is_regular_file(p, ec)) {
            inputs.push_back(p);
        } else {
            std::fprintf(stderr, "%s: no such file or folder\n", p.c_str());
            return 2;
        }
    }
    if (inputs.empty()) {
        std::fprintf(stderr, "no inputs found\n");
        return 2;
    }
    for (const auto& p : inputs) {
        std::ifstream is(p, std::ios::binary);
        if (!is) {
            std::fprintf(stderr, "%s: cannot read\n", p.c_str());
            return 1;
        }
        const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(is)), std::istreambuf_iterator<char>());
        std::fprintf(stderr, "replay %s (%zu bytes)\n", p.c_str(), bytes.size());
        // An exact-size heap copy, so a sanitizer build catches a read one byte past the end.
        std::vector<uint8_t> exact(bytes);
        LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
    }
    std::printf("replayed %zu inputs\n", inputs.size());
    return 0;
}
