"""Reads htsim_dctcp_incast_collateral's logs into results.csv (standard library only):
`python3 collect.py logs > results.csv`.

htsim prints `Flow tcpsrc finished at T` (T in ms) on every ACK at or past a flow's size, with
no flow name: a flow sends one packet past its size (tcp.cpp sends while highest_sent <=
flow_size + 1), so it prints once or twice, and prints cannot be told apart by flow. What is
exact: the first print (the first flow to finish), the last (no flow finishes later) and the
flows' timeouts (`At T RTO ... Flow ID tcp_<src>_0(0)`, one line a timeout; the collateral
flow's, `long_5_1`, are left out). Times here are from the incast's start, 80 ms. A buffer of
15 packets or fewer never marks, so its row is htsim's TCP (NewReno): transport `tcp`.
Logs named `..._s<seed>.log` (run_htsim_dctcp_seeds.sh) are runs at another seed: their rows
lead with a `seed` column (`python3 collect.py draws > results_draws.csv`)."""
import re
import sys
from pathlib import Path

START_MS = 80.0
MARK_PACKETS = 15        # a queue marks CE above 15 packets: a buffer of no more never marks
FIELDS = ("transport", "senders", "buffer_frames", "flows", "prints", "first_print_s", "last_print_s",
          "timeouts", "flows_timed_out")
_NAME = re.compile(r"incast-(\d+)-k8_q(\d+)(?:_s(\d+))?\.log$")
_PRINT = re.compile(r"Flow tcpsrc finished at ([0-9.]+)")
_RTO = re.compile(r"At [0-9.]+ RTO .* Flow ID tcp_(\d+)_0\(0\)")


def parse(text):
    """(print times in s from the incast's start, [sender of each timeout])"""
    prints = [(float(t) - START_MS) * 1e-3 for t in _PRINT.findall(text)]
    return prints, [int(s) for s in _RTO.findall(text)]


def row(path):
    n, q, seed = _NAME.search(path.name).groups()
    n, q = int(n), int(q)
    prints, rtos = parse(path.read_text(errors="replace"))
    return {**({"seed": int(seed)} if seed else {}), "transport": "tcp" if q <= MARK_PACKETS else "dctcp", "senders": n, "buffer_frames": q, "flows": n, "prints": len(prints),
            "first_print_s": f"{min(prints):.7g}", "last_print_s": f"{max(prints):.7g}",
            "timeouts": len(rtos), "flows_timed_out": len(set(rtos))}


if __name__ == "__main__":
    rows = sorted((row(p) for p in Path(sys.argv[1]).glob("incast-*.log")),
                  key=lambda r: (r["transport"], r["senders"], r["buffer_frames"], r.get("seed", 0)))
    fields = (("seed",) if rows and "seed" in rows[0] else ()) + FIELDS
    print(",".join(fields))
    for r in rows:
        print(",".join(str(r[f]) for f in fields))
