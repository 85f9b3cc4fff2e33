#!/usr/bin/env bash
# The report on many ranks: generates RANKS x SITES synthetic records (default
# 4096 x 200, about 1.4 GB of JSON) and times `mpiover report` on them, with
# its peak memory. Target: under 5 s and 1 GiB on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
RANKS=${RANKS:-4096}
SITES=${SITES:-200}
DIR=${DIR:-$(mktemp -d)}
T=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p mpiover-report --examples --bins
rm -rf "$DIR"; "$T/release/examples/gen_records" "$DIR" --ranks "$RANKS" --sites "$SITES"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; records: $(ls "$DIR" | wc -l) files, $(du -sh "$DIR" | cut -f1)"
for i in 1 2 3; do
  /usr/bin/time -f "run $i: wall %e s, max RSS %M KiB" "$T/release/mpiover" report "$DIR" --format json >/dev/null
done
/usr/bin/time -f "html: wall %e s, max RSS %M KiB" "$T/release/mpiover" report "$DIR" -o "$DIR.html"
rm -rf "$DIR" "$DIR.html"
