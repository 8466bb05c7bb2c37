#!/usr/bin/env bash
# Sets up, builds and runs every test (unit, conformance, ABI, end-to-end; GPU tests skip
# without a device). Exits non-zero when a test fails or when no test ran.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_BUILD_DIR:-$root/build}"
"$root/tools/setup.sh"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$(nproc)" --timeout 600 "$@"
