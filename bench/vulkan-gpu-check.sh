#!/usr/bin/env bash
# vulkan-gpu-check.sh: builds Basalt with the Vulkan backend, then on the Vulkan device the loader finds runs the
# device listing, the SmolLM2-135M-shaped Q8_0 benchmark (pp128 / tg64, then per-op profiles of decode and prefill), the Vulkan golden
# tests and the Vulkan op harness. Meant for an NVIDIA machine (the device tool's H200), runs anywhere: with
# VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json it checks lavapipe.
#
#   bench/vulkan-gpu-check.sh [--build-dir DIR] [--no-build] [--jobs N] [--out DIR] [-p N] [-n N]
#
# Loader and driver (see the device tool's README): where `ldconfig -p` shows no libvulkan.so.1 and the checkout
# carries .gl/*.deb (libvulkan1 downloaded with apt-get), they are unpacked into / first; where VK_DRIVER_FILES is
# unset and NVIDIA's ICD file is mounted at /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json, it is used.
# Building needs CMake, ninja, a C++20 compiler, glslangValidator, the Vulkan headers, spdlog, Catch2 and Boost
# (scripts/setup.sh); a machine without them can run a build made elsewhere with --no-build.
# Logs land in --out (default: $OUT when set, else <build-dir>/gpu-check); the exit status is non-zero when a step
# failed, and the last lines summarise every step.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-vk-gpu"
do_build=1
jobs=$(nproc 2>/dev/null || echo 2)
out=""
pp=128
tg=64
while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) build=$(realpath -m "$2"); shift 2 ;;
        --no-build) do_build=0; shift ;;
        --jobs) jobs="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        -p) pp="$2"; shift 2 ;;
        -n) tg="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "vulkan-gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ -n "$out" ]] || out="${OUT:-$build/gpu-check}"
mkdir -p "$out"

summary=()
failed=0
step() {  # step NAME COMMAND...: runs it with its output in $out/NAME.log (and on the terminal), records the result
    local name=$1
    shift
    echo "== $name: $*"
    local t0=$SECONDS
    "$@" 2>&1 | tee "$out/$name.log"
    local rc=${PIPESTATUS[0]}
    summary+=("$(printf '%-10s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$out/$name.log")")
    [[ $rc -eq 0 ]] || failed=1
    return "$rc"
}

# The loader and the driver.
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1'; then
    if compgen -G "$root/.gl/*.deb" >/dev/null; then
        echo "== no libvulkan.so.1: unpacking $root/.gl/*.deb"
        for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
        ldconfig
    else
        echo "== warning: no libvulkan.so.1 and no .gl/*.deb to unpack: the backend will list no device"
    fi
fi
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [[ -z "${VK_DRIVER_FILES:-}" && -f "$nvidia_icd" ]]; then
    export VK_DRIVER_FILES="$nvidia_icd"
fi
echo "== VK_DRIVER_FILES=${VK_DRIVER_FILES:-<loader default>}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv

if [[ $do_build -eq 1 ]]; then
    missing=()
    for tool in cmake ninja glslangValidator c++; do command -v "$tool" >/dev/null || missing+=("$tool"); done
    if [[ ${#missing[@]} -gt 0 ]]; then
        echo "vulkan-gpu-check: cannot build, missing: ${missing[*]} (install them, or build elsewhere and pass --no-build)" >&2
        exit 2
    fi
    step configure cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release || exit 1
    step build cmake --build "$build" -j "$jobs" --target basalt-cli make-model basalt-tests basalt-core-tests \
        basalt-plugin-backend-vulkan || exit 1
fi
bin="$build/bin"
for exe in basalt make-model basalt-tests basalt-core-tests; do
    [[ -x "$bin/$exe" ]] || { echo "vulkan-gpu-check: $bin/$exe is missing (build first)" >&2; exit 2; }
done

# Device listing: the plugin's description names every usable device (or why there is none).
step devices "$bin/basalt" plugins

# The benchmark model (weights are random; the shape and the type set the speed).
model="$out/smollm2-135m-q8_0.gguf"
[[ -f "$model" ]] || step model "$bin/make-model" --shape smollm2-135m --type q8_0 -o "$model"
# Timings with command-buffer replay (profiling records every graph afresh, so it runs separately).
BASALT_VK_STATS=1 step bench "$bin/basalt" bench -m "$model" --backend vulkan -p "$pp" -n "$tg" -r 3
# Per-op GPU time: decode steps, then one prefill.
BASALT_VK_PROFILE=1 step profile-tg "$bin/basalt" bench -m "$model" --backend vulkan -p 0 -n 8 -r 1
BASALT_VK_PROFILE=1 step profile-pp "$bin/basalt" bench -m "$model" --backend vulkan -p "$pp" -n 0 -r 1

# Golden logits and the op harness on this device (the CTest entries pin lavapipe; these use the driver above).
step golden "$bin/basalt-tests" "[vulkan]"
step ops "$bin/basalt-core-tests" "[vulkan]"

echo
echo "== summary ($(date -u +%FT%TZ), VK_DRIVER_FILES=${VK_DRIVER_FILES:-<default>})"
grep -E '^ *(pp|tg)[0-9]+ ' "$out/bench.log" || true
grep -E '^\[vulkan\] ' "$out/bench.log" || true
echo "-- per-op, decode steps:"
grep -E '^\[vulkan profile\]' "$out/profile-tg.log" | head -12 || true
echo "-- per-op, prefill:"
grep -E '^\[vulkan profile\]' "$out/profile-pp.log" | head -12 || true
for line in "${summary[@]}"; do echo "$line"; done
exit "$failed"
