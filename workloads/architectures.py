"""Parameter tensors of known architectures, in forward (registration) order.

Names and shapes follow torchvision (``resnet50``, ``resnet101``, ``vgg16_bn``) and Hugging
Face transformers (``BertModel`` with pooler, ``GPT2Model``), so sizes can be checked against
the published parameter counts: ResNet-50 25,557,032; ResNet-101 44,549,160; VGG-16-BN
138,365,992; BERT-base 109,482,240; GPT-2 small 124,439,808.

Transformer tensors also carry ``fwd_flops_per_token``: forward FLOPs per token attributed to
the tensor, used only to give zoo models synthetic compute times (see ``zoo.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    fwd_flops_per_token: float = 0.0

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _bn(prefix: str, c: int) -> list[Tensor]:
    return [Tensor(f"{prefix}.weight", (c,)), Tensor(f"{prefix}.bias", (c,))]


def resnet(depth: int) -> list[Tensor]:
    """torchvision ResNet-50/101 (Bottleneck blocks, 1000 classes)."""
    blocks = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3)}[depth]
    out = [Tensor("conv1.weight", (64, 3, 7, 7)), *_bn("bn1", 64)]
    inplanes = 64
    for stage, (planes, count) in enumerate(zip((64, 128, 256, 512), blocks), start=1):
        for b in range(count):
            p = f"layer{stage}.{b}"
            out += [Tensor(f"{p}.conv1.weight", (planes, inplanes, 1, 1)), *_bn(f"{p}.bn1", planes),
                    Tensor(f"{p}.conv2.weight", (planes, planes, 3, 3)), *_bn(f"{p}.bn2", planes),
                    Tensor(f"{p}.conv3.weight", (planes * 4, planes, 1, 1)),
                    *_bn(f"{p}.bn3", planes * 4)]
            if b == 0:
                out += [Tensor(f"{p}.downsample.0.weight", (planes * 4, inplanes, 1, 1)),
                        *_bn(f"{p}.downsample.1", planes * 4)]
            inplanes = planes * 4
    return out + [Tensor("fc.weight", (1000, 2048)), Tensor("fc.bias", (1000,))]


def vgg16_bn() -> list[Tensor]:
    """torchvision VGG-16 with batch norm (the netai2020 'vgg16' trace has its 58 tensors)."""
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
           512, 512, 512, "M"]
    out: list[Tensor] = []
    idx, cin = 0, 3
    for v in cfg:
        if v == "M":
            idx += 1
            continue
        out += [Tensor(f"features.{idx}.weight", (v, cin, 3, 3)),
                Tensor(f"features.{idx}.bias", (v,)), *_bn(f"features.{idx + 1}", v)]
        idx, cin = idx + 3, v  # conv, bn, relu
    for i, (fin, fout) in zip((0, 3, 6), ((512 * 7 * 7, 4096), (4096, 4096), (4096, 1000))):
        out += [Tensor(f"classifier.{i}.weight", (fout, fin)),
                Tensor(f"classifier.{i}.bias", (fout,))]
    return out


# FLOPs per token: a dense weight costs 2 * numel (multiply-add), biases and LayerNorms a few
# per element, embeddings are lookups (0). Attention scores and the weighted sum cost
# 4 * seq_len * d per token and layer; they run between the output projection's and the
# q/k/v gradients in backward, so they are attributed to the value projection.
def _dense(name: str, fout: int, fin: int, extra: float = 0.0) -> list[Tensor]:
    return [Tensor(f"{name}.weight", (fout, fin), 2.0 * fout * fin + extra),
            Tensor(f"{name}.bias", (fout,), float(fout))]


def _ln(name: str, d: int) -> list[Tensor]:
    return [Tensor(f"{name}.weight", (d,), 4.0 * d), Tensor(f"{name}.bias", (d,), float(d))]


def bert_base(seq_len: int = 128, vocab: int = 30522, d: int = 768, layers: int = 12,
              ffn: int = 3072, max_pos: int = 512) -> list[Tensor]:
    """Hugging Face BertModel (bert-base-uncased) including the pooler."""
    out = [Tensor("embeddings.word_embeddings.weight", (vocab, d)),
           Tensor("embeddings.position_embeddings.weight", (max_pos, d)),
           Tensor("embeddings.token_type_embeddings.weight", (2, d)),
           *_ln("embeddings.LayerNorm", d)]
    attn = 4.0 * seq_len * d
    for i in range(layers):
        p = f"encoder.layer.{i}"
        out += [*_dense(f"{p}.attention.self.query", d, d),
                *_dense(f"{p}.attention.self.key", d, d),
                *_dense(f"{p}.attention.self.value", d, d, extra=attn),
                *_dense(f"{p}.attention.output.dense", d, d),
                *_ln(f"{p}.attention.output.LayerNorm", d),
                *_dense(f"{p}.intermediate.dense", ffn, d),
                *_dense(f"{p}.output.dense", d, ffn),
                *_ln(f"{p}.output.LayerNorm", d)]
    # the pooler runs on the first token only: per-token cost divided by seq_len
    out += [Tensor("pooler.dense.weight", (d, d), 2.0 * d * d / seq_len),
            Tensor("pooler.dense.bias", (d,), d / seq_len)]
    return out


def gpt2_small(seq_len: int = 1024, vocab: int = 50257, d: int = 768, layers: int = 12,
               n_ctx: int = 1024) -> list[Tensor]:
    """Hugging Face GPT2Model (gpt2). The language-model head is tied to ``wte`` (counted
    once); its matmul (2 * vocab * d per token) runs after ``ln_f`` in forward and first in
    backward, so its FLOPs are attributed to ``ln_f.bias``, the first gradient of backward."""
    out = [Tensor("wte.weight", (vocab, d)), Tensor("wpe.weight", (n_ctx, d))]
    attn = 4.0 * seq_len * d
    for i in range(layers):
        p = f"h.{i}"
        # GPT-2's Conv1D stores weights as (in, out); FLOPs are the same
        out += [*_ln(f"{p}.ln_1", d),
                Tensor(f"{p}.attn.c_attn.weight", (d, 3 * d), 2.0 * d * 3 * d + attn),
                Tensor(f"{p}.attn.c_attn.bias", (3 * d,), 3.0 * d),
                Tensor(f"{p}.attn.c_proj.weight", (d, d), 2.0 * d * d),
                Tensor(f"{p}.attn.c_proj.bias", (d,), float(d)),
                *_ln(f"{p}.ln_2", d),
                Tensor(f"{p}.mlp.c_fc.weight", (d, 4 * d), 2.0 * d * 4 * d),
                Tensor(f"{p}.mlp.c_fc.bias", (4 * d,), 4.0 * d),
                Tensor(f"{p}.mlp.c_proj.weight", (4 * d, d), 2.0 * 4 * d * d),
                Tensor(f"{p}.mlp.c_proj.bias", (d,), float(d))]
    out += [Tensor("ln_f.weight", (d,), 4.0 * d),
            Tensor("ln_f.bias", (d,), float(d) + 2.0 * vocab * d)]
    return out
