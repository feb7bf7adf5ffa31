"""Transformer configurations and what follows from them: parameters and FLOPs per block.

Parameter counts are computed from the architecture (hidden size h, layers, heads and
key/value heads, FFN size, vocabulary, experts) and held against the published counts
(``published_params``, from the papers named below) by the tests, within 3%.

A layer is two blocks, each with one tensor-parallel all-reduce each way (Megatron):
- attention: q and o (h x h), k and v (h x kv_heads * head_dim), biases if ``bias``, the
  block's norm;
- MLP: gated (SwiGLU: 3 x h x ffn) or not (2 x h x ffn, GELU), biases if ``bias``, its norm;
  a mixture of experts has ``experts`` such MLPs and a router (h x experts), and each token
  runs ``top_k`` of them.
Embeddings: vocab x h (+ learned positions); the LM head is tied to them or its own matrix.

FLOPs per token (forward): 2 x the matrix parameters a token uses (multiply-add), plus the
attention scores and weighted sum, 4 x seq_len x h per layer (Megatron's count, no causal
discount), plus the LM head 2 x vocab x h. Backward = 2 x forward, split into the input
gradient (the same matmuls transposed, and twice the attention scores' forward) and
the weight gradient (2 x the matrix parameters, the rest): the classic 6 x params x tokens.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TransformerConfig:
    name: str
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    kv_heads: int | None = None  # grouped-query attention; None = heads
    gated: bool = True  # SwiGLU MLP (LLaMA, Mixtral); False = GELU (GPT)
    bias: bool = False
    norm_params: int = 1  # per norm: h (RMSNorm) or 2 (LayerNorm: weight and bias) times h
    tied: bool = False  # the LM head shares the embedding matrix
    positions: int = 0  # learned position embeddings (GPT) or 0 (rotary)
    experts: int = 1
    top_k: int = 1
    published_params: float = 0.0
    source: str = ""

    def __post_init__(self):
        for f in ("hidden", "layers", "heads", "ffn", "vocab", "experts", "top_k"):
            if getattr(self, f) < 1:
                raise ValueError(f"{self.name}: {f} must be >= 1")
        if self.hidden % self.heads or self.heads % (self.kv_heads or self.heads):
            raise ValueError(f"{self.name}: heads must divide hidden, kv_heads divide heads")
        if self.top_k > self.experts:
            raise ValueError(f"{self.name}: top_k ({self.top_k}) > experts ({self.experts})")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def moe(self) -> bool:
        return self.experts > 1

    # ---- parameters -------------------------------------------------------------------
    def attention_matrix_params(self) -> int:
        h, kv = self.hidden, (self.kv_heads or self.heads) * self.head_dim
        return 2 * h * h + 2 * h * kv

    def attention_params(self) -> int:
        h, kv = self.hidden, (self.kv_heads or self.heads) * self.head_dim
        bias = (2 * h + 2 * kv) if self.bias else 0
        return self.attention_matrix_params() + bias + self.norm_params * h

    def expert_matrix_params(self) -> int:
        return (3 if self.gated else 2) * self.hidden * self.ffn

    def expert_params(self) -> int:
        """One expert (or the dense MLP) without the block's norm and router."""
        bias = (self.ffn * (2 if self.gated else 1) + self.hidden) if self.bias else 0
        return self.expert_matrix_params() + bias

    def router_params(self) -> int:
        return self.hidden * self.experts if self.moe else 0

    def mlp_params(self) -> int:
        """The whole MLP block: every expert, the router, the norm."""
        return self.experts * self.expert_params() + self.router_params() \
            + self.norm_params * self.hidden

    def embedding_params(self) -> int:
        return (self.vocab + self.positions) * self.hidden

    def head_params(self) -> int:
        """The final norm and, if untied, the LM head matrix."""
        return self.norm_params * self.hidden + (0 if self.tied else self.vocab * self.hidden)

    def params(self) -> int:
        return self.layers * (self.attention_params() + self.mlp_params()) \
            + self.embedding_params() + self.head_params()

    def active_params(self) -> int:
        """What one token uses (MoE: top_k experts)."""
        return self.params() - self.layers * (self.experts - self.top_k) * self.expert_params()

    # ---- FLOPs per token, forward ------------------------------------------------------
    def attention_flops(self, seq_len: int) -> float:
        return 2.0 * self.attention_matrix_params() + 4.0 * seq_len * self.hidden

    def mlp_flops(self) -> float:
        return 2.0 * (self.top_k * self.expert_matrix_params() + self.router_params())

    def head_flops(self) -> float:
        return 2.0 * self.vocab * self.hidden


# Published counts: GPT-3 paper (Brown et al. 2020, Table 2.1: "GPT-3 XL", 1.3B); LLaMA
# (Touvron et al. 2023: 6.7B, 13.0B); Llama 2 (Touvron et al. 2023: 70B, grouped-query
# attention with 8 key/value heads); Mixtral of Experts (Jiang et al. 2024: 46.7B total,
# 12.9B active per token).
ZOO: dict[str, TransformerConfig] = {c.name: c for c in [
    TransformerConfig("gpt3-1.3b", hidden=2048, layers=24, heads=16, ffn=8192, vocab=50257,
                      gated=False, bias=True, norm_params=2, tied=True, positions=2048,
                      published_params=1.3e9, source="GPT-3 XL, Brown et al. 2020"),
    TransformerConfig("llama-7b", hidden=4096, layers=32, heads=32, ffn=11008, vocab=32000,
                      published_params=6.7e9, source="LLaMA, Touvron et al. 2023"),
    TransformerConfig("llama-13b", hidden=5120, layers=40, heads=40, ffn=13824, vocab=32000,
                      published_params=13.0e9, source="LLaMA, Touvron et al. 2023"),
    TransformerConfig("llama-70b", hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672,
                      vocab=32000, published_params=70e9, source="Llama 2, Touvron et al. 2023"),
    TransformerConfig("mixtral-8x7b", hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336,
                      vocab=32000, experts=8, top_k=2, published_params=46.7e9,
                      source="Mixtral of Experts, Jiang et al. 2024 (12.9B active)"),
]}


def get_config(name: str) -> TransformerConfig:
    if name not in ZOO:
        raise KeyError(f"unknown transformer {name!r}; known: {', '.join(ZOO)}")
    return ZOO[name]
