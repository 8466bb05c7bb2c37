#!/usr/bin/env bash
# Installs what the build needs (Debian 12 packages) when it is missing, then configures and
# builds Loom into ./build. Extra CMake arguments: LOOM_CMAKE_ARGS="-DLOOM_WERROR=ON ...".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_BUILD_DIR:-$root/build}"

packages=(build-essential cmake g++ pkg-config ccache curl
          libboost-dev libboost-filesystem-dev libtomlplusplus-dev libspdlog-dev
          nlohmann-json3-dev libcli11-dev libgtest-dev libpcre2-dev libutf8proc-dev libsimde-dev
          libhnswlib-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ccache keys on relative paths under the checkout, so clones in other places share its cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
jobs="$(nproc)"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${LOOM_BUILD_TYPE:-Release}" ${LOOM_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
