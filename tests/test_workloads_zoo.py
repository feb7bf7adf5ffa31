"""Model zoo: parameter counts from the architectures, synthetic compute times."""

import numpy as np
import pytest

from workloads import architectures
from workloads.zoo import get_model, list_models


def test_list_models():
    assert list_models() == ["bert-base", "gpt2-small", "resnet101", "resnet50", "vgg16"]


def test_bert_base_matches_hugging_face():
    t = get_model("bert-base")
    assert t.total_bytes == 109_482_240 * 4  # BertModel with pooler
    names = t.layers["name"].tolist()
    assert names[0] == "embeddings.word_embeddings.weight"
    assert names[-1] == "pooler.dense.bias"
    assert sum(n.startswith("encoder.layer.11.") for n in names) == 16
    q = t.layers[t.layers["name"] == "encoder.layer.0.attention.self.query.weight"]
    assert q["grad_bytes"].item() == 768 * 768 * 4


def test_gpt2_small_matches_hugging_face():
    t = get_model("gpt2-small")
    assert t.total_bytes == 124_439_808 * 4  # GPT2Model, tied LM head counted once
    assert t.layers["name"].tolist().count("wte.weight") == 1


def test_resnet50_total_gradient_bytes():
    t = get_model("resnet50")
    assert t.total_bytes == 102_228_128  # ~25.5M float32 parameters
    assert t.total_bytes / 4 == pytest.approx(25.5e6, rel=0.01)


@pytest.mark.parametrize("name,ms", [("bert-base", 54.0), ("gpt2-small", 175.0)])
def test_synthetic_times_fill_assumed_batch(name, ms):
    t = get_model(name)
    assert t.batch_time_us == ms * 1000
    assert t.backward_total_us == pytest.approx(2 * t.forward_total_us)
    assert t.backward_total_us + t.forward_total_us == pytest.approx(ms * 1000)
    assert "backward_us" in t.meta["synthetic"]
    # a dense weight costs more time than its bias
    w = t.layers["backward_us"][t.layers["name"].str.endswith("c_fc.weight")
                                | t.layers["name"].str.endswith("intermediate.dense.weight")]
    b = t.layers["backward_us"][t.layers["name"].str.endswith("c_fc.bias")
                                | t.layers["name"].str.endswith("intermediate.dense.bias")]
    assert (w.to_numpy() > 100 * b.to_numpy()).all()


def test_embeddings_have_no_compute():
    t = get_model("bert-base")
    emb = t.layers[t.layers["name"].str.contains("_embeddings")]
    assert (emb["backward_us"] == 0).all()


def test_flop_counts_per_token():
    # BERT-base forward ~ 2 * non-embedding params + attention per token
    tensors = architectures.bert_base(seq_len=128)
    dense = sum(t.numel for t in tensors if len(t.shape) == 2 and "embeddings" not in t.name
                and "pooler" not in t.name)
    flops = sum(t.fwd_flops_per_token for t in tensors)
    assert flops == pytest.approx(2 * dense + 12 * 4 * 128 * 768, rel=0.01)


def test_unknown_model_lists_known_ones():
    with pytest.raises(KeyError, match="known models: bert-base, gpt2-small"):
        get_model("llama-70b")


def test_get_model_returns_independent_copies():
    a = get_model("resnet50")
    a.layers.loc[0, "grad_bytes"] = 1
    assert get_model("resnet50").layers["grad_bytes"].iloc[0] == 37632
    assert np.all(get_model("vgg16").layers["grad_bytes"] > 0)
