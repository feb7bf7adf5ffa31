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
  acknowledgement that clocks the sender's window: the hosts' mean wait (stalls included: the
  median hides them) in host-link frame times, over the communicating share of the
  iteration (a large message is a stream of windows);
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

# Fitted on the calibration grid (docs/fidelity.md): the error of the mean iteration time
# (fraction) per frame time of mean host receive wait, and of switch p99 lateness, each over
# the iteration's communicating share; per mean wait paid on each critical step, over the
# iteration; and of the p99 tensor completion likewise.
ITERATION_PER_WAIT_FRAME = 0.10
ITERATION_PER_STEP_WAIT = 3.3
ITERATION_PER_SWITCH_FRAME = 0.0
FCT_PER_WAIT_FRAME = 0.10
FCT_PER_STEP_WAIT = 3.3
FCT_PER_SWITCH_FRAME = 0.0
FCT_PER_COMPUTE_STRETCH = 0.0   # tensor completion starts at a bucket's readiness, after compute


def estimate(fig, *, frame_ns, compute_share, steps=0, dilation=1.0, iteration_s=None):
    """{"iteration_pct", "fct_p99_pct", "terms": {name: {"iteration_pct", "fct_p99_pct"}}}
    from a run's fidelity figures `fig` (experiment/fidelity.py's keys: wall-clock us),
    `frame_ns` the wall-clock time of a full frame on a host link, `compute_share` the planned
    compute over the mean iteration time (the summary's scaling factor), `steps` the
    collective's steps an iteration (critical_steps), `iteration_s` the mean iteration,
    real-world. A figure the run did not measure (None) adds no term."""
    comm = max(0.0, 1.0 - compute_share)
    stretch = fig.get("host_compute_stretch")
    wait = _frames(fig.get("host_rx_lag_mean_us"), frame_ns)
    late = _frames(fig.get("p99_lateness_us"), frame_ns)
    lag_s = (fig.get("host_rx_lag_mean_us") or 0.0) * 1e-6 / dilation
    path = steps * lag_s / iteration_s if iteration_s else 0.0
    terms = {
        "host compute": (0.0 if stretch is None else stretch * compute_share,
                         0.0 if stretch is None else FCT_PER_COMPUTE_STRETCH * stretch),
        "host wait, windows": (ITERATION_PER_WAIT_FRAME * wait * comm, FCT_PER_WAIT_FRAME * wait),
        "host wait, steps": (ITERATION_PER_STEP_WAIT * path, FCT_PER_STEP_WAIT * path),
        "switch lateness": (ITERATION_PER_SWITCH_FRAME * late * comm, FCT_PER_SWITCH_FRAME * late),
    }
    out = {name: {"iteration_pct": _pct(it), "fct_p99_pct": _pct(fct)} for name, (it, fct) in terms.items()}
    return {"iteration_pct": _pct(sum(it for it, _ in terms.values())),
            "fct_p99_pct": _pct(sum(fct for _, fct in terms.values())),
            "terms": out}


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
