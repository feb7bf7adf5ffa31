#!/bin/sh
# The exact htsim command lines behind results.csv (see README.md). Usage:
#   run_htsim.sh HTSIM_NDP OUTDIR
# HTSIM_NDP: htsim's sim/datacenter/htsim_ndp (main_ndp.cpp) built at the commit README.md names.
# Each run's stdout goes to OUTDIR/<scenario>_q<frames>.log; collect.py turns them into results.csv.
set -eu
ndp=$1; here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$2"; out=$(cd "$2" && pwd)
cd "$out"   # htsim writes idmap.txt into the working directory
# -mtu 1474: htsim's NDP data packet is its MSS plus a 64-byte header (ndppacket.h), so 1538
# bytes on the wire, as this project's full frame; the .cm files' 1086338 bytes are 737 of them.
# -q counts MSS-sized (1474-byte) packets: -q 34 holds 32 whole 1538-byte packets, and so on.
common="-linkspeed 100000 -mtu 1474 -queue_type composite -strat perm -end 100000 -seed 13"
for fq in 32:34 64:67 170:178 1000:1044 10000:10435; do
  frames=${fq%:*}; q=${fq#*:}
  for n in 8 16 32; do
    # One switch, 1 us links (set in the .topo file); cwnd 35 packets = one BDP (4.3 us RTT).
    "$ndp" $common -topo "$here/incast_one_switch.topo" -nodes 33 -q $q -cwnd 35 \
      -tm "$here/incast_$n.cm" -o "$out/incast-${n}_q$frames.dat" > "$out/incast-${n}_q$frames.log"
  done
  # k=4 fat tree (3 tiers, 16 hosts), 1 us links; cwnd 104 packets = one BDP (12.8 us RTT).
  "$ndp" $common -nodes 16 -tiers 3 -hop_latency 1 -q $q -cwnd 104 \
    -tm "$here/permutation_16.cm" -o "$out/permutation-16_q$frames.dat" > "$out/permutation-16_q$frames.log"
done
