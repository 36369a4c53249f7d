#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 60), one after the other.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#   scripts/fuzz.sh --build-only [SECONDS]   # the targets' build for a run of SECONDS, no run
#
# Installs cargo-fuzz when it is missing. Runs on the stable toolchain: cargo-fuzz passes
# nightly-only flags (-Zsanitizer=address), which stable accepts with RUSTC_BOOTSTRAP=1.
# Each target starts from its curated corpus (fuzz/corpus/TARGET/, in the repository) and the
# test vectors under tests/testdata/ (fuzz/seed.py), and grows its corpus in
# fuzz/target/corpus/TARGET/ (not in the repository). A crash stops the script with libFuzzer's
# report; the input is saved in fuzz/artifacts/TARGET/ (replay it with
# `RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz TARGET FILE`).
#
# libFuzzer's limits make an allocation driven by a length the input claims fail the run:
# paracrypt's documented limits (a 1 MiB recipient block or age header, the fuzz targets'
# Argon2id and scrypt costs) stay far below them.
set -euo pipefail
cd "$(dirname "$0")/.."

build_only=false
if [ "${1:-}" = "--build-only" ]; then
  build_only=true
  shift
fi
seconds="${1:-60}"
shift || true
case "$seconds" in
  '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

export RUSTC_BOOTSTRAP=1
CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz $CARGO_FUZZ_VERSION"
  # A debug build of the tool: it only drives cargo, and compiles in half the time.
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet --debug
fi

fuzz=(--fuzz-dir fuzz)
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list "${fuzz[@]}")
fi

# One build for every target: debug assertions and overflow checks on, AddressSanitizer. A smoke
# run (a minute or less per target, as CI's) is mostly the build: cargo-fuzz compiles each crate
# as one codegen unit (the fastest fuzzing, the slowest build, one core per crate), so a smoke run
# asks for 16 (cargo-fuzz's own advice for faster builds). Long runs keep one.
build=(-a --release)
if [ "$seconds" -le 60 ]; then
  build+=(--codegen-units 16)
fi
cargo fuzz build "${fuzz[@]}" "${build[@]}"
if $build_only; then
  exit 0
fi

seeds=fuzz/target/seeds

python3 fuzz/seed.py "$seeds"

mkdir -p fuzz/target/logs
for target in "${targets[@]}"; do
  corpus="fuzz/target/corpus/$target"
  log="fuzz/target/logs/$target.log"
  mkdir -p "$corpus" "$seeds/$target"
  echo "== $target: ${seconds}s (log: $log)"
  if ! cargo fuzz run "${fuzz[@]}" "${build[@]}" "$target" "$corpus" "fuzz/corpus/$target" \
    "$seeds/$target" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 >"$log" 2>&1; then
    tail -n 80 "$log" >&2
    echo "fuzz target $target failed: the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  # The last status line (coverage, features, corpus) and the run's figures.
  grep -E '^#[0-9]+[[:space:]]+DONE' "$log" || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
done
