"""Real per-layer traces from "Is Network the Bottleneck of Distributed Training?" (NetAI'20).

Files in ``workloads/traces/netai2020/`` (Apache-2.0, see LICENSE and NOTICE there) come from
netx-repo/training-bottleneck, measured on NVIDIA V100:

- ``<model>.bk.log``: line 1 a comment, line 2 the number of batches, line 3 the number of
  layers L, then L lines ``wait_us,bytes`` in backward order (last layer first): backward
  time before this gradient is ready, counted from the previous one, and its size.
- ``cuda_vec_add.log``: ``bytes,seconds``: GPU time to add two vectors of that size (the cost
  of one reduction step in all-reduce or at a parameter server).

What is measured and what is not, in the ``Trace`` this module builds:

- ``grad_bytes`` and ``backward_us``: measured (the log), reversed into forward order, so the
  first log line becomes the last layer_id.
- ``batch_time_us``: the single-GPU batch times of the paper's what-if analysis (NOTICE):
  resnet50 128.09 ms, resnet101 192.01 ms, vgg16 194.52 ms.
- ``forward_us``: NOT in the logs. Derived: forward total = batch time - total backward
  time (63.28 ms, 85.60 ms and 82.90 ms for the three models), split over layers in
  proportion to each layer's backward time (a layer's backward costs about twice its forward,
  so the shares carry over). The split is an assumption; the total is exact by construction.
- magnitudes: synthetic lognormal per layer (``workloads/synthetic.py``), not measured.
- ``name``: the torchvision parameter names (``workloads/architectures.py``). The log's sizes
  match torchvision's parameters in reverse registration order one for one; the "vgg16" trace
  is VGG-16 *with batch norm* (58 tensors, 138,365,992 parameters).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from workloads import architectures, synthetic
from workloads.trace import Trace

TRACE_DIR = Path(__file__).parent / "traces" / "netai2020"
BATCH_TIME_MS = {"resnet50": 128.09, "resnet101": 192.01, "vgg16": 194.52}
MODELS = tuple(BATCH_TIME_MS)
_ARCH = {"resnet50": lambda: architectures.resnet(50),
         "resnet101": lambda: architectures.resnet(101),
         "vgg16": architectures.vgg16_bn}


def read_bk_log(path: str | Path) -> tuple[int, pd.DataFrame]:
    """Parse a ``.bk.log`` -> (number of batches, DataFrame[wait_us, bytes] in file order,
    i.e. backward order)."""
    lines = Path(path).read_text().splitlines()
    batches, count = int(lines[1]), int(lines[2])
    rows = [line.split(",") for line in lines[3:] if line.strip()]
    if len(rows) != count:
        raise ValueError(f"{path}: header says {count} layers, found {len(rows)} lines")
    table = pd.DataFrame({"wait_us": [float(r[0]) for r in rows],
                          "bytes": [int(r[1]) for r in rows]})
    return batches, table


def load_netai2020(model: str) -> Trace:
    """The measured backward trace of ``model`` (one of MODELS) as a validated Trace."""
    if model not in BATCH_TIME_MS:
        raise KeyError(f"no netai2020 trace {model!r}; known: {', '.join(MODELS)}")
    batches, log = read_bk_log(TRACE_DIR / f"{model}.bk.log")
    fwd = log.iloc[::-1].reset_index(drop=True)  # forward order: first log line is last layer
    names = [t.name for t in _ARCH[model]()]
    sizes = [t.numel * synthetic.BYTES_PER_PARAM for t in _ARCH[model]()]
    if sizes != fwd["bytes"].tolist():  # the logs carry no names; only trust a full match
        names = [f"layer{i}" for i in range(len(fwd))]
    batch_us = BATCH_TIME_MS[model] * 1000.0
    backward = fwd["wait_us"].to_numpy()
    forward = synthetic.split_by_weight(batch_us - backward.sum(), backward)
    layers = pd.DataFrame({"layer_id": np.arange(len(fwd)), "name": names,
                           "grad_bytes": fwd["bytes"].to_numpy(), "backward_us": backward,
                           "forward_us": forward,
                           **synthetic.lognormal_magnitudes(fwd["bytes"].to_numpy())})
    meta = {"source": "netx-repo/training-bottleneck (NetAI'20), V100, Apache-2.0",
            "synthetic": "forward_us (batch time - backward, split by backward time); "
                         "magnitudes (lognormal, assumed)",
            "batches": str(batches)}
    return Trace(model, layers, batch_us, meta=meta).validate()


@lru_cache(maxsize=1)
def _vec_add_points() -> tuple[np.ndarray, np.ndarray]:
    table = vec_add_table()
    return table["bytes"].to_numpy(float), table["seconds"].to_numpy(float)


def vec_add_table() -> pd.DataFrame:
    """``cuda_vec_add.log`` as DataFrame[bytes, seconds], sorted by bytes."""
    table = pd.read_csv(TRACE_DIR / "cuda_vec_add.log", header=None, names=["bytes", "seconds"])
    return table.sort_values("bytes").reset_index(drop=True)


def vec_add_seconds(nbytes):
    """GPU time to add two vectors of ``nbytes`` (scalar or array): linear interpolation in the
    table; below it, the smallest entry (a fixed launch cost); above it, linear extrapolation
    at the last segment's bytes/s."""
    xs, ys = _vec_add_points()
    n = np.asarray(nbytes, dtype=float)
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    out = np.where(n > xs[-1], ys[-1] + (n - xs[-1]) * slope, np.interp(n, xs, ys))
    return float(out) if out.ndim == 0 else out
