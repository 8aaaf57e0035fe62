#!/usr/bin/env bash
# Installs Basalt's dependencies from Debian 12's packages (idempotent: apt runs only when something is
# missing), then configures and builds. Usage: scripts/setup.sh [--sanitize] [--deps-only]
#   --sanitize   build into build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer
#   --deps-only  install packages, do not build
# Environment: BASALT_BUILD_DIR overrides the build folder; CI=true turns warnings into errors;
#   BASALT_SETUP_POLICY_RC overrides where the nginx service policy goes (/usr/sbin/policy-rc.d; for its test).
#
# nginx is a test dependency only: the tests and scripts/serve-cluster.sh run the binary as this user, on loopback,
# with a config of their own. Debian's package would start and enable the system service (port 80) from its
# postinst; so that installing Basalt's dependencies gives no machine a web server, a policy-rc.d that denies
# nginx's service actions (what invoke-rc.d and deb-systemd-invoke consult) is in place during the install, and
# the service the package enabled is disabled (and stopped, had something started it) afterwards. An nginx that was
# installed before, and an existing policy-rc.d, are left as they are.
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
new_nginx=0
for p in "${missing[@]}"; do
    if [ "$p" = nginx ]; then new_nginx=1; fi
done
policy_rc="${BASALT_SETUP_POLICY_RC:-/usr/sbin/policy-rc.d}"
placed_policy=0
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
    if [ "$new_nginx" -eq 1 ] && [ ! -e "$policy_rc" ]; then
        # Exit status 101: "action forbidden by policy" (Debian's invoke-rc.d interface); other services are allowed.
        # shellcheck disable=SC2016  # "$1" is the policy script's own argument
        printf '%s\n' '#!/bin/sh' '# Written by Basalt scripts/setup.sh for its apt install; removed after it.' \
            'case "$1" in nginx | nginx.service) exit 101 ;; esac' 'exit 0' |
            "${sudo_cmd[@]}" tee "$policy_rc" >/dev/null
        "${sudo_cmd[@]}" chmod 755 "$policy_rc"
        placed_policy=1
        trap '"${sudo_cmd[@]}" rm -f "$policy_rc"' EXIT
    fi
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
    if [ "$placed_policy" -eq 1 ]; then
        "${sudo_cmd[@]}" rm -f "$policy_rc"
        trap - EXIT
    fi
    if [ "$new_nginx" -eq 1 ]; then
        if command -v systemctl >/dev/null 2>&1; then
            "${sudo_cmd[@]}" systemctl disable --quiet nginx.service ||
                echo "setup.sh: warning: could not disable the nginx service (tests need only the binary)" >&2
            if [ -d /run/systemd/system ]; then "${sudo_cmd[@]}" systemctl stop nginx.service || true; fi
        elif command -v update-rc.d >/dev/null 2>&1; then
            "${sudo_cmd[@]}" update-rc.d nginx disable >/dev/null 2>&1 ||
                echo "setup.sh: warning: could not disable the nginx service (tests need only the binary)" >&2
        fi
    fi
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
