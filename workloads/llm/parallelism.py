"""How a model is trained in parallel, and the blocks each pipeline stage runs.

``Parallelism``: dp x tp x pp ranks (ep splits dp), the ZeRO stage (0: gradients
all-reduced; 1-2: gradients reduce-scattered and the updated parameters all-gathered; 3: also
the parameters all-gathered before every block's forward and backward), micro-batches of
``micro_batch_size`` sequences of ``seq_len`` tokens run 1F1B (``micro_batches`` per replica;
the global batch is dp x micro_batches x micro_batch_size), DDP-style gradient buckets of
``bucket_bytes`` (0: one a block), element sizes of activations, gradients and parameters.

``stage_blocks`` gives one rank's blocks of a stage: its share of the parameters (matrices
and the vocabulary split over tp, experts over ep; norms, row-parallel biases, position
embeddings and the router replicated, as Megatron keeps them) and its compute time per
micro-batch, forward, input gradient and weight gradient (``models`` says how FLOPs count).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from workloads.llm.gpus import Roofline
from workloads.llm.models import TransformerConfig
from workloads.schedule.layout import RankLayout


@dataclass(frozen=True)
class Parallelism:
    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    zero: int = 0
    micro_batches: int = 1
    micro_batch_size: int = 1
    seq_len: int = 2048
    bucket_bytes: int = 25 * 2**20  # torch DDP's default bucket_cap_mb = 25
    act_bytes: int = 2  # bf16 activations
    grad_bytes: int = 2  # bf16 gradients all-reduced
    param_bytes: int = 2  # bf16 parameters all-gathered
    gpus_per_server: int = 8

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            low = 0 if f.name in ("zero", "bucket_bytes") else 1
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"parallelism: {f.name} must be an integer >= {low}, got {v!r}")
        if self.zero > 3:
            raise ValueError(f"parallelism: zero must be 0, 1, 2 or 3, got {self.zero}")
        self.layout()  # checks ep | dp

    @classmethod
    def from_dict(cls, d: dict) -> "Parallelism":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"parallelism: unknown settings {sorted(unknown)}; allowed: "
                             f"{', '.join(sorted(known))}")
        return cls(**d)

    def layout(self) -> RankLayout:
        return RankLayout(self.dp, self.tp, self.pp, self.ep, self.gpus_per_server)

    @property
    def tokens(self) -> int:
        """Tokens of one micro-batch on one replica."""
        return self.micro_batch_size * self.seq_len


@dataclass(frozen=True)
class Block:
    name: str
    layer: int  # -1 embedding, model.layers the head
    part: str  # embed, attn, mlp, head
    params: int  # per rank, reduced over the dp group
    expert_params: int  # per rank, reduced over the edp group (MoE experts)
    fwd_us: float  # per micro-batch
    ig_us: float
    wg_us: float
    tp_fwd: bool  # a tensor-parallel all-reduce of the output in forward
    tp_bwd: bool  # ... of the input gradient in backward
    a2a: bool  # expert all-to-alls around it


def stage_blocks(model: TransformerConfig, par: Parallelism, gpu: Roofline,
                 stage: int) -> list[Block]:
    """The blocks stage ``stage`` runs, in forward order."""
    if model.layers % par.pp:
        raise ValueError(f"pp ({par.pp}) must divide the layers of {model.name} ({model.layers})")
    if model.heads % par.tp or model.ffn % par.tp:
        raise ValueError(f"tp ({par.tp}) must divide the heads ({model.heads}) and ffn "
                         f"({model.ffn}) of {model.name}")
    if model.experts % par.ep:
        raise ValueError(f"ep ({par.ep}) must divide the experts of {model.name} ({model.experts})")
    tp, t, h = par.tp, par.tokens, model.hidden
    per_stage = model.layers // par.pp
    norm = model.norm_params * h
    kv = (model.kv_heads or model.heads) * model.head_dim
    blocks = []
    if stage == 0:
        blocks.append(Block("embed", -1, "embed", model.vocab * h // tp + model.positions * h,
                            0, 0.0, 0.0, 0.0, True, False, False))
    attn_rep = norm + (h if model.bias else 0)  # the output projection's bias is replicated
    attn_mat = model.attention_matrix_params() + ((h + 2 * kv) if model.bias else 0)
    e_local = model.experts // par.ep
    exp_rep = h if model.bias else 0
    exp_mat = model.expert_params() - exp_rep
    for layer in range(stage * per_stage, (stage + 1) * per_stage):
        fa = t * model.attention_flops(par.seq_len) / tp
        scores = t * 4.0 * par.seq_len * h / tp  # their backward is twice their forward
        blocks.append(Block(f"L{layer}.attn", layer, "attn", attn_mat // tp + attn_rep, 0,
                            gpu.us(fa), gpu.us(fa + scores),
                            gpu.us(t * 2.0 * model.attention_matrix_params() / tp),
                            True, True, False))
        fm = t * model.mlp_flops() / tp
        mlp_rep = norm + model.router_params()
        ex = e_local * (exp_mat // tp + exp_rep)
        blocks.append(Block(f"L{layer}.mlp", layer, "mlp",
                            mlp_rep + (0 if model.moe else ex), ex if model.moe else 0,
                            gpu.us(fm), gpu.us(fm), gpu.us(fm), True, True,
                            model.moe and par.ep > 1))
    if stage == par.pp - 1:
        fh = t * model.head_flops() / tp
        own = model.vocab * h // tp if (not model.tied or par.pp > 1) else 0
        blocks.append(Block("head", model.layers, "head", norm + own, 0, gpu.us(fh),
                            gpu.us(fh), gpu.us(fh), False, True, False))
    return blocks


def one_f_one_b(pp: int, micro: int, stage: int) -> list[tuple[str, int]]:
    """PipeDream-Flush (1F1B) order of stage: warm-up forwards, then one forward one
    backward, then the remaining backwards; ("F" | "B", micro-batch)."""
    warm = min(pp - stage - 1, micro)
    order = [("F", j) for j in range(warm)]
    for j in range(micro - warm):
        order += [("F", warm + j), ("B", j)]
    return order + [("B", j) for j in range(micro - warm, micro)]
