#!/usr/bin/env bash
# What this machine allows and how close paracrypt's drivers come to it, at 1, 2, 4, … cores
# (issue #38): prints the ceilings — memory copy, one file read by N threads, one file written by
# N threads (buffered pwrite, a shared mmap after fallocate, O_DIRECT) — then each path's speed
# and its fraction of the ceiling that bounds it:
#
#   file -> /dev/null   the lower of the same work in memory (`paracrypt bench --modes memory`)
#                       and the one-file read ceiling, at the same thread count
#   file -> file        the best one-file write method at the same thread count; and, beside
#                       it, the best one-file copy (the same reads and writes with no crypto:
#                       N threads pread 1 MiB blocks claimed in order, then write them one
#                       writer at a time, with no lock, or into a shared mmap)
#   stdin -> stdout     a pipe from `cat` to `cat`
#
#   bash scripts/cores-bench.sh                       # 1 GiB in /dev/shm, 3 runs, 1 2 4 … nproc
#   SIZE_MIB=4096 DIR=/scratch RUNS=5 bash scripts/cores-bench.sh target/release/paracrypt
#   THREADS="1 8 16" bash scripts/cores-bench.sh
#
# Needs a C compiler (`cc`) for the ceiling probes in scripts/probes/, and a release binary
# (built here when none is given and cargo is present). age-keygen adds the age rows. Every
# figure is the median of RUNS wall-clock runs; the page cache holds the input (it is read once
# before), outputs are removed and `sync`ed away between runs. On a machine shared with other
# work the ratios still hold within one run; the absolute figures do not. Run it as root on a VM
# with free page reporting to pause that (as scripts/measure.sh does) for steadier writes.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
P=${1:-$here/target/release/paracrypt}
if [ ! -x "$P" ]; then
  cargo build --release -q -p paracrypt-cli
  P=$here/target/release/paracrypt
fi
N=$(nproc)
SIZE_MIB=${SIZE_MIB:-1024}
RUNS=${RUNS:-3}
if [ -z "${DIR:-}" ]; then
  if [ -w /dev/shm ]; then DIR=/dev/shm; else DIR=${TMPDIR:-/tmp}; fi
fi
if [ -z "${THREADS:-}" ]; then
  THREADS=""; t=1
  while [ "$t" -lt "$N" ]; do THREADS="$THREADS $t"; t=$((t * 2)); done
  THREADS="$THREADS $N"
fi
work=$(mktemp -d "$DIR/paracrypt-cores.XXXXXX")
trap 'rm -rf "$work"' EXIT
REPORTING=/sys/module/page_reporting/parameters/page_reporting_order
if [ "${PAUSE_PAGE_REPORTING:-1}" = 1 ] && [ -w "$REPORTING" ]; then
  old_order=$(cat "$REPORTING")
  trap 'echo "$old_order" > "$REPORTING"; rm -rf "$work"' EXIT
  echo 11 > "$REPORTING"
fi

cc -O2 -pthread -o "$work/membw" scripts/probes/membw.c
cc -O2 -pthread -o "$work/onefile" scripts/probes/onefile.c
cc -O2 -pthread -o "$work/onecopy" scripts/probes/onecopy.c

# median VALUES…
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Runs COMMAND RUNS times after PREPARE (untimed); prints the median seconds.
timed() {
  local prepare=$1 command=$2 times=() i s e
  for ((i = 0; i < RUNS; i++)); do
    eval "$prepare"
    s=$(date +%s%N)
    if ! eval "$command" > /dev/null 2> "$work/err"; then
      echo "FAILED: $command: $(tail -1 "$work/err")" >&2
      echo nan
      return
    fi
    e=$(date +%s%N)
    times+=("$(awk -v s="$s" -v e="$e" 'BEGIN {printf "%.4f", (e - s) / 1e9}')")
  done
  median "${times[@]}"
}
# probe COMMAND…: the median of RUNS runs of a probe that prints GB/s.
probe() {
  local out=() i
  for ((i = 0; i < RUNS; i++)); do sync; out+=("$("$@" 2>/dev/null || echo nan)"); done
  median "${out[@]}"
}
gbps() { awk -v b="$((SIZE_MIB << 20))" -v s="$1" 'BEGIN {if (s == "nan" || s == 0) print "nan"; else printf "%.2f", b / s / 1e9}'; }
frac() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan" || b == "nan" || b == 0) print "-"; else printf "%.2f", a / b}'; }
lower() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan") print b; else if (b == "nan") print a; else print (a < b ? a : b)}'; }
higher() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan") print b; else if (b == "nan") print a; else print (a > b ? a : b)}'; }

fs=$(stat -f -c %T "$DIR")
echo "## $N cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(free -g | awk '/Mem:/ {print $2}') GiB;" \
  "$SIZE_MIB MiB in $DIR ($fs); $("$P" --version); load $(cut -d' ' -f1-3 /proc/loadavg)"

in=$work/in
head -c "${SIZE_MIB}M" /dev/urandom > "$in"
"$P" keygen -o "$work/key" > /dev/null 2>&1
"$P" encrypt -q -k "$work/key" "$in" -o "$in.pcr"
age=""
if command -v age-keygen > /dev/null; then
  age-keygen -o "$work/id" 2> /dev/null
  age=$(age-keygen -y "$work/id")
  "$P" encrypt -q --format age -r "$age" "$in" -o "$in.age"
fi
cat "$in" "$in.pcr" > /dev/null
[ -z "$age" ] || cat "$in.age" > /dev/null

echo
echo "## Ceilings (GB/s; medians of $RUNS)"
echo
echo "| threads | memory copy | one file read | write: pwrite | write: mmap | write: O_DIRECT | copy: one writer | copy: free pwrite | copy: mmap |"
echo "|---|---|---|---|---|---|---|---|---|"
declare -A READ WRITE COPY MEM
for t in $THREADS; do
  m=$(probe "$work/membw" "$t")
  r=$(probe "$work/onefile" read "$in" "$t")
  w1=$(probe "$work/onefile" pwrite "$work/w" "$SIZE_MIB" "$t")
  w2=$(probe "$work/onefile" mmap "$work/w" "$SIZE_MIB" "$t")
  w3=$(probe "$work/onefile" direct "$work/w" "$SIZE_MIB" "$t")
  c1=$(probe "$work/onecopy" lock "$in" "$work/w" "$t")
  c2=$(probe "$work/onecopy" free "$in" "$work/w" "$t")
  c3=$(probe "$work/onecopy" mmap "$in" "$work/w" "$t")
  READ[$t]=$r
  WRITE[$t]=$(higher "$(higher "$w1" "$w2")" "$w3")
  COPY[$t]=$(higher "$(higher "$c1" "$c2")" "$c3")
  echo "| $t | $m | $r | $w1 | $w2 | $w3 | $c1 | $c2 | $c3 |"
done
cat_cat=$(gbps "$(timed "" "cat $in | cat > /dev/null")")
echo
echo "A pipe from cat to cat: $cat_cat GB/s."

# The same work in memory, per thread count (MB/s from the bench's JSON).
mem_mib=$((SIZE_MIB < 512 ? SIZE_MIB : 512))
algorithms=container/aes-256-gcm/encrypt,container/aes-256-gcm/decrypt
[ -z "$age" ] || algorithms=$algorithms,age/x25519/encrypt,age/x25519/decrypt
"$P" bench --algorithms "$algorithms" --threads "$(echo $THREADS | tr ' ' ,)" \
  --sizes "${mem_mib}MiB" --modes memory --repeat "$RUNS" --json "$work/mem.json" > /dev/null 2>&1
while read -r name threads mbps; do
  MEM[$name/$threads]=$(awk -v m="$mbps" 'BEGIN {printf "%.2f", m / 1000}')
done < <(awk '/"algorithm"/ {split($0, p, "\""); a = p[4]}
  /"threads"/ {t = $0; gsub(/[^0-9]/, "", t)}
  /"mb_per_s"/ {v = $0; sub(/.*: */, "", v); sub(/,.*/, "", v); print a, t, v}' "$work/mem.json")

echo
echo "## Paths (GB/s, and the fraction of the ceiling that bounds each)"
echo
echo "| threads | path | GB/s | ceiling | fraction | copy ceiling | fraction of it |"
echo "|---|---|---|---|---|---|---|"
row() { # THREADS NAME SECONDS CEILING [COPY CEILING]
  local speed; speed=$(gbps "$3")
  echo "| $1 | $2 | $speed | $4 | $(frac "$speed" "$4") | ${5:--} | $(frac "$speed" "${5:-nan}") |"
}
clean="rm -f $work/out; sync"
for t in $THREADS; do
  j="-q -j$t"
  ceiling=$(lower "${MEM[container/aes-256-gcm/encrypt/$t]:-nan}" "${READ[$t]}")
  row "$t" "encrypt file -> /dev/null" "$(timed "" "$P encrypt $j -k $work/key $in -o /dev/null")" "$ceiling"
  ceiling=$(lower "${MEM[container/aes-256-gcm/decrypt/$t]:-nan}" "${READ[$t]}")
  row "$t" "decrypt file -> /dev/null" "$(timed "" "$P decrypt $j -k $work/key $in.pcr -o /dev/null")" "$ceiling"
  if [ -n "$age" ]; then
    ceiling=$(lower "${MEM[age/x25519/encrypt/$t]:-nan}" "${READ[$t]}")
    row "$t" "age encrypt file -> /dev/null" "$(timed "" "$P encrypt $j --format age -r $age $in -o /dev/null")" "$ceiling"
    ceiling=$(lower "${MEM[age/x25519/decrypt/$t]:-nan}" "${READ[$t]}")
    row "$t" "age decrypt file -> /dev/null" "$(timed "" "$P decrypt $j -i $work/id $in.age -o /dev/null")" "$ceiling"
  fi
  row "$t" "encrypt file -> file" "$(timed "$clean" "$P encrypt $j -k $work/key $in -o $work/out")" "${WRITE[$t]}" "${COPY[$t]}"
  row "$t" "decrypt file -> file" "$(timed "$clean" "$P decrypt $j -k $work/key $in.pcr -o $work/out")" "${WRITE[$t]}" "${COPY[$t]}"
  row "$t" "encrypt stdin -> stdout (pipes)" "$(timed "" "cat $in | $P encrypt $j -k $work/key | cat > /dev/null")" "$cat_cat"
  row "$t" "decrypt stdin -> stdout (pipes)" "$(timed "" "cat $in.pcr | $P decrypt $j -k $work/key | cat > /dev/null")" "$cat_cat"
done
rm -f "$work/out"
echo
echo "(ceiling: file -> /dev/null: the lower of the same work in memory and the one-file read"
echo "ceiling; file -> file: the best write method, and the best copy of the same file; streams: a"
echo "pipe from cat to cat. All at the row's thread count; the input is page-cached.)"
