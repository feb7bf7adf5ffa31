"""The house rules hold: `lint-imports` checks the import contracts of `.importlinter`
(switch_models pure, emu and sim independent, the rooms layered), and no module outgrows
what one reader holds in mind."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([str(lint), "--config", str(ROOT / ".importlinter")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_no_module_is_over_400_lines():
    too_long = {}
    for pkg in ("dlcp_emu", "switch_models", "workloads", "topologies"):
        for path in (ROOT / pkg).rglob("*.py"):
            n = len(path.read_text().splitlines())
            if n > MAX_LINES:
                too_long[str(path.relative_to(ROOT))] = n
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"
