#include "engine/text-stream.hpp"

#include <algorithm>

namespace basalt::engine {

size_t utf8_complete_prefix(std::string_view text) {
    const size_t n = text.size();
    // Look back at most 3 bytes for the lead byte of a trailing sequence.
    for (size_t back = 1; back <= std::min<size_t>(n, 4); ++back) {
        const auto c = static_cast<unsigned char>(text[n - back]);
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for its lead
        size_t len = 1;
        if ((c & 0xE0) == 0xC0)
            len = 2;
        else if ((c & 0xF0) == 0xE0)
            len = 3;
        else if ((c & 0xF8) == 0xF0)
            len = 4;
        return len > back ? n - back : n;  // the sequence starting there is incomplete: stop before it
    }
    return n;  // only continuation bytes (invalid): let them through
}

TextStream::TextStream(std::vector<std::string> stops) : stops_(std::move(stops)) {
    stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
    for (const auto& s : stops_) longest_stop_ = std::max(longest_stop_, s.size());
}

std::string TextStream::release_to(size_t end) {
    if (end <= released_) return {};
    std::string out = text_.substr(released_, end - released_);
    released_ = end;
    return out;
}

std::string TextStream::push(std::string_view piece) {
    if (stopped_) return {};
    const size_t old = text_.size();
    text_.append(piece);
    // A match can start at most longest_stop_-1 bytes before the new piece.
    const size_t from = old >= longest_stop_ ? old - longest_stop_ + 1 : 0;
    size_t cut = std::string::npos;
    for (const auto& s : stops_) {
        const size_t at = text_.find(s, std::min(from, text_.size()));
        if (at != std::string::npos) cut = std::min(cut, at);
    }
    if (cut != std::string::npos) {
        text_.resize(cut);
        stopped_ = true;
        return release_to(text_.size());
    }
    // Hold back the longest suffix that is a proper prefix of a stop string, then whole characters only.
    size_t hold = 0;
    for (const auto& s : stops_) {
        for (size_t k = std::min(s.size() - 1, text_.size()); k > hold; --k) {
            if (std::string_view(text_).substr(text_.size() - k) == std::string_view(s).substr(0, k)) {
                hold = k;
                break;
            }
        }
    }
    const size_t end = utf8_complete_prefix(std::string_view(text_).substr(0, text_.size() - hold));
    return release_to(std::max(end, released_));
}

std::string TextStream::flush() {
    return release_to(text_.size());
}

}  // namespace basalt::engine
