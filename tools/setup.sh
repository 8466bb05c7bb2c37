#!/usr/bin/env bash
# Installs what the build needs (Debian 12 packages) when it is missing, then configures and
# builds Loom into ./build. Extra CMake arguments: LOOM_CMAKE_ARGS="-DLOOM_WERROR=ON ...".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_BUILD_DIR:-$root/build}"
# shellcheck source=tools/build-env.sh
. "$root/tools/build-env.sh"

need_packages "${loom_build_packages[@]}"

jobs="$(nproc)"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${LOOM_BUILD_TYPE:-Release}" ${LOOM_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
