"""How far an emulated run's mean iteration time and p99 tensor completion are from what the
model's schedule would give (the simulator's figures), estimated from what the run measured
of itself: a sum of named terms, in percent, calibrated against `validate` on a grid of
specs x time dilations x seeds (docs/fidelity.md, `make calibrate`).

Every lateness is measured in wall-clock time; what it costs depends on what it is late
against, so each term weighs a lateness against the time it delays:
- `host compute`: late compute timers stretch each worker's forward and backward pass
  (their lateness summed over an iteration, over the planned compute), and compute is
  that share of the iteration;
- `host wait, windows`: a received packet left waiting in a host's socket delays the
  acknowledgement that clocks the sender's window: log(1 + the hosts' mean wait in host-link
  frame times beyond WAIT_SLACK_FRAMES) (the mean: stalls included, the median hides them),
  over the communicating share of the iteration (a large message is a stream of windows);
- `host wait, steps`: every step of a collective (a ring all-reduce has 2(n-1) a bucket, a
  parameter server 2) waits for the message before it, so the wait, real-world (wall-clock
  over the dilation), is paid once per step on the iteration's critical path (small
  messages are a chain of steps);
- `switch lateness`: departures late against their serialisation schedule, p99 in frame
  times, likewise.
The coefficients are least-squares fits on the grid (the frame time is the unit in which a
wait delays a window of frames alike at every dilation and byte scale).

Pure: figures in, estimate out; `emu/run.py` feeds it a run's figures.
"""
import math

# The terms' coefficients, {figure: {term: coefficient}}, fitted by non-negative least squares
# on the calibration grid (docs/fidelity-grid.md): a term is its coefficient times its base
# (`bases`). `host compute` is no fit: a stretch of the compute is that share of the iteration.
COEFFICIENTS = {
    "iteration": {"host compute": 1.0, "host wait, windows": 0.189, "host wait, steps": 2.73,
                  "switch lateness": 0.0},
    "fct_p99": {"host compute": 0.0, "host wait, windows": 0.165, "host wait, steps": 4.85,
                "switch lateness": 0.0},
}
FITTED = ("host wait, windows", "host wait, steps", "switch lateness")
# A window absorbs a wait of a fraction of a frame (it holds more than the path's
# bandwidth-delay product), and a wait of several frames slows it less than in proportion:
# the window term takes log(1 + the mean wait in frames beyond this slack). On the grid's 61
# runs, slacks of 0, 0.3, 0.5 and 0.7 frame left 5.4, 4.9, 4.7 and 4.8 points rms (mean
# iteration) and predicted a left-out spec within 5.5, 6.2, 8.0 and 12.9; the wait itself,
# without the log, 5.5 and 11.8. 0.3 is the one whose flag fires on every case measured
# more than 5% slower and on none below 3% (docs/fidelity-grid.md).
WAIT_SLACK_FRAMES = 0.3


def bases(fig, *, frame_ns, compute_share, steps=0, dilation=1.0, iteration_s=None):
    """{figure: {term: base}}, fractions before their coefficients, from a run's fidelity
    figures `fig` (experiment/fidelity.py's keys: wall-clock us); `frame_ns` the wall-clock
    time of a full frame on a host link, `compute_share` the planned compute over the mean
    iteration time (the summary's scaling factor), `steps` the collective's steps an
    iteration (critical_steps), `iteration_s` the mean iteration, real-world. A figure the
    run did not measure (None) gives a base of 0."""
    comm = max(0.0, 1.0 - compute_share)
    stretch = fig.get("host_compute_stretch") or 0.0
    wait = math.log1p(max(0.0, _frames(fig.get("host_rx_lag_mean_us"), frame_ns) - WAIT_SLACK_FRAMES))
    late = _frames(fig.get("p99_lateness_us"), frame_ns)
    lag_s = (fig.get("host_rx_lag_mean_us") or 0.0) * 1e-6 / dilation
    path = steps * lag_s / iteration_s if iteration_s else 0.0
    return {"iteration": {"host compute": stretch * compute_share, "host wait, windows": wait * comm,
                          "host wait, steps": path, "switch lateness": late * comm},
            "fct_p99": {"host compute": stretch, "host wait, windows": wait, "host wait, steps": path,
                        "switch lateness": late}}


def estimate(fig, coefficients=None, **shape):
    """{"iteration_pct", "fct_p99_pct", "terms": {name: {"iteration_pct", "fct_p99_pct"}}}:
    each term its coefficient times its base (`bases(fig, **shape)`), the estimates their sums."""
    coefficients = coefficients or COEFFICIENTS
    b = bases(fig, **shape)
    terms = {name: {f"{key}_pct": _pct(coefficients[key][name] * b[key][name]) for key in b}
             for name in b["iteration"]}
    return {**{f"{key}_pct": _pct(sum(coefficients[key][n] * x for n, x in b[key].items())) for key in b},
            "terms": terms}


def critical_steps(pattern, buckets, *, workers, ps_ranks=(), group_size=None):
    """The collective's steps an iteration on a worker's critical path: each bucket's steps
    (workloads.PATTERNS: a ring 2(n-1), a parameter server 2, DS-Sync its group's ring)."""
    from workloads import PATTERNS
    per = PATTERNS[pattern].steps(0, 1 << 20, workers=workers, ps_ranks=tuple(ps_ranks),
                                  group_size=group_size)
    return buckets * len(per)


def worst_pct(est):
    """The larger in size of the two estimates, percent (what the flag and the table show)."""
    return max((est["iteration_pct"], est["fct_p99_pct"]), key=abs)


def flagged(est, tolerance):
    """Whether an estimate exceeds the spec's fidelity_tolerance (a fraction)."""
    return abs(worst_pct(est)) > tolerance * 100


def combine_estimates(fidelities):
    """Over a preset's seeds (their summaries' `fidelity`): the mean estimate, term by term
    (the preset's figures are the seeds' means, so their error is the mean error), flagged
    against the seeds' tolerance, and the fixed rules' reasons of every seed."""
    ests = [f["estimate"] for f in fidelities if f.get("estimate")]
    mean = {key: _mean([e[key] for e in ests]) for key in ("iteration_pct", "fct_p99_pct")}
    mean["terms"] = {name: {key: _mean([e["terms"][name][key] for e in ests]) for key in ("iteration_pct", "fct_p99_pct")}
                     for name in ests[0]["terms"]}
    tolerance = max(f["tolerance"] for f in fidelities if f.get("estimate"))
    return {"estimate": mean, "tolerance": tolerance, "estimate_flagged": flagged(mean, tolerance),
            "behind_because": [b for f in fidelities for b in f.get("behind_because", [])]}


def _mean(values):
    return round(sum(values) / len(values), 2)


def _frames(us, frame_ns):
    return 0.0 if us is None else us * 1e3 / frame_ns


def _pct(x):
    return round(x * 100, 2)
