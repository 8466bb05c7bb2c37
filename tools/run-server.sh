#!/usr/bin/env bash
# Sets up, builds and starts loom-server on the bundled demo model (configs/default.toml,
# http://127.0.0.1:8080). Extra arguments go to loom-server, e.g. --port 9000.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_BUILD_DIR:-$root/build}"
"$root/tools/setup.sh"
exec "$build/bin/loom-server" --config "$root/configs/default.toml" "$@"
