"""docs/spec.md is the spec's field tables as a page: generated from them, and kept in sync."""
from pathlib import Path

from switch_models import PRESETS
from switch_models.pipeline import STAGES
from topologies import BUILDERS, builder_params

from dlcp_emu.experiment import spec as S
from dlcp_emu.experiment import spec_doc

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "spec.md"
TABLES = {"": S.TOP_FIELDS, "workload": S._workload_fields(), "transport": S.TRANSPORT_FIELDS,
          "compression": S.COMPRESSION_FIELDS, "training": S.TRAINING_FIELDS,
          "background": S.BACKGROUND_FIELDS}


def test_the_page_is_what_the_tables_generate():
    assert PAGE.read_text() == spec_doc.markdown(), \
        "docs/spec.md is stale: run `.venv/bin/python -m dlcp_emu.experiment.spec_doc > docs/spec.md`"


def test_every_field_has_a_row_with_its_default_and_what_is_allowed():
    page = spec_doc.markdown()
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if line.startswith("| `")}
    for prefix, fields in TABLES.items():
        for name, (default, _check, allowed) in fields.items():
            row = rows[f"`{prefix + '.' if prefix else ''}{name}`"]
            assert spec_doc._cell(allowed) in row and spec_doc._default(default) in row, row
    for kind in BUILDERS:
        for name in builder_params(kind):
            assert f"| `topology.{name}` |" in page, (kind, name)
    for preset in PRESETS:
        assert f"| `{preset}` |" in page
    for stage, registry in STAGES.items():
        for name in registry.names():
            assert f"| `{stage}` | `{name}` |" in page


def test_units_come_from_the_fields_names():
    page = spec_doc.markdown()
    for row in ("| `time_limit_s` | s |", "| `topology.host_rate_bps` | bit/s |", "| `mtu` | bytes (IP packet) |",
                "| `compression.target_delay_ms` | ms |", "| `topology.delay_ns` | ns |",
                "| `transport.loss_bound` | fraction |", "| `workload.fusion_bytes` | bytes |"):
        assert row in page, row


def test_a_field_added_to_a_table_is_on_the_page(monkeypatch):
    monkeypatch.setitem(S.TRANSPORT_FIELDS, "pacing_gap_ns", (250, lambda v: True, "an integer >= 0"))
    assert "| `transport.pacing_gap_ns` | ns | `250` | an integer >= 0 |" in spec_doc.markdown()


def test_the_readme_links_the_reference():
    assert "docs/spec.md" in (ROOT / "README.md").read_text()
