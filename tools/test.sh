#!/usr/bin/env bash
# Sets up, builds and runs every test (unit, conformance, ABI, end-to-end; GPU tests skip
# without a device), then the hardening checks: every libFuzzer target for a short fixed budget
# (clang build in build-fuzz) and the unit, conformance and ABI tests under ASan + UBSan
# (tools/sanitize.sh, build-asan). LOOM_HARDENING=1 stops after the fuzzing, LOOM_HARDENING=0
# skips both. Exits non-zero when a test fails or when no test ran.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_BUILD_DIR:-$root/build}"
"$root/tools/setup.sh"
# The deploy tests check the Kubernetes manifests with kubernetes-validate (PyPI; it validates
# offline against the schemas it bundles). Install it when missing; if PyPI cannot be reached
# the test reports itself skipped, saying why.
if ! python3 -c "import kubernetes_validate" 2>/dev/null; then
  # A Debian-managed python3 refuses plain pip installs (PEP 668); then ask for it explicitly.
  python3 -m pip install --quiet kubernetes-validate 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages kubernetes-validate ||
    echo "test.sh: could not install kubernetes-validate from PyPI; deploy_manifests_validate will be skipped"
fi
# The client tests drive the server with the openai SDK; they report themselves skipped without it.
"$root/tools/clients/setup-clients.sh" ||
  echo "test.sh: could not install the openai SDK from PyPI; clients_openai_sdk will be skipped"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$(nproc)" --timeout 600 "$@"
hardening="${LOOM_HARDENING:-2}"
[ "$hardening" -ge 1 ] && "$root/tools/fuzz.sh" --smoke
[ "$hardening" -ge 2 ] && "$root/tools/sanitize.sh"
exit 0
