#!/bin/sh
# htsim's DCTCP incast over path draws: run_htsim_dctcp_seeds.sh HTSIM OUTDIR [JOBS]
# The program seeds its random number generator with srand(13), fixed in its source, and draws
# each flow's path as rand() % 16 after it. The binary runs unmodified under gdb, which sets the
# argument of every srand call to the seed (seed.gdb); seed 13 gives the logs in logs/ exactly.
# Runs every command line of run_htsim_dctcp.sh at seeds 1..8, JOBS at a time (default 2);
# htsim's .dat logs (100 MB a run) are deleted, its standard output kept.
set -e
BIN=$1; OUT=$2; JOBS=${3:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for s in 1 2 3 4 5 6 7 8; do
  for n in 8 16 32; do
    for q in 8 15 32 64 170 1000 10000; do
      echo "$s $n $q"
    done
  done
done | xargs -P "$JOBS" -n 3 sh -c '
  name="$2/incast-$5-k8_q$6_s$4"
  gdb -q -batch -ex "set \$seed = $4" -x "$1/seed.gdb" \
      -ex "run -nodes 128 -conns $5 -q $6 -flowsize 900000 -o $name.dat > $name.log" "$3" > /dev/null
  rm -f "$name.dat"' \
  sh "$HERE" "$OUT" "$BIN"
