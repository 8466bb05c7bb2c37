# Sourced by the build scripts (setup.sh, sanitize.sh, fuzz.sh): installs missing Debian packages
# and points ccache at paths relative to the checkout, so every clone and every build directory
# of the same configuration shares one cache.
# shellcheck shell=bash

# What every build of Loom needs (GCC and the libraries); the fuzz build adds clang.
loom_build_packages=(build-essential cmake g++ pkg-config ccache curl
                     libboost-dev libboost-filesystem-dev libtomlplusplus-dev libspdlog-dev
                     nlohmann-json3-dev libcli11-dev libgtest-dev libpcre2-dev libutf8proc-dev
                     libsimde-dev libhnswlib-dev)

# need_packages PKG...: apt-get installs the ones not installed (as root, or through sudo).
need_packages() {
  local missing=() p sudo=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "setup: installing ${missing[*]}"
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
# The sanitizer and fuzz builds carry line tables (-g1); without this ccache would also key them on
# the build directory's absolute path, and a fresh clone would rebuild them from nothing.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
