#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need when it is missing
# (a C compiler to link; libcrypto's headers and pkg-config for the OpenSSL provider; openssl,
# age and ssh-keygen for interop tests; Open MPI and libclang for the MPI crate), then runs
# every test on three builds: every provider, OpenSSL without aws-lc, and pure Rust.
#
# typage (npm age-encryption) is installed with npm into target/typage, pinned by its lock file.
#
# Every probe asks for exactly what the build or the tests use, never for a look-alike: a
# fresh Debian image already holds libclang-cpp (a different library), but not libclang, which
# bindgen loads for mpi-sys. On Debian the package database is the truth (`dpkg -s`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian package → why the suite needs it. Everything else the tests run is in every Debian
# system (coreutils' timeout; util-linux's setsid, prlimit, script, unshare, flock and setpriv; a POSIX sh); the Rust toolchain
# is the README's own prerequisite.
declare -A why=(
  [gcc]="rustc links through cc, and mpi-sys compiles C"
  [g++]="the fuzz smoke run builds libFuzzer (libfuzzer-sys compiles C++)"
  [libc6-dev]="the C library's headers and start files, for linking"
  [libssl-dev]="the OpenSSL provider (openssl-sys) links libcrypto 3 and reads its headers"
  [pkg-config]="openssl-sys finds libcrypto with pkg-config"
  [openssl]="interop tests run the openssl binary"
  [age]="age interop tests run the age and age-keygen binaries"
  [openssh-client]="recipient tests make SSH keys with ssh-keygen; signature tests run ssh-keygen -Y"
  [minisign]="signature interop tests run minisign both ways"
  [openmpi-bin]="MPI tests run mpirun"
  [libopenmpi-dev]="mpi-sys compiles against mpi.h (mpicc)"
  [libclang-dev]="bindgen (mpi-sys) loads libclang.so and clang's headers"
  [iproute2]="the emulated-cluster tests make network namespaces and veths with ip and tc"
  [python3-venv]="the S3 and KMS servers, the reference reader and the Python package's tests run in virtual environments"
)
need=()
if command -v dpkg-query >/dev/null; then
  for pkg in "${!why[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || need+=("$pkg")
  done
else
  # Not Debian: probe for the files themselves, and say what to install (no package manager
  # is guessed).
  command -v cc >/dev/null || need+=(gcc)
  command -v c++ >/dev/null || need+=(g++)
  command -v pkg-config >/dev/null || need+=(pkg-config)
  { command -v pkg-config >/dev/null && pkg-config --exists libcrypto; } || need+=(libssl-dev)
  command -v openssl >/dev/null || need+=(openssl)
  command -v age >/dev/null || need+=(age)
  command -v ssh-keygen >/dev/null || need+=(openssh-client)
  command -v minisign >/dev/null || need+=(minisign)
  command -v mpirun >/dev/null || need+=(openmpi-bin)
  command -v mpicc >/dev/null || need+=(libopenmpi-dev)
  command -v ip >/dev/null || need+=(iproute2)
  python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
  compgen -G '/usr/lib*/llvm*/lib/libclang.so' >/dev/null ||
    compgen -G '/usr/lib*/libclang.so' >/dev/null ||
    compgen -G '/usr/lib*/*/libclang.so' >/dev/null ||
    [ -n "${LIBCLANG_PATH:-}" ] || need+=(libclang-dev)
  if [ ${#need[@]} -gt 0 ]; then
    for pkg in "${need[@]}"; do echo "missing (Debian name) $pkg: ${why[$pkg]}"; done
    echo "install these with your package manager, then run this script again" >&2
    exit 1
  fi
fi
if [ ${#need[@]} -gt 0 ]; then
  for pkg in "${need[@]}"; do echo "installing $pkg: ${why[$pkg]}"; done
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "not root and no sudo: install ${need[*]} as root" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# typage (npm age-encryption, the TypeScript age) for the post-quantum interop tests, run with
# node. Its version and every dependency are pinned in tests/typage/package-lock.json; it goes
# into target/typage (reinstalled when the lock file changes). Its packages need node 20.19 or
# later: a missing node (and npm) comes from Debian, an older one is reported.
node_missing=false
if command -v dpkg-query >/dev/null; then
  # The package is the truth on Debian (NodeSource's nodejs also holds npm; Debian's does not).
  [ "$(dpkg-query -W -f='${Status}' nodejs 2>/dev/null || true)" = "install ok installed" ] &&
    command -v npm >/dev/null || node_missing=true
else
  command -v node >/dev/null && command -v npm >/dev/null || node_missing=true
fi
if $node_missing; then
  if command -v apt-get >/dev/null; then
    echo "installing nodejs and npm: typage interop tests run the age-encryption package with node"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "node and npm are missing: install Node.js 20.19 or later, then run this script again" >&2
    exit 1
  fi
fi
node_version=$(node -p 'process.versions.node')
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
  echo "node $node_version is too old for typage's packages (20.19 or later): install a newer Node.js" >&2
  exit 1
fi
# The S3 server of the object-storage tests (crates/paracrypt-cli/tests/cli/s3/): moto's
# standalone server, pinned in tests/s3/requirements.txt (tests/s3/server.py says why moto and
# not s3s-fs), in a virtual environment under target/ (reinstalled when the pins change; about
# a minute from PyPI's wheels). The tests start it on 127.0.0.1 on a free port and it ends with
# them, however they end.
# A virtual environment at DIR holding the pinned REQUIREMENTS, made again when the pins change
# (only wheels, never a build from source).
pinned_venv() {
  local dir=$1 requirements=$2
  if ! cmp -s "$requirements" "$dir/requirements.txt"; then
    rm -rf "$dir"
    python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
      --only-binary=:all: --require-virtualenv -r "$requirements"
    cp "$requirements" "$dir/requirements.txt"
  fi
}
s3venv=target/s3-venv
export PARACRYPT_S3_PYTHON="$PWD/$s3venv/bin/python"
# The KMS of the key-state tests (kms::a_disabled_key_…): ministack, pinned in
# tests/kms/requirements.txt (tests/kms/server.py says why: moto never looks at a key's state),
# in a virtual environment of its own (its botocore pin differs from moto's boto3; about 20
# seconds from PyPI's wheels).
kmsvenv=target/kms-venv
export PARACRYPT_KMS_PYTHON="$PWD/$kmsvenv/bin/python"

# typage (above) and the four virtual environments (the S3 and KMS servers above; the reference
# reader's and the Python package's, below) are made while stage 1 compiles: they wait on the
# network and the disk, the build on the CPU. Stage 1's tests wait for them.
# (The CLI's tests find it through PARACRYPT_TYPAGE_DIR, whichever target directory built them.)
export PARACRYPT_TYPAGE_DIR="$PWD/target/typage"
typage() {
  local dir=$PARACRYPT_TYPAGE_DIR
  if ! cmp -s tests/typage/package-lock.json "$dir/package-lock.json" ||
    [ ! -f "$dir/node_modules/age-encryption/package.json" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    cp tests/typage/package.json tests/typage/package-lock.json "$dir/"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
}
environments() {
  set -e
  typage
  pinned_venv "$s3venv" tests/s3/requirements.txt
  pinned_venv "$kmsvenv" tests/kms/requirements.txt
  pinned_venv target/reference-venv tests/reference/requirements.txt
  pinned_venv target/py-venv crates/paracrypt-py/requirements-test.txt
}
mkdir -p target
env_log=target/environments.log
environments >"$env_log" 2>&1 </dev/null &
environments_job=$!
trap 'kill "$environments_job" 2>/dev/null || true' EXIT

export CI="${CI:-true}"
# Every runner's output also goes to a log, for the closing count of tests run.
results=target/test-results.log
# Where the time goes: each stage's start, in seconds since the script began (also in the log).
stage() { echo "== stage $1 at ${SECONDS}s" | tee -a "$results"; }
: >"$results"
stage "1: every feature"
# 1. The default build (aws-lc, OpenSSL and RustCrypto providers) with every feature, MPI
# included. Built in one cargo run with everything the later stages need from this build — the
# binaries and the Python package's extension (crates/paracrypt-py, a cdylib, linked as maturin
# links it, without libpython: PYO3_BUILD_EXTENSION_MODULE) — so that cargo keeps both cores busy
# to the end of the graph; then the tests run.
export PYO3_BUILD_EXTENSION_MODULE=1
# (--timings: where the compile time goes, target/cargo-timings/, for whoever shortens CI next)
cargo build --workspace --all-features --locked --bins --lib --tests --timings
# The builds of the later stages run now, beside the tests of stage 1 to the Python package,
# which mostly wait on processes (MPI, the S3 and KMS servers, Python, node: the CLI's suite
# keeps under one core busy on two), at a lower priority; each later stage waits for its own.
# - The fuzz targets (stage 4), in a target directory of their own.
# - Stages 2 and 3 (another set of providers each), in target/alt: their crates share nothing
#   with this build's but what they would compile again anyway (cargo unifies features over the
#   packages of each command, so even serde or syn differ), and in their own directory cargo's
#   lock does not hold up this stage's tests. The commands are the ones the stages run, with
#   `--no-run`: the stages find everything built.
# (setsid: each in its own process group, so that a failing stage stops the cargo runs too.)
fuzz_seconds="${FUZZ_SECONDS:-3}"
fuzz_log=target/fuzz-build.log
nice -n 10 setsid bash scripts/fuzz.sh --build-only "$fuzz_seconds" >"$fuzz_log" 2>&1 </dev/null &
fuzz_build=$!
# The test commands of stages 2 and 3 (defined once: built here with `--no-run`, run there).
# (Each is built with exactly the command that runs it: cargo unifies features over what one
# command builds, so even the same packages with other targets build their crates again.)
# Stage 2 is one build of the core's suite and the CLI's: its test executables are listed
# (cargo's JSON messages, in $ossl_json) and run one by one there, the CLI's with a filter (a
# second cargo command over one of the two packages would compile the core and its
# dependencies again, for the features that package alone unifies).
ossl_suite() {
  cargo test -p paracrypt-core -p paracrypt-cli --no-default-features --features openssl --locked --tests "$@"
}
pure_suite() {
  cargo test --workspace --exclude paracrypt-mpi --exclude paracrypt-store --exclude paracrypt-py \
    --no-default-features --features rustcrypto --features paracrypt-cli/test-hooks --locked "$@"
}
# Stage 3's build first: both link a `paracrypt` binary to target/alt/debug/paracrypt, the path
# the CLI's suite runs, and stage 2 runs its executables without cargo (which would link its own
# there again, as stage 3's cargo test does for stage 3).
ossl_json=target/alt-ossl.json
alt_builds() {
  pure_suite --no-run --timings &&
    ossl_suite --no-run --timings --message-format=json-render-diagnostics >"$ossl_json"
}
export ossl_json
export -f ossl_suite pure_suite alt_builds
alt_log=target/alt-build.log
CARGO_TARGET_DIR=target/alt nice -n 10 setsid bash -c alt_builds >"$alt_log" 2>&1 </dev/null &
alt_build=$!
trap 'kill -- "-$fuzz_build" "-$alt_build" "$environments_job" 2>/dev/null || true' EXIT
# Waits for a background job (process, log, what it does), showing its log if it failed.
built() {
  if ! wait "$1"; then
    cat "$2" >&2
    echo "$3: failed (log above)" >&2
    exit 1
  fi
}
built "$environments_job" "$env_log" "the tests' environments (typage, the virtual environments)"
# Four test threads: on two cores the CLI's tests wait more than they compute (mpirun's start,
# the servers, the emulated hosts' links), so two threads leave a core idle.
cargo test --workspace --all-features --locked -- --test-threads=4 2>&1 | tee -a "$results"

stage "the reference reader"
# The reference reader (tests/reference/): a second implementation of docs/FORMAT.md in Python,
# run on every test vector and on fresh files from the binary. Its packages are pinned and go
# into a local virtual environment; a missing one fails here, it never skips.
venv=target/reference-venv
# The binaries and the Python package's extension, built in stage 1 (this only checks that they
# are fresh: the same command, because `--tests` brings the dev-dependencies' features in, and a
# build without it compiles the core and everything above it again). cargo unifies features over
# the whole workspace there, so the extension shares every crate with the tests (`maturin
# develop`, which builds the package alone with its own features, would build aws-lc, the core
# and age again: minutes).
cargo build --workspace --all-features --locked --bins --lib --tests
PARACRYPT_BIN="$PWD/target/debug/paracrypt" PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/python" -m pytest -q tests/reference 2>&1 | tee -a "$results"

stage "the Python package"
# The Python package (crates/paracrypt-py, `import paracrypt`): its pinned tools go into their
# own virtual environment (reinstalled when the pins change); the extension built above goes
# beside the package's Python sources and the environment imports them in place (what
# `maturin develop` does, without a second build). Then pytest over every API (round trips
# with the CLI and age, bad input, a real Dask LocalCluster of two worker processes) and mypy
# over the stub and a typed usage file.
pyvenv=target/py-venv
cp target/debug/lib_paracrypt.so crates/paracrypt-py/python/paracrypt/_paracrypt.abi3.so
"$pyvenv/bin/python" -c 'import pathlib, sys, sysconfig
pathlib.Path(sysconfig.get_paths()["purelib"], "paracrypt-dev.pth").write_text(sys.argv[1] + "\n")' \
  "$PWD/crates/paracrypt-py/python"
PARACRYPT_BIN="$PWD/target/debug/paracrypt" PYTHONDONTWRITEBYTECODE=1 \
  "$pyvenv/bin/python" -m pytest -q crates/paracrypt-py/tests 2>&1 | tee -a "$results"
# The stub against the compiled module (stubtest), then the package and a typed use of it.
(cd crates/paracrypt-py && "../../$pyvenv/bin/python" -m mypy.stubtest --mypy-config-file \
  pyproject.toml paracrypt && "../../$pyvenv/bin/python" -m mypy python/paracrypt \
  tests/typed_usage.py)

stage "4: fuzz smoke"
# 4. Fuzz smoke: every cargo-fuzz target replays its corpus and the seeds, then mutates for a few
# seconds (docs/FUZZING.md; the long runs are `scripts/fuzz.sh SECONDS` by hand). It runs here,
# before stages 2 and 3, while their build (the longest part of CI on two cores) still runs at
# a lower priority: each target runs for a set time on one core, so the other core goes on
# building, and the smoke's minute overlaps the build instead of following it.
built "$fuzz_build" "$fuzz_log" "the fuzz targets' build"
bash scripts/fuzz.sh "$fuzz_seconds"

stage "2: OpenSSL without aws-lc"
# 2. OpenSSL without aws-lc: OpenSSL is then the first backend (the one the default `fastest`
# table takes every primitive from) and the one every cross-provider test compares with
# RustCrypto. To keep CI's time down: the core's suite (every primitive, suite, age payload,
# raw cipher and signature across providers) and the CLI's provider tests only. (The MPI crate
# is left out of builds 2 and 3: it runs the same core code, already tested above.)
built "$alt_build" "$alt_log" "the build of stages 2 and 3"
trap - EXIT
export CARGO_TARGET_DIR=target/alt
# Every test executable of the core (its unit tests and integration tests), and the CLI's
# suite's provider and hook tests; each from its package's directory, as cargo runs it. This CLI
# is built without the test hooks (`--fixed-salt`), as every default build is: the `hooks::`
# tests check that it refuses them.
python3 -c 'import json, os, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(os.path.dirname(m["manifest_path"]), m["target"]["name"], m["executable"])' \
  "$ossl_json" >target/alt-ossl.tests
ran=0
while read -r dir target executable; do
  case "$(basename "$dir"):$target" in
    paracrypt-core:*) filter=() ;;
    paracrypt-cli:cli) filter=(providers:: hooks::) ;;
    *) continue ;;
  esac
  (cd "$dir" && "$executable" "${filter[@]}") 2>&1 | tee -a "$results"
  ran=$((ran + 1))
done <target/alt-ossl.tests
# The core's unit tests, its integration tests and the CLI's suite: a build that made fewer
# fails here rather than passing with less.
if [ "$ran" -lt 3 ]; then
  echo "stage 2 found $ran test executables of its build (target/alt-ossl.tests), expected 3 or more" >&2
  exit 1
fi
# No default build has the test hooks: not the CLI, the facade, nor the Python package (their
# normal and build dependencies, every feature each enables by default).
for package in paracrypt-cli paracrypt paracrypt-py; do
  if cargo tree -e normal,build,features -p "$package" --locked | grep -q 'test-hooks'; then
    echo "the default build of $package enables the test hooks:" >&2
    cargo tree -e normal,build,features -p "$package" --locked -i paracrypt-core >&2
    exit 1
  fi
done

stage "3: pure Rust"
# 3. The pure-Rust build: RustCrypto only. It must link neither aws-lc nor OpenSSL (checked on
# the dependency graph, build scripts included), and the suite must pass on it too. Object
# storage (paracrypt-store, the CLI's default `s3` feature) is left out of it: its TLS (rustls
# through object_store) is built on aws-lc.
pure=(--no-default-features --features rustcrypto --locked)
for c in aws-lc-sys openssl-sys; do
  if cargo tree -e normal,build "${pure[@]}" -p paracrypt-cli -p paracrypt-bench -p paracrypt | grep -q "$c"; then
    echo "the pure-Rust build depends on $c:" >&2
    cargo tree -e normal,build "${pure[@]}" -p paracrypt-cli -p paracrypt-bench -p paracrypt -i "$c" >&2
    exit 1
  fi
done
# The CLI's suite compares bytes under fixed salts: its test hooks are on here (as in stage 1).
# The Python package is left out too: it has no Rust test and no code that depends on the
# providers compiled (stage 1 builds and tests it), and its pure-Rust build would only compile
# PyO3 again.
# Four test threads, as in stage 1: the CLI's suite waits on its processes more than it computes.
pure_suite -- --test-threads=4 2>&1 | tee -a "$results"
unset CARGO_TARGET_DIR

stage "done"
# The count of every runner above (cargo test's and pytest's summary lines), on one line.
awk '
  /^test result:/ { p += $4; f += $6 }
  / passed/ && /^[0-9]+ passed/ { p += $1; if (match($0, /[0-9]+ failed/)) f += substr($0, RSTART) + 0 }
  END { printf "all suites: %d passed, %d failed\n", p, f }
' "$results"
