"""The accuracy side of a run that trains (spec `[training]`): the held-out accuracy table and
the `accuracy` figures of summary.json.

    accuracy.parquet   per worker and evaluation: iteration, time (real-world s), accuracy, loss

The baseline is the same training in one process on the same batches, with nothing lost or
compressed (`host.training.reference`): what a lossless network gives, seed for seed.
"""
import pandas as pd

from dlcp_emu.host.training import TrainingSpec, reference, trace_of_training

COLUMNS = ["rank", "iteration", "t_s", "accuracy", "loss"]


def training_of(spec):
    """The run's TrainingSpec, or None when it replays a trace."""
    return None if spec.training is None else TrainingSpec(**spec.training)


def trace_for(spec):
    """The trace the agents replay: the trained model's layers, or the workload's trace."""
    from workloads import trace_of
    t = training_of(spec)
    return trace_of(spec.workload) if t is None else trace_of_training(t)


def add_accuracy(spec, records, scale, s, frames, t0_ns=0):
    """What both backends add for a run that trains: the accuracy table and figures."""
    if spec.training is not None:
        frames["accuracy"] = accuracy_table(records, scale, t0_ns)
        s["accuracy"] = accuracy_summary(spec, frames["accuracy"])


def accuracy_table(records, scale, t0_ns=0):
    """records: the hosts' record dicts, with `accuracy` lists from training workers."""
    rows = [{"rank": rec["rank"], "iteration": e["iteration"],
             "t_s": (e["t_ns"] - t0_ns) * scale.s_per_ns, "accuracy": e["accuracy"],
             "loss": e["loss"]}
            for rec in records for e in rec.get("accuracy", [])]
    return pd.DataFrame(rows, columns=COLUMNS)


def accuracy_summary(spec, table):
    """Final accuracy (mean over the replicas that finished), the lossless baseline's, the
    difference, and when each first reached the target: iterations, and for the run its
    real-world time; the held-out cross-entropy of both, which moves before accuracy does."""
    t = training_of(spec)
    iterations = spec.workload["iterations"]
    _, ref = reference(t, spec.workload["workers"], spec.seed, iterations)
    base = ref[-1]["accuracy"] if ref else None
    ref_hit = _first(((e["iteration"], e["accuracy"]) for e in ref), t.target_accuracy)
    out = {"target": t.target_accuracy, "baseline": base,
           "baseline_loss": ref[-1]["loss"] if ref else None, "final_loss": None,
           "baseline_iterations_to_target": None if ref_hit is None else ref_hit + 1,
           "final": None, "difference": None, "iterations_to_target": None,
           "time_to_target_s": None, "replica_spread": None}
    if not len(table):
        return out
    curve = table.groupby("iteration").agg(accuracy=("accuracy", "mean"), t_s=("t_s", "mean"),
                                           ranks=("rank", "nunique")).sort_index()
    hit = _first(curve["accuracy"].items(), t.target_accuracy)
    last = table[table["iteration"] == iterations - 1]
    if len(last):
        out["final"] = float(last["accuracy"].mean())
        out["final_loss"] = float(last["loss"].mean())
        out["difference"] = out["final"] - base
        out["replica_spread"] = float(last["accuracy"].max() - last["accuracy"].min())
    if hit is not None:
        out["iterations_to_target"] = hit + 1
        out["time_to_target_s"] = float(curve.loc[hit, "t_s"])
    return out


def _first(pairs, target):
    """The first iteration whose accuracy reaches target (None if none does)."""
    return next((int(i) for i, a in pairs if a >= target), None)
