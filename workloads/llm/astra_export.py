"""A generated transformer workload written as an ASTRA-sim / SimAI per-layer text workload,
or through mlc-chakra's text converter as Chakra execution traces (`to_chakra`).

One text layer a block (embedding, each layer's attention and MLP, the head), with the same
compute times (integer nanoseconds) and collective sizes that ``llm_schedule`` gives one rank:
forward all-reduce of the block's output and backward all-reduce of its input gradient on
the tensor-parallel group, gradient all-reduce on the data-parallel group. The text format
has neither pipelines nor micro-batches, experts nor ZeRO, so only pp = 1, one micro-batch,
ep = 1, ZeRO 0 and one gradient bucket a block (bucket_bytes = 0) are written; anything else
is an error. Importing the text (``workloads.importers.astra_text``) must then give the same
ideal iteration time as the generated schedule: a test holds them together.
"""

from __future__ import annotations

from workloads.llm.gpus import Roofline
from workloads.llm.models import TransformerConfig
from workloads.importers.astra_text import UNITS
from workloads.llm.parallelism import Parallelism, stage_blocks


def to_astra_text(model: TransformerConfig, par: Parallelism, gpu: Roofline | None = None,
                  time_unit: str = "ns") -> str:
    """The text; compute times in integer ``time_unit`` ("ns", ASTRA-sim's ticks, or "us")."""
    if time_unit not in UNITS:   # the importer's units: what it reads back, this writes
        raise ValueError(f"time_unit: {time_unit!r} unknown; allowed: {', '.join(UNITS)}")
    per_us = 1 / UNITS[time_unit]
    gpu = gpu or Roofline()
    wrong = {k: v for k, v in [("pp", par.pp), ("micro_batches", par.micro_batches),
                               ("ep", par.ep), ("zero", par.zero),
                               ("bucket_bytes", par.bucket_bytes)]
             if v != (0 if k in ("zero", "bucket_bytes") else 1)}
    if wrong:
        raise ValueError(f"the text format holds pp 1, micro_batches 1, ep 1, zero 0, "
                         f"bucket_bytes 0 only; got {wrong}")
    act = par.tokens * model.hidden * par.act_bytes
    rows = []
    for b in stage_blocks(model, par, gpu, 0):
        fwd = ("ALLREDUCE", act) if b.tp_fwd and par.tp > 1 else ("NONE", 0)
        ig = ("ALLREDUCE", act) if b.tp_bwd and par.tp > 1 else ("NONE", 0)
        wg = ("ALLREDUCE", b.params * par.grad_bytes) if par.dp > 1 and b.params else ("NONE", 0)
        rows.append(f"{b.name} -1 {round(b.fwd_us * per_us)} {fwd[0]} {fwd[1]} "
                    f"{round(b.ig_us * per_us)} {ig[0]} {ig[1]} {round(b.wg_us * per_us)} "
                    f"{wg[0]} {wg[1]} 0")
    head = (f"HYBRID_TRANSFORMER model_parallel_NPU_group: {par.tp} ep: 1 pp: 1 vpp: 1 ga: 1 "
            f"all_gpus: {par.dp * par.tp}")
    return "\n".join([head, str(len(rows)), *rows]) + "\n"


def to_chakra(model: TransformerConfig, par: Parallelism, prefix, gpu: Roofline | None = None) -> list:
    """The same workload as Chakra execution traces, ``<prefix>.<rank>.et`` for every rank,
    written by mlc-chakra's own text converter (the text with compute times in microseconds,
    Chakra's unit, rounded to whole ones; ``HYBRID_DATA_MODEL``, the converter's name for
    this layout). The converter names no process groups: import with the rank layout
    (``load_chakra(..., layout=RankLayout(dp, tp), class_groups=TP_CLASS_GROUPS)``, or
    ``tp`` in a spec). Returns the files, rank 0 first."""
    import tempfile
    from pathlib import Path

    from chakra.src.converter.text_converter import TextConverter

    head, *rest = to_astra_text(model, par, gpu, time_unit="us").split("\n", 1)
    text = head.replace("HYBRID_TRANSFORMER", "HYBRID_DATA_MODEL", 1) + "\n" + rest[0]
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)   # after the text: a refused one writes nothing
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "workload.txt"
        src.write_text(text)
        TextConverter(str(src), str(prefix), par.dp * par.tp, 1).convert()
    return [Path(f"{prefix}.{r}.et") for r in range(par.dp * par.tp)]
