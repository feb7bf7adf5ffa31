"""A finished run folder (CLI's or API's) as pandas DataFrames and its summary.json.

    results/<run-id>/summary.json                  {"presets": {variant: figures}, ...}
    results/<run-id>/<variant>/seed-<k>/<table>.parquet

A table of the result is every run's table of that name, one after the other, with the
run's `variant` and `seed` as its first columns (experiment/results.py says what each holds).
"""
import json
from pathlib import Path

import pandas as pd

from dlcp_emu.study.compare import FIGURES

TABLES = ("iterations", "tensors", "packets", "ports", "deliveries", "queues", "background")


class Result:
    """`path` (the run folder), `summary` (summary.json as a dict), the tables as DataFrames."""

    def __init__(self, path, summary=None):
        self.path = Path(path)
        self.summary = summary if summary is not None else _read_summary(self.path)
        self._tables = {}

    @classmethod
    def load(cls, path):
        """A run folder (or `results/latest`) written by `compare`, `simulate`, `run`, the API."""
        return cls(path)

    def __repr__(self):
        return (f"Result({str(self.path)!r}: {len(self.variants)} variant(s), {self.summary.get('runs')} "
                f"run(s), {'complete' if self.complete else 'incomplete'})")

    @property
    def complete(self):
        return bool(self.summary.get("complete"))

    @property
    def variants(self):
        """The variants' labels: presets, [variants] names, `<preset>,<field>=<value>`."""
        return list(self.summary.get("presets", {}))

    @property
    def failed(self):
        """[{"run", "seed", "error"}] of runs that raised on a cluster's worker."""
        return list(self.summary.get("failed", ()))

    @property
    def runs(self):
        """A row per run on disk: variant, seed, its folder."""
        rows = [{"variant": v, "seed": seed, "folder": folder} for v, seed, folder in self._runs()]
        return pd.DataFrame(rows, columns=["variant", "seed", "folder"])

    @property
    def figures(self):
        """A row per variant (its index): transport, the figures (means over its seeds),
        whether it completed and kept its loss bound."""
        rows = [{"variant": v, "transport": s.get("transport"), "seeds": len(s.get("per_seed") or [s]),
                 **{k: s.get(k) for k in FIGURES}, "completed": s.get("completed"),
                 "loss_within_bound": s.get("loss_within_bound")}
                for v, s in self.summary.get("presets", {}).items()]
        return pd.DataFrame(rows, columns=["variant", "transport", "seeds", *FIGURES, "completed",
                                           "loss_within_bound"]).set_index("variant")

    @property
    def per_seed(self):
        """A row per run: variant, seed and its own figures (the summary keeps them in the
        order of the seeds, whose folders name them)."""
        seeds = {}
        for variant, seed, _ in self._runs():
            seeds.setdefault(variant, []).append(seed)
        rows = []
        for v, s in self.summary.get("presets", {}).items():
            runs = s.get("per_seed") or [s]
            known = seeds.get(v, [])
            rows += [{"variant": v, "seed": known[i] if len(known) == len(runs) else None,
                      **{k: one.get(k) for k in FIGURES}, "completed": one.get("completed")}
                     for i, one in enumerate(runs)]
        return pd.DataFrame(rows, columns=["variant", "seed", *FIGURES, "completed"])

    @property
    def tables(self):
        """The tables' names these runs wrote."""
        names = {p.stem for _, _, folder in self._runs() for p in folder.glob("*.parquet")}
        return sorted(names, key=lambda n: (TABLES.index(n) if n in TABLES else len(TABLES), n))

    def table(self, name):
        """Every run's `<name>.parquet` with `variant` and `seed` first (read once, kept). A
        column some runs lack is empty (NaN) in their rows, but for the ports' drop counts."""
        if name not in self._tables:
            parts = []
            for variant, seed, folder in self._runs():
                path = folder / f"{name}.parquet"
                if path.is_file():
                    frame = pd.read_parquet(path)
                    frame.insert(0, "seed", seed)
                    frame.insert(0, "variant", variant)
                    parts.append(frame)
            if not parts:
                raise KeyError(f"no run of {self.path} has a {name!r} table; it has: {', '.join(self.tables)}")
            full = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)  # empty: dtype noise
            if name == "ports":   # a port table has a column per drop reason that run saw: none is 0
                drops = [c for c in full.columns if c.startswith("drop_")]
                full[drops] = full[drops].fillna(0).astype("int64")
            self._tables[name] = full
        return self._tables[name]

    iterations = property(lambda self: self.table("iterations"),
                          doc="Per worker and iteration: start, compute, communication, total (s).")
    tensors = property(lambda self: self.table("tensors"),
                       doc="Per worker, iteration and bucket: ready, done, completion time, bytes lost.")
    packets = property(lambda self: self.table("packets"),
                       doc="Per packet (when recorded): times, size, priority, class, fate.")
    ports = property(lambda self: self.table("ports"),
                     doc="Per switch port: counters, drops by reason, utilisation.")

    def _runs(self):
        """(variant, seed, folder) of every run on disk, in the summary's order, seeds ascending."""
        for variant in self.summary.get("presets", {}):
            folders = [p for p in (self.path / variant).glob("seed-*") if p.is_dir()]
            for folder in sorted(folders, key=lambda p: int(p.name.split("-", 1)[1])):
                yield variant, int(folder.name.split("-", 1)[1]), folder


def _read_summary(path):
    file = path / "summary.json"
    try:
        return json.loads(file.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no summary.json; a run folder is what `compare`, `simulate` "
                                "or `run` wrote (results/<run-id>, or results/latest)") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{file}: not JSON ({e})") from None
