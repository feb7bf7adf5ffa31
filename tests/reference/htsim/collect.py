"""Turn htsim_ndp's logs (run_htsim.sh) into results.csv (a row a run) and flows.csv (a row a
flow). Standard library only. Usage: python3 collect.py LOGDIR

Every flow starts at 0 (the .cm files), so its completion time is when htsim's sender printed
"Flow ... finished at T" (T in microseconds). p99 is the linear-interpolation percentile
(numpy's default; statistics' 'inclusive' method). htsim_ndp prints no per-queue trim count:
`rtx` is its count of retransmitted packets (each a trimmed packet pulled again, or a
timeout's), `timeouts` its "Total RTOs" (printed only when one fires)."""
import csv
import re
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).parent
FINISHED = re.compile(r"^Flow ndp_(\d+)_(\d+) flow_id \d+ finished at ([\d.e+-]+) total bytes (\d+)$")
TOTALS = re.compile(r"^New: (\d+) Rtx: (\d+) Bounced: (\d+)$")
RTOS = re.compile(r"^Total RTOs: (\d+)$")
NAME = re.compile(r"^(?P<scenario>[a-z]+-\d+)_q(?P<q>\d+)\.log$")
CONNECTIONS = re.compile(r"^Connections (\d+)$", re.M)


def parse(text):
    flows, totals, rtos = [], None, 0
    for line in text.splitlines():
        if m := FINISHED.match(line):
            flows.append((int(m[1]), int(m[2]), float(m[3]) * 1e-6, int(m[4])))
        elif m := TOTALS.match(line):
            totals = tuple(int(x) for x in m.groups())
        elif m := RTOS.match(line):
            rtos = int(m[1])
    if totals is None:
        raise ValueError("no 'New: .. Rtx: .. Bounced: ..' line: the run did not end")
    return flows, totals, rtos


def main(logdir):
    rows, flow_rows = [], []
    def order(log):
        m = NAME.match(log.name)
        kind, n = m["scenario"].split("-")
        return kind != "incast", int(n), int(m["q"])
    for log in sorted(Path(logdir).glob("*.log"), key=order):
        m = NAME.match(log.name)
        scenario, q = m["scenario"], int(m["q"])
        cm = "incast_%s.cm" % scenario.split("-")[1] if scenario.startswith("incast") else "permutation_16.cm"
        expected = int(CONNECTIONS.search((HERE / cm).read_text())[1])
        flows, (new, rtx, bounced), rtos = parse(log.read_text())
        fct = sorted(f[2] for f in flows)
        if not fct:
            raise ValueError(f"{log}: no flow finished")
        rows.append({"scenario": scenario, "transport": "ndp", "buffer_frames": q, "flows": expected,
                     "finished": len(fct), "mean_fct_s": statistics.fmean(fct),
                     "p99_fct_s": statistics.quantiles(fct, n=100, method="inclusive")[98],
                     "max_fct_s": fct[-1], "packets_new": new, "rtx": rtx, "bounced": bounced,
                     "timeouts": rtos})
        flow_rows += [{"scenario": scenario, "transport": "ndp", "buffer_frames": q, "src": s, "dst": d,
                       "bytes": b, "fct_s": t} for s, d, t, b in sorted(flows)]
    for name, table in (("results.csv", rows), ("flows.csv", flow_rows)):
        with open(HERE / name, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0]), lineterminator="\n")
            w.writeheader()
            w.writerows({k: f"{v:.9g}" if isinstance(v, float) else v for k, v in r.items()} for r in table)


if __name__ == "__main__":
    main(sys.argv[1])
