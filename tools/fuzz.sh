#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, into build-fuzz) and runs each for a fixed
# time over its seed corpus (tests/fuzz/corpus/<name>), one after another. New inputs go to
# build-fuzz/corpus/<name>; a crash leaves its input as build-fuzz/crash-* and stops the script.
# Usage: tools/fuzz.sh [seconds per target, default 600] [target names, default all]
#        tools/fuzz.sh --smoke   (CI: every target over its seeds plus a fixed, seeded number of
#                                 mutations, as the ctest tests labelled fuzz)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_FUZZ_BUILD_DIR:-$root/build-fuzz}"
# shellcheck source=tools/build-env.sh
. "$root/tools/build-env.sh"
# libFuzzer's runtime is in Debian 12's libclang-rt-14-dev (clang 14).
need_packages "${loom_build_packages[@]}" clang libclang-rt-14-dev
smoke=0
if [ "${1:-}" = "--smoke" ]; then smoke=1; shift; fi
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(openai_request grammar tokenizer model_files jinja http)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DLOOM_FUZZ=ON -DLOOM_CUDA=OFF >/dev/null
cmake --build "$build" -j "${LOOM_JOBS:-$(nproc)}" --target loom_fuzz_targets
if [ "$smoke" = 1 ]; then
  exec ctest --test-dir "$build/tests/fuzz" --output-on-failure --no-tests=error -L fuzz -j "$(nproc)"
fi
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  echo "fuzz.sh: fuzz_$t for $seconds s"
  (cd "$build" && "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=30 -max_len=8192 \
     -print_final_stats=1 "$build/corpus/$t" "$root/tests/fuzz/corpus/$t")
done
