#!/bin/sh
# The installed SDK, end to end: `cmake --install` the build into a fresh prefix, move the prefix (it must be
# relocatable), then with nothing but that prefix
#  1. check the layout (headers, libbasalt with its soname, CLI, plugins, CMake package, basalt.pc, Python),
#  2. run the installed CLI: it finds the installed plugins beside the installed libbasalt,
#  3. configure and build examples/third-party-sampler with find_package(Basalt) + basalt_add_plugin only,
#  4. run the installed `basalt run --plugin <that .so> --samplers "no_repeat...;greedy"` on a test model,
#  5. build examples/c-generate from pkg-config alone and check it prints what `basalt run` prints,
#  6. use the installed Python package (PYTHONPATH=<prefix>/lib/python3/dist-packages) with the new plugin.
# Usage: sdk-install.sh BUILD_DIR SOURCE_DIR WORK_DIR MODEL PYTHON
# BASALT_TEST_PRELOAD (sanitizer builds): preloaded for the uninstrumented programs that load libbasalt.
set -eu
BUILD=$1 SRC=$2 WORK=$3 MODEL=$4 PYTHON=$5
fail() { echo "FAIL: $*" >&2; exit 1; }
# runs an uninstrumented program that loads libbasalt (c-generate built by plain cc, python3)
host() { LD_PRELOAD=${BASALT_TEST_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0 "$@"; }
[ -f "$MODEL" ] || fail "test model '$MODEL' not found (../shared/testdata)"

rm -rf "$WORK"
mkdir -p "$WORK"
cmake --install "$BUILD" --prefix "$WORK/staging" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "cmake --install"; }
mv "$WORK/staging" "$WORK/prefix"  # every path inside must be relative to the prefix
P=$WORK/prefix
unset BASALT_PLUGIN_PATH BASALT_LIBRARY LD_LIBRARY_PATH PYTHONPATH || true

# 1. layout
for f in include/basalt/basalt.h include/basalt/plugin_sampler.h include/basalt/sdk/plugin.hpp \
         include/basalt/sdk/candidates.hpp include/basalt/blocks/dtype.hpp lib/libbasalt.so lib/libbasalt_blocks.a \
         bin/basalt lib/basalt/plugins/basalt-sampler-greedy.so lib/basalt/plugins/basalt-backend-cpu.so \
         lib/basalt/plugins/basalt-kv-paged.so lib/cmake/Basalt/BasaltConfig.cmake \
         lib/cmake/Basalt/BasaltConfigVersion.cmake lib/cmake/Basalt/BasaltTargets.cmake \
         lib/cmake/Basalt/BasaltPlugin.cmake lib/pkgconfig/basalt.pc lib/python3/dist-packages/basalt/__init__.py \
         lib/python3/dist-packages/basalt/_capi.py; do
    [ -e "$P/$f" ] || fail "not installed: $f"
done
[ "$(readlink "$P/lib/libbasalt.so")" = libbasalt.so.1 ] || fail "libbasalt.so does not link to the soname"
soname=$(objdump -p "$P/lib/libbasalt.so.1" | awk '/SONAME/ {print $2}')
[ "$soname" = libbasalt.so.1 ] || fail "soname is '$soname'"
if find "$P" -name 'mock-*' -o -name 'test_*.py' | grep -q .; then fail "test files were installed"; fi

# 2. the installed CLI finds the installed plugins (relocated prefix)
"$P/bin/basalt" version >"$WORK/version.txt" 2>&1 || { cat "$WORK/version.txt"; fail "basalt version"; }
grep -q "$P/lib/basalt/plugins" "$WORK/version.txt" || { cat "$WORK/version.txt"; fail "plugin folder is not under the prefix"; }
"$P/bin/basalt" plugins >"$WORK/plugins.txt" 2>&1 || fail "basalt plugins"
grep -Eq "sampler +top_k .*$P/lib/basalt/plugins/basalt-sampler-top-k\.so" "$WORK/plugins.txt" ||
    { cat "$WORK/plugins.txt"; fail "installed plugins not listed"; }
# ... and the installed default model (share/basalt/models), with no -m
[ -f "$P/share/basalt/models/basalt-fortunes-target.gguf" ] || fail "the default model is not installed"
BASALT_MODELS_DIR= "$P/bin/basalt" run -p "Life is" -n 4 >"$WORK/default-model.txt" 2>&1 ||
    { cat "$WORK/default-model.txt"; fail "basalt run with the installed default model"; }

# 3. the out-of-tree plugin, against the prefix only
cmake -S "$SRC/examples/third-party-sampler" -B "$WORK/tps" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$P" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >"$WORK/tps-configure.log" 2>&1 ||
    { cat "$WORK/tps-configure.log"; fail "configuring the third-party sampler"; }
cmake --build "$WORK/tps" >"$WORK/tps-build.log" 2>&1 || { cat "$WORK/tps-build.log"; fail "building the third-party sampler"; }
SO=$WORK/tps/basalt-sampler-no-repeat.so
[ -f "$SO" ] || fail "no $SO"
if nm -D --defined-only "$SO" | awk '{print $3}' | grep -v '^basalt_plugin_init$' | grep -q .; then
    nm -D --defined-only "$SO"; fail "the plugin exports more than basalt_plugin_init"
fi
if objdump -p "$SO" | grep NEEDED | grep -q libbasalt; then fail "the plugin links libbasalt"; fi

# 4. the installed CLI with the new sampler
run() { "$P/bin/basalt" run --plugin "$SO" -m "$MODEL" -p "Once upon a time" -n 24 --samplers "$1" 2>"$WORK/run.err"; }
greedy=$(run "greedy") || { cat "$WORK/run.err"; fail "basalt run greedy"; }
norep=$(run "no_repeat:n=64;greedy") || { cat "$WORK/run.err"; fail "basalt run with no_repeat"; }
grep -q "generated 24 tokens" "$WORK/run.err" || { cat "$WORK/run.err"; fail "no_repeat run did not generate 24 tokens"; }
echo "greedy:    $greedy"
echo "no_repeat: $norep"
[ -n "$norep" ] || fail "no text"
[ "$greedy" != "$norep" ] || fail "no_repeat changed nothing"
again=$(run "no_repeat:n=64;greedy") && [ "$again" = "$norep" ] || fail "no_repeat is not deterministic"
"$P/bin/basalt" run --plugin "$SO" -m "$MODEL" -p "hi" -n 2 --samplers "no_repeat:n=x;greedy" >"$WORK/bad.txt" 2>&1 &&
    fail "a bad parameter was accepted"
grep -q "sampler 'no_repeat': parameter 'n' = 'x' is not an integer" "$WORK/bad.txt" || { cat "$WORK/bad.txt"; fail "bad-parameter message"; }

# 5. c-generate from pkg-config alone
PKG_CONFIG_PATH=$P/lib/pkgconfig
export PKG_CONFIG_PATH
[ "$(pkg-config --modversion basalt)" = "$("$P/bin/basalt" version | sed -n 's/^basalt \([0-9.]*\).*/\1/p')" ] ||
    fail "pkg-config version differs from the library's"
# shellcheck disable=SC2046
cc -std=c99 -pedantic-errors -Wall -Wextra -Werror -o "$WORK/c-generate" "$SRC/examples/c-generate/main.c" \
    $(pkg-config --cflags --libs basalt) -Wl,-rpath,"$(pkg-config --variable=libdir basalt)" ||
    fail "compiling c-generate with pkg-config"
chain="top_k:20;temp:0.8;dist:seed=9"
a=$(host "$WORK/c-generate" "$MODEL" "Once upon a time" 12 "$chain") || fail "c-generate"
b=$("$P/bin/basalt" run -m "$MODEL" -p "Once upon a time" -n 12 --samplers "$chain" 2>/dev/null) || fail "basalt run"
[ -n "$a" ] && [ "$a" = "$b" ] || fail "c-generate printed '$a', basalt run '$b'"

# 6. the installed Python package, its libbasalt and the new plugin
PYTHONPATH=$P/lib/python3/dist-packages PYTHONDONTWRITEBYTECODE=1 host "$PYTHON" - "$P" "$SO" "$MODEL" <<'EOF' || fail "installed Python package"
import os, sys
import basalt
prefix, so, model = sys.argv[1:]
lib = os.path.realpath(basalt.library_path())
assert lib.startswith(os.path.realpath(prefix) + "/lib/"), lib
rt = basalt.Runtime(plugins=[so])
assert "no_repeat" in rt.samplers(), rt.samplers()
tokens = basalt.generate_tokens(model, "Once upon a time", 24, "no_repeat:n=64;greedy", rt)
assert len(tokens) == 24 and len(set(tokens)) == 24, tokens
greedy = basalt.generate_tokens(model, "Once upon a time", 24, "greedy", rt)
assert len(set(greedy)) < 24, greedy  # plain greedy repeats itself on this model, so the ban was needed
print("python: no_repeat tokens", tokens)
EOF
echo "sdk install OK ($P)"
