// The text of one request's output as it streams: token pieces are appended, and text is released only when it
// is UTF-8 complete and cannot be the start of a stop string; a stop string ends the text before its match.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace basalt::engine {

class TextStream {
  public:
    explicit TextStream(std::vector<std::string> stops = {});

    // Appends a token's piece; returns the text that became releasable. Once a stop string matched, stopped()
    // is true, the text ends before the match and further pushes release nothing.
    std::string push(std::string_view piece);
    // Releases what is left (the held-back tail, even an incomplete UTF-8 character) at the end of generation.
    std::string flush();
    bool stopped() const { return stopped_; }

  private:
    std::string release_to(size_t end);
    std::vector<std::string> stops_;
    size_t longest_stop_ = 0;
    std::string text_;     // everything generated (cut at a stop match)
    size_t released_ = 0;  // bytes of text_ handed out
    bool stopped_ = false;
};

// Length of the longest prefix of text that ends on a whole UTF-8 character (an incomplete trailing sequence
// is left out; invalid bytes count as whole characters so they never block the stream).
size_t utf8_complete_prefix(std::string_view text);

}  // namespace basalt::engine
