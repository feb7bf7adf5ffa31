"""Model zoo: ``get_model(name) -> Trace`` for every model the experiments can name.

- ``resnet50``, ``resnet101``, ``vgg16``: the measured NetAI'20 traces (``netai2020.py``;
  forward times and magnitudes there are derived/synthetic, as it documents).
- ``bert-base``, ``gpt2-small``: gradient sizes from the architecture (parameter count x 4
  bytes, float32, one row per parameter tensor; ``architectures.py``), compute times
  SYNTHETIC: an assumed batch time split over tensors in proportion to their FLOPs, 1/3
  forward and 2/3 backward. The assumed batch times are the FLOPs of one iteration at an
  assumed sustained 40 TFLOP/s (a V100-class GPU in mixed precision at about a third of peak):
    bert-base   batch 32 x seq 128  (4,096 tokens)  2.15 TFLOP  -> 54 ms
    gpt2-small  batch 8 x seq 1024  (8,192 tokens)  7.00 TFLOP  -> 175 ms (incl. tied LM head)
  Magnitudes are synthetic lognormal (``synthetic.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from workloads import architectures, netai2020, synthetic
from workloads.trace import Trace


@dataclass(frozen=True)
class SyntheticSpec:
    tensors: Callable[[], list[architectures.Tensor]]
    batch_time_ms: float  # assumed, see module doc
    workload: str  # what the batch time assumes


_SYNTHETIC = {
    "bert-base": SyntheticSpec(lambda: architectures.bert_base(seq_len=128), 54.0,
                               "BertModel (with pooler), batch 32 x seq 128, 40 TFLOP/s"),
    "gpt2-small": SyntheticSpec(lambda: architectures.gpt2_small(seq_len=1024), 175.0,
                                "GPT2Model + tied LM head, batch 8 x seq 1024, 40 TFLOP/s"),
}


def list_models() -> list[str]:
    return sorted([*netai2020.MODELS, *_SYNTHETIC])


def get_model(name: str) -> Trace:
    """A fresh, validated Trace of a known model; unknown names raise KeyError listing them."""
    if name in netai2020.MODELS:
        return netai2020.load_netai2020(name)
    if name in _SYNTHETIC:
        spec = _SYNTHETIC[name]
        return synthetic_trace(name, spec.tensors(), spec.batch_time_ms,
                               note=f"batch time assumed: {spec.workload}")
    raise KeyError(f"unknown model {name!r}; known models: {', '.join(list_models())}")


def synthetic_trace(model: str, tensors: list[architectures.Tensor], batch_time_ms: float,
                    note: str = "") -> Trace:
    """Trace with exact gradient sizes and FLOP-proportional synthetic compute times."""
    nbytes = np.array([t.numel * synthetic.BYTES_PER_PARAM for t in tensors], dtype=np.int64)
    flops = np.array([t.fwd_flops_per_token for t in tensors])
    batch_us = batch_time_ms * 1000.0
    layers = pd.DataFrame({
        "layer_id": np.arange(len(tensors)), "name": [t.name for t in tensors],
        "grad_bytes": nbytes,
        "backward_us": synthetic.split_by_weight(batch_us * 2 / 3, flops),
        "forward_us": synthetic.split_by_weight(batch_us / 3, flops),
        **synthetic.lognormal_magnitudes(nbytes)})
    meta = {"source": "architecture parameter shapes (float32 gradients)",
            "synthetic": "backward_us, forward_us (FLOP-proportional split of an assumed "
                         f"batch time); magnitudes (lognormal, assumed). {note}".strip()}
    return Trace(model, layers, batch_us, meta=meta).validate()


def trace_of(workload):
    """The trace a spec's workload table names: its `trace` file, else the zoo `model`."""
    from workloads.trace import load_trace
    return load_trace(workload["trace"]) if workload.get("trace") else get_model(workload["model"])
