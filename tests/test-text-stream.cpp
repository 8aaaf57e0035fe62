// The engine's output text: UTF-8 completion across token pieces, and stop strings held back and cut.
#include <catch2/catch.hpp>

#include "engine/text-stream.hpp"

using basalt::engine::TextStream;
using basalt::engine::utf8_complete_prefix;

TEST_CASE("text is released only on whole UTF-8 characters", "[text-stream]") {
    CHECK(utf8_complete_prefix("abc") == 3);
    CHECK(utf8_complete_prefix("a\xC3") == 1);              // first byte of a 2-byte character
    CHECK(utf8_complete_prefix("a\xC3\xA9") == 3);          // é complete
    CHECK(utf8_complete_prefix("\xE2\x82") == 0);           // 2 of the 3 bytes of €
    CHECK(utf8_complete_prefix("x\xF0\x9F\x98\x80") == 5);  // a whole 4-byte emoji
    CHECK(utf8_complete_prefix("\x80\x80") == 2);           // stray continuation bytes do not block
    TextStream t;
    CHECK(t.push("caf") == "caf");
    CHECK(t.push("\xC3") == "");
    CHECK(t.push("\xA9!") == "\xC3\xA9!");
    CHECK(t.push("\xE2\x82") == "");
    CHECK(t.flush() == "\xE2\x82");  // the end releases even an incomplete tail
}

TEST_CASE("a stop string is held back while it may match and cut where it does", "[text-stream]") {
    TextStream t({"END", "\n\n"});
    CHECK(t.push("one E") == "one ");  // "E" may start "END"
    CHECK(t.push("N") == "");          // "EN" still may
    CHECK(t.push("d") == "ENd");       // it did not: released
    CHECK(t.push(" two\n") == " two");
    CHECK(t.push("\nthree") == "");  // "\n\n" matched: the text ends before it
    CHECK(t.stopped());
    CHECK(t.push("more") == "");
    CHECK(t.flush() == "");

    TextStream u({"stop"});
    CHECK(u.push("xxsto") == "xx");
    CHECK(u.push("pyy") == "");  // the match spans two pieces
    CHECK(u.stopped());
    TextStream v({"ab"});
    CHECK(v.push("ab") == "");  // a match at the very start emits nothing
    CHECK(v.stopped());
    TextStream w({"zz"});
    CHECK(w.push("az") == "a");
    CHECK(w.flush() == "z");  // held back, released at the end
}
