"""`dlcp-emu export`: a spec's generated LLM workload written as ASTRA-sim text or Chakra
traces, which import back to the generated schedule's iteration."""
from pathlib import Path

import pytest

from dlcp_emu.cli import main
from workloads.importers.astra_text import load_astra_text
from workloads.llm import ZOO, Parallelism, Roofline, llm_schedule, to_astra_text
from workloads.schedule import FixedBandwidth, ideal_iteration, validate

DEFAULT = str(Path(__file__).resolve().parents[1] / "examples" / "default.toml")
SPEC = """name = "x"
[topology]
kind = "leaf-spine"
leaves = 2
spines = 1
hosts_per_leaf = 4
host_rate_bps = 1e11
[workload]
kind = "llm"
model = "gpt3-1.3b"
layers = 2
workers = 8
gpu = "H100"
[workload.parallelism]
dp = 4
tp = 2
"""


def _spec(tmp_path, extra="bucket_bytes = 0\n"):
    path = tmp_path / "spec.toml"
    path.write_text(SPEC + extra)
    return str(path)


def _generated():
    import dataclasses
    model = dataclasses.replace(ZOO["gpt3-1.3b"], layers=2)
    par = Parallelism(dp=4, tp=2, bucket_bytes=0, gpus_per_server=8)
    return model, par, Roofline("H100", efficiency=0.5)


def test_the_text_is_the_generators(tmp_path, capsys):
    out = tmp_path / "w" / "gpt.txt"
    assert main(["export", _spec(tmp_path), "--format", "astra-text", "--out", str(out)]) == 0
    model, par, gpu = _generated()
    assert out.read_text() == to_astra_text(model, par, gpu)
    assert 'kind = "astra-text"' in capsys.readouterr().out
    net = FixedBandwidth(25e9, 5e-6)
    imported = validate(load_astra_text(out, 8))
    assert ideal_iteration(imported, net).iteration_us == pytest.approx(
        ideal_iteration(validate(llm_schedule(model, par, gpu)), net).iteration_us, rel=0.01)


def test_chakra_traces_import_back_to_the_generated_iteration(tmp_path, capsys):
    from workloads.importers.chakra_et import TP_CLASS_GROUPS, load_chakra
    from workloads.schedule import RankLayout
    prefix = tmp_path / "et" / "gpt"
    assert main(["export", _spec(tmp_path), "--format", "chakra", "--out", str(prefix)]) == 0
    assert sorted(p.name for p in prefix.parent.iterdir()) == [f"gpt.{r}.et" for r in range(8)]
    assert "tp = 2" in capsys.readouterr().out
    model, par, gpu = _generated()
    net = FixedBandwidth(2e9, 2e-5)
    imported = validate(load_chakra(prefix, 8, layout=RankLayout(dp=4, tp=2), class_groups=TP_CLASS_GROUPS))
    assert ideal_iteration(imported, net).iteration_us == pytest.approx(
        ideal_iteration(validate(llm_schedule(model, par, gpu)), net).iteration_us, rel=0.01)


@pytest.mark.parametrize("extra,says", [
    ("", "workload.parallelism: the text format holds pp 1, micro_batches 1, ep 1, zero 0, "
         "bucket_bytes 0 only; got {'bucket_bytes': 26214400}"),
    ("bucket_bytes = 0\nzero = 1\n", "got {'zero': 1}"),
])
def test_what_the_formats_cannot_hold_is_named(tmp_path, capsys, extra, says):
    assert main(["export", _spec(tmp_path, extra), "--format", "chakra", "--out", str(tmp_path / "t")]) == 2
    assert says in capsys.readouterr().err
    assert not list(tmp_path.glob("t*"))


def test_only_a_generated_workload_is_exported(tmp_path, capsys):
    assert main(["export", DEFAULT, "--format", "astra-text", "--out", str(tmp_path / "t")]) == 2
    assert "workload.kind is 'trace'; only a generated workload" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["export", DEFAULT, "--format", "ns3", "--out", str(tmp_path / "t")])
    assert e.value.code == 2
