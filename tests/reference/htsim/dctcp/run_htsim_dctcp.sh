#!/bin/sh
# The exact command lines of htsim's DCTCP incast runs: run_htsim_dctcp.sh HTSIM OUTDIR
# HTSIM: htsim_dctcp_incast_collateral (sim/datacenter/old_tests/main_dctcp_incast_collateral.cpp).
# Buffers of 8 and 15 packets never exceed the 15-packet marking threshold: no CE, so DCTCP
# never reacts and its sender is htsim's TCP NewReno (README.md).
set -e
BIN=$1; OUT=$2
mkdir -p "$OUT"
for n in 8 16 32; do
  for q in 8 15 32 64 170 1000 10000; do
    "$BIN" -nodes 128 -conns $n -q $q -flowsize 900000 -o "$OUT/incast-$n-k8_q$q.dat" > "$OUT/incast-$n-k8_q$q.log"
  done
done
