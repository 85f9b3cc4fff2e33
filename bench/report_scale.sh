#!/usr/bin/env bash
# The report on many ranks: generates RANKS x SITES synthetic
# records (default 4096 x 200, about 1.4 GB of JSON) and times `mpiover report`
# on them, with its peak memory, against the targets: under MAX_WALL_S seconds
# (default 5) and under MAX_RSS_MIB MiB (default 1024) on this machine.
#
#   bench/report_scale.sh                      (RANKS, SITES, DIR, MAX_WALL_S,
#   RANKS=1024 SITES=50 bench/report_scale.sh   MAX_RSS_MIB, FORMAT from the environment)
#   FORMAT=log bench/report_scale.sh            (the same job as one merged job log)
#
# With FORMAT=log the log is made directly (gen_records --log: the job's
# merged aggregate, bounded as the ranks' merge bounds it), so a million
# ranks take a minute or two; its targets are those of the job log:
#   FORMAT=log RANKS=1048576 MAX_WALL_S=10 MAX_RSS_MIB=4096 bench/report_scale.sh
#   FORMAT=log RANKS=65536 MAX_WALL_S=1 MAX_RSS_MIB=512 bench/report_scale.sh
#
# Each run is measured by python3 (installed by scripts/setup): wall time
# around the child, peak resident memory from the child's own rusage
# (os.wait4, ru_maxrss), so /usr/bin/time is not needed. Three JSON runs, one
# text run and one HTML run; every run must be within both targets. Exit code:
# 0 when all are, 1 when one is over, 2 on a setup error.
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${RANKS:-4096}
SITES=${SITES:-200}
MAX_WALL_S=${MAX_WALL_S:-5}
MAX_RSS_MIB=${MAX_RSS_MIB:-1024}
FORMAT=${FORMAT:-per-rank}
T=${CARGO_TARGET_DIR:-target}
command -v python3 >/dev/null || { echo "report_scale: python3 is needed to measure (scripts/setup installs it)" >&2; exit 2; }
if [[ -n "${DIR:-}" ]]; then
  # DIR is emptied and refilled: refuse a directory holding anything but records.
  if [[ -e "$DIR" ]] && find "$DIR" -mindepth 1 -maxdepth 1 ! -name 'rank-*.json' ! -name job.mpiover-log | grep -q .; then
    echo "report_scale: $DIR holds files other than rank-*.json records; give an empty or new DIR" >&2
    exit 2
  fi
  OWN_DIR=0
else
  DIR=$(mktemp -d); OWN_DIR=1
fi
cleanup() {
  rm -f "$DIR.html"
  if [[ $OWN_DIR == 1 ]]; then rm -rf "$DIR"; fi
}
trap cleanup EXIT
cargo build -q --release -p mpiover-report --features synth --examples --bins
rm -rf "$DIR"
GEN_T0=$(date +%s.%N)
case $FORMAT in
  per-rank) "$T/release/examples/gen_records" "$DIR" --ranks "$RANKS" --sites "$SITES" ;;
  log) "$T/release/examples/gen_records" "$DIR" --ranks "$RANKS" --sites "$SITES" --log ;;
  *) echo "report_scale: FORMAT is per-rank or log, not $FORMAT" >&2; exit 2 ;;
esac
GEN_S=$(echo "$(date +%s.%N) - $GEN_T0" | bc 2>/dev/null || echo "?")
BYTES=$(du -sb "$DIR" | cut -f1)
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "records ($FORMAT): $RANKS ranks x $SITES sites, $(ls "$DIR" | wc -l) files, $(du -sh "$DIR" | cut -f1), $((BYTES / (RANKS * SITES))) bytes per (rank, site)"
echo "generated in ${GEN_S} s (load before the runs: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "targets: wall < $MAX_WALL_S s, max RSS < $MAX_RSS_MIB MiB"

# measure LABEL CMD...: runs CMD (stdout discarded), prints its wall time and
# peak RSS against the targets; returns 1 when over either.
measure() {
  local label=$1; shift
  python3 - "$label" "$MAX_WALL_S" "$MAX_RSS_MIB" "$@" <<'PY'
import os, subprocess, sys, time
label, max_wall, max_rss = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
cmd = sys.argv[4:]
load = os.getloadavg()[0]  # other work on the machine slows the run down
t0 = time.monotonic()
child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
_, status, ru = os.wait4(child.pid, 0)
wall = time.monotonic() - t0
rc = os.waitstatus_to_exitcode(status)
rss_mib = ru.ru_maxrss / 1024.0  # ru_maxrss is in KiB on Linux
cpu = ru.ru_utime + ru.ru_stime
ok_wall, ok_rss = wall < max_wall, rss_mib < max_rss
print(f"{label:<6} wall {wall:6.2f} s (target < {max_wall:g} s: {'ok' if ok_wall else 'OVER'}), "
      f"max RSS {rss_mib:7.1f} MiB (target < {max_rss:g} MiB: {'ok' if ok_rss else 'OVER'}); "
      f"CPU {cpu:6.2f} s, load before {load:.1f}"
      + ("" if rc == 0 else f", exit code {rc}"), flush=True)
sys.exit(0 if ok_wall and ok_rss and rc == 0 else 1)
PY
}

over=0
for i in 1 2 3; do
  measure "json $i" "$T/release/mpiover" report "$DIR" --format json || over=1
done
measure "text" "$T/release/mpiover" report "$DIR" --format text --color never || over=1
measure "html" "$T/release/mpiover" report "$DIR" -o "$DIR.html" || over=1
if [[ $over == 0 ]]; then
  echo "report_scale: PASS (every run under $MAX_WALL_S s and $MAX_RSS_MIB MiB)"
else
  echo "report_scale: FAIL (a run over $MAX_WALL_S s or $MAX_RSS_MIB MiB, or failed)" >&2
  exit 1
fi
