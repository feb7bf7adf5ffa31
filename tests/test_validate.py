"""`dlcp-emu validate`'s comparison and its command line (the runs themselves are the
emulation and simulation tests')."""
import os

import pytest

from dlcp_emu import validate
from dlcp_emu.cli import main


def report(emu, sim, flags=None):
    rows = []
    for preset in emu:
        row = {"preset": preset, "emulation_fidelity": (flags or {}).get(preset, "ok")}
        for key, _ in validate.FIGURES:
            e, s = emu[preset], sim[preset]
            row[key] = {"emu": sum(e) / len(e), "sim": sum(s) / len(s), "emu_seeds": e, "sim_seeds": s,
                        "difference": (sum(e) / len(e) - sum(s) / len(s)) / (sum(s) / len(s))}
        row["within_tolerance"] = abs(row["iteration_time_mean_s"]["difference"]) <= 0.05
        rows.append(row)
    return {"spec": "t", "seeds": 2, "tolerance": 0.05, "presets": rows}


def test_table_shows_means_spread_difference_and_verdict():
    text = validate.table(report({"fifo": [0.500, 0.520], "dlcp": [0.400, 0.400]},
                                 {"fifo": [0.505, 0.515], "dlcp": [0.300, 0.300]},
                                 {"dlcp": "hosts late"}))
    fifo = next(line for line in text.splitlines() if line.strip().startswith("fifo"))
    dlcp = next(line for line in text.splitlines() if line.strip().startswith("dlcp"))
    assert "510.0 ± 14.1" in fifo and "+0.0%" in fifo and "yes" in fifo and fifo.endswith("ok")
    assert "400.0 ± 0.0" in dlcp and "+33.3%" in dlcp and " NO " in dlcp and dlcp.endswith("hosts late")
    assert "within 5%" in text


def test_per_seed_reads_combined_and_single_summaries():
    assert validate._per_seed(None, "k") == []
    assert validate._per_seed({"k": 1.0}, "k") == [1.0]
    assert validate._per_seed({"k": 1.5, "per_seed": [{"k": 1.0}, {"k": 2.0}, {"k": None}]}, "k") == [1.0, 2.0]


def test_command_line_errors_name_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["validate", "examples/default.toml", "--tolerance", "5"])
    assert "argument --tolerance: must be a fraction in (0, 1), got '5'" in capsys.readouterr().err
    if os.geteuid() == 0:
        assert main(["validate", "examples/default.toml", "--presets", "fifo,fifoo"]) == 2
        assert "unknown preset(s) 'fifoo'" in capsys.readouterr().err
    else:
        assert main(["validate", "examples/default.toml"]) == 2
        assert "emulation needs root" in capsys.readouterr().err
