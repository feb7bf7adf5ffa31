"""One training iteration of a transformer as a Schedule: ``llm_schedule(model, par, gpu)``.

Every rank of a pipeline stage runs the same ops, so each stage's ops are built once (groups
as kinds, peers as "previous"/"next" stage) and copied to its ranks with numpy, the group ids
and peers filled in from the rank layout. Per micro-batch, in 1F1B order:

forward: recv the activation from the previous stage; per block (ZeRO-3: all-gather its
parameters first) the forward compute, then (tp > 1) the all-reduce of its output
(activation; the expert block: all-to-all dispatch before, combine after, ep > 1); send the
activation on. Backward, blocks reversed: recv the activation gradient; per block the
input-gradient compute (ZeRO-3: after all-gathering its parameters again), the all-reduce
of the input gradient (activation-gradient) beside the weight-gradient compute; send the
activation gradient back when the stage's backward is done (weight gradients too, as
Megatron's backward step returns). One compute stream: each compute op waits for the one before.

Gradients: in the last micro-batch's backward each block's gradient joins a DDP bucket;
a full bucket (>= bucket_bytes) is all-reduced (ZeRO 0) or reduce-scattered (ZeRO >= 1) over
the dp group (experts: edp) while backward goes on; buckets go in order (one communication
stream). ZeRO 1-2 then all-gather the updated parameters, bucket by bucket. Tied embeddings
split over pipeline stages all-reduce their gradient between the first and last stage.
"""

from __future__ import annotations

import numpy as np

from workloads.llm.gpus import Roofline
from workloads.llm.models import TransformerConfig
from workloads.llm.parallelism import Block, Parallelism, one_f_one_b, stage_blocks
from workloads.schedule.layout import GROUP_KINDS
from workloads.schedule.ops import OpKind as K
from workloads.schedule.ops import RankOps, Schedule, assemble
from workloads.schedule.ops import TrafficClass as C

TP, PP, DP, EP, EDP, EMBED = (GROUP_KINDS.index(k) for k in GROUP_KINDS)
PREV, NEXT = 0, 1  # peer codes in a stage's ops before they are copied to ranks


class _Buckets:
    """DDP-style gradient buckets of one group kind, flushed when full."""

    def __init__(self, ops: RankOps, par: Parallelism, group: int, chain: list[int],
                 size: int):
        self.ops, self.par, self.group, self.chain = ops, par, group, chain
        self.alone = size == 1  # nothing to reduce with
        self.params, self.names, self.done = 0, [], []

    def add(self, name: str, params: int, after: int) -> None:
        if params <= 0 or self.alone:
            return
        self.params += params
        self.names.append(name)
        if self.params * self.par.grad_bytes >= self.par.bucket_bytes:
            self.flush(after)

    def flush(self, after: int) -> None:
        if not self.params:
            return
        kind = K.ALL_REDUCE if self.par.zero == 0 else K.REDUCE_SCATTER
        label = f"grad {GROUP_KINDS[self.group]} {kind.label} [{self.names[0]}..{self.names[-1]}]"
        op = self.ops.add(kind, label, [after, self.chain[0]], group=self.group,
                          nbytes=self.params * self.par.grad_bytes, tclass=C.GRADIENT)
        self.chain[0] = op
        self.done.append((op, self.params, label))
        self.params, self.names = 0, []


def _stage_ops(model: TransformerConfig, par: Parallelism, blocks: list[Block], stage: int,
               labels: dict) -> RankOps:
    ops = RankOps(labels)
    p, last_micro = par.pp, par.micro_batches - 1
    act = par.tokens * model.hidden * par.act_bytes
    a2a = act * model.top_k
    tp_on = par.tp > 1
    chain = [-1]  # the communication stream of gradient and parameter collectives
    zchain = -1  # ZeRO-3 parameter all-gathers, prefetched in order
    groups = {"dp": _Buckets(ops, par, DP, chain, par.dp),
              "edp": _Buckets(ops, par, EDP, chain, par.dp // par.ep)}
    compute = -1

    def gather(blk: Block, what: str, j: int) -> int:
        nonlocal zchain
        if par.zero < 3 or par.dp == 1 or not blk.params:
            return -1
        zchain = ops.add(K.ALL_GATHER, f"{what} params {blk.name} mb{j}", [zchain], group=DP,
                         nbytes=blk.params * par.param_bytes, tclass=C.PARAMETERS,
                         layer=blk.layer, micro=j)
        return zchain

    for phase, j in one_f_one_b(p, par.micro_batches, stage):
        kw = {"micro": j}
        if phase == "F":
            dep = -1
            if stage > 0:
                dep = ops.add(K.RECV, f"recv act mb{j}", peer=PREV, tag=2 * j, nbytes=act,
                              tclass=C.ACTIVATION, **kw)
            for blk in blocks:
                kw["layer"] = blk.layer
                g = gather(blk, "fwd", j)
                if blk.a2a:
                    dep = ops.add(K.ALL_TO_ALL, f"dispatch {blk.name} mb{j}", [dep], group=EP,
                                  nbytes=a2a, tclass=C.ALL_TO_ALL, **kw)
                compute = dep = ops.add(K.COMPUTE, f"fwd {blk.name} mb{j}", [compute, dep, g],
                                        duration_us=blk.fwd_us, **kw)
                if blk.a2a:
                    dep = ops.add(K.ALL_TO_ALL, f"combine {blk.name} mb{j}", [dep], group=EP,
                                  nbytes=a2a, tclass=C.ALL_TO_ALL, **kw)
                if blk.tp_fwd and tp_on:
                    dep = ops.add(K.ALL_REDUCE, f"tp fwd {blk.name} mb{j}", [dep], group=TP,
                                  nbytes=act, tclass=C.ACTIVATION, **kw)
            kw.pop("layer", None)
            if stage < p - 1:
                ops.add(K.SEND, f"send act mb{j}", [dep], peer=NEXT, tag=2 * j, nbytes=act,
                        tclass=C.ACTIVATION, **kw)
            continue
        if stage < p - 1:
            dep = ops.add(K.RECV, f"recv act-grad mb{j}", peer=NEXT, tag=2 * j + 1, nbytes=act,
                          tclass=C.ACTIVATION_GRADIENT, **kw)
        for blk in reversed(blocks):
            kw["layer"] = blk.layer
            g = gather(blk, "bwd", j)
            if blk.a2a:
                dep = ops.add(K.ALL_TO_ALL, f"combine-grad {blk.name} mb{j}", [dep], group=EP,
                              nbytes=a2a, tclass=C.ALL_TO_ALL, **kw)
            ig = dep = ops.add(K.COMPUTE, f"ig {blk.name} mb{j}", [compute, dep, g],
                               duration_us=blk.ig_us, **kw)
            if blk.a2a:
                dep = ops.add(K.ALL_TO_ALL, f"dispatch-grad {blk.name} mb{j}", [dep], group=EP,
                              nbytes=a2a, tclass=C.ALL_TO_ALL, **kw)
            if blk.tp_bwd and tp_on:
                dep = ops.add(K.ALL_REDUCE, f"tp bwd {blk.name} mb{j}", [dep], group=TP,
                              nbytes=act, tclass=C.ACTIVATION_GRADIENT, **kw)
            compute = ops.add(K.COMPUTE, f"wg {blk.name} mb{j}", [ig], duration_us=blk.wg_us,
                              **kw)
            if j == last_micro:
                groups["dp"].add(blk.name, blk.params, compute)
                groups["edp"].add(blk.name, blk.expert_params, compute)
        kw.pop("layer", None)
        if stage > 0:
            ops.add(K.SEND, f"send act-grad mb{j}", [dep, compute], peer=PREV, tag=2 * j + 1, nbytes=act,
                    tclass=C.ACTIVATION_GRADIENT, **kw)
    for b in groups.values():
        b.flush(compute)
    if model.tied and p > 1 and stage in (0, p - 1):
        chain[0] = ops.add(K.ALL_REDUCE, "tied embedding grad", [compute, chain[0]],
                           group=EMBED, nbytes=model.vocab * model.hidden // par.tp
                           * par.grad_bytes, tclass=C.GRADIENT)
    if 1 <= par.zero <= 2:
        for b in groups.values():
            for rs, params, label in b.done:
                chain[0] = ops.add(K.ALL_GATHER, label.replace("grad", "params").replace(
                    "reduce-scatter", "all-gather"), [rs, chain[0]], group=b.group,
                    nbytes=params * par.param_bytes, tclass=C.PARAMETERS)
    return ops


def llm_schedule(model: TransformerConfig, par: Parallelism, gpu: Roofline | None = None
                 ) -> Schedule:
    """The schedule of one iteration of ``model`` trained as ``par`` says on ``gpu``."""
    gpu = gpu or Roofline()
    layout = par.layout()
    table = layout.group_table()
    ranks = np.arange(layout.n_ranks)
    dp_i, pp_i, tp_i = layout.coords(ranks)
    labels: dict[str, int] = {}
    per_rank: list = [None] * layout.n_ranks
    for stage in range(par.pp):
        tmpl = _stage_ops(model, par, stage_blocks(model, par, gpu, stage), stage, labels)
        cols, dep_ptr, dep_idx = tmpl.arrays()
        gkind, peer = cols["group"], cols["peer"]
        has_g, has_p = gkind >= 0, peer >= 0
        for r in ranks[pp_i == stage]:
            c = dict(cols)
            c["group"] = np.where(has_g, table[r, np.maximum(gkind, 0)], -1).astype(np.int32)
            nbr = [layout.rank(dp_i[r], stage - 1, tp_i[r]), layout.rank(dp_i[r], stage + 1, tp_i[r])]
            c["peer"] = np.where(has_p, np.take(nbr, np.maximum(peer, 0)), -1).astype(np.int32)
            per_rank[r] = (c, dep_ptr, dep_idx)
    meta = {"generator": "workloads.llm.llm_schedule", "model": model.name,
            "params": model.params(), "gpu": gpu.gpu, "efficiency": gpu.efficiency,
            "parallelism": {f: getattr(par, f) for f in par.__dataclass_fields__}}
    return assemble(layout.n_ranks, per_rank, layout.groups, layout.group_names, labels, meta)
