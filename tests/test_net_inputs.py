"""`dlcp-emu net` refuses bad input before it builds anything: exit 2, one line naming the
flag, file or field, no traceback (no root needed: nothing starts)."""
from pathlib import Path

import pytest

from dlcp_emu.cli import main

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "examples" / "default.toml"


@pytest.mark.parametrize("argv, message", [
    (["--script", "no/such/file"], "argument --script: no/such/file: no such file"),
    (["--script", str(ROOT / "examples")], "is not a file"),
    (["--preset", "nope"], "unknown preset(s) 'nope'"),
])
def test_net_names_what_is_wrong(capsys, argv, message):
    try:
        rc = main(["net", str(DEFAULT), *argv])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_net_names_a_bad_spec_field(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(DEFAULT.read_text().replace("leaves = 2", "leaves = 0"))
    assert main(["net", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "leaves" in err and "Traceback" not in err
