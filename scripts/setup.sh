#!/usr/bin/env bash
# Installs Basalt's dependencies from Debian 12's packages (idempotent: apt runs only when something is
# missing), then configures and builds. Usage: scripts/setup.sh [--sanitize] [--deps-only]
#   --sanitize   build into build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer
#   --deps-only  install packages, do not build
# Environment: BASALT_BUILD_DIR overrides the build folder; CI=true turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=OFF
build=1
for arg in "$@"; do
    case "$arg" in
        --sanitize) sanitize=ON ;;
        --deps-only) build=0 ;;
        *) echo "setup.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

packages=(
    g++ cmake ninja-build ccache pkg-config
    libboost-dev libboost-program-options-dev libboost-filesystem-dev
    libspdlog-dev libfmt-dev catch2 libpcre2-dev
    libvulkan-dev mesa-vulkan-drivers vulkan-tools vulkan-validationlayers
    glslang-tools glslang-dev spirv-tools
    clang-format python3 python3-numpy nlohmann-json3-dev
    nginx
)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
# Node.js and npm (the server tests' official OpenAI client): Debian's packages unless a node and npm are already on
# PATH (NodeSource's nodejs bundles npm and conflicts with Debian's npm package).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$build" -eq 1 ] || exit 0

if [ "$sanitize" = ON ]; then
    build_dir="${BASALT_BUILD_DIR:-build-asan}"
    build_type=RelWithDebInfo
else
    build_dir="${BASALT_BUILD_DIR:-build}"
    build_type=Release
fi
werror=OFF
if [ "${CI:-}" = true ]; then werror=ON; fi

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DBASALT_WERROR="$werror" \
    -DBASALT_SANITIZE="$sanitize" >/dev/null
# The official OpenAI client for the server tests (tests/server/openai-client.py), pinned, in a test-only folder.
openai_npm=openai@4.95.0
if [ ! -f "$build_dir/test-node/node_modules/openai/package.json" ]; then
    npm install --prefix "$build_dir/test-node" --no-audit --no-fund --loglevel=error "$openai_npm" >/dev/null ||
        echo "setup.sh: warning: could not install $openai_npm (the server's OpenAI-client test will fail)" >&2
fi
cmake --build "$build_dir" -j2
