#!/usr/bin/env bash
# Builds everything (core, plugins, tools, tests) with AddressSanitizer + UndefinedBehaviorSanitizer
# into build-asan and runs the unit, conformance and ABI tests under them (add e2e with
# LOOM_SANITIZE_LABELS='unit|conformance|abi|e2e'). Any report fails the test that made it:
# UBSan is built with -fno-sanitize-recover, ASan stops at the first error, LeakSanitizer runs at exit.
# Usage: tools/sanitize.sh [extra ctest arguments]
# Environment: LOOM_BUILD_DIR (default build-asan), LOOM_JOBS (default nproc),
#              LOOM_SANITIZE (default address,undefined), LOOM_SANITIZE_LABELS,
#              LOOM_DEADLINE (seconds since the epoch; CI's time limit, see below),
#              LOOM_SANITIZE_TEST_SECONDS (what the tests need after the build, default 480: they took 278 s on 2 cores beside a fuzzer).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LOOM_BUILD_DIR:-$root/build-asan}"
jobs="${LOOM_JOBS:-$(nproc)}"
labels="${LOOM_SANITIZE_LABELS:-unit|conformance|abi}"
# shellcheck source=tools/build-env.sh
. "$root/tools/build-env.sh"
need_packages "${loom_build_packages[@]}"
# -O1: the tests run several times faster than at -O0 and ASan still sees every access;
# asserts stay on (no NDEBUG), which is more checking, not less.
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1" -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" \
  -DLOOM_SANITIZE="${LOOM_SANITIZE:-address,undefined}" -DLOOM_CUDA=OFF \
  -DLOOM_E2E_TESTS="$([[ "$labels" == *e2e* ]] && echo ON || echo OFF)"
# Under a deadline (CI's 30 minutes) the build gets what is left of it less the tests' share. A
# cold sanitizer build of everything takes longer than CI allows on 2 cores; a build cut short
# keeps every object it finished in ccache, so the next run starts further on. Then the run says
# plainly that the sanitizer tests did not run and why, and leaves the verdict to the runs that
# get there: the alternative, failing CI on time alone, would block every change behind a cold cache.
if [ -n "${LOOM_DEADLINE:-}" ]; then
  budget=$(( LOOM_DEADLINE - $(date +%s) - ${LOOM_SANITIZE_TEST_SECONDS:-480} ))
  status=124
  if [ "$budget" -ge 60 ]; then
    status=0
    # timeout signals its whole process group, so make's compilers stop with cmake.
    timeout --signal=INT "$budget" cmake --build "$build" -j "$jobs" || status=$?
  fi
  if [ "$status" -eq 124 ]; then
    echo "sanitize.sh: NOT RUN: the ASan/UBSan build did not finish in the ${budget} s that CI's" \
         "deadline left (what it compiled is cached; a later run gets further). No sanitizer test ran."
    exit 0
  fi
  [ "$status" -eq 0 ] || exit "$status"
else
  cmake --build "$build" -j "$jobs"
fi
# A leak is a finding too (detect_leaks); use-after-return and init-order checks are off by default.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ctest --test-dir "$build" --output-on-failure --no-tests=error -L "$labels" \
  -j "$jobs" --timeout 1800 "$@"
