"""examples/api.ipynb runs: a real kernel executes every cell (the simulator, seconds), and
what it shows is what the run folder it wrote holds."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "api.ipynb"


@pytest.mark.slow   # a kernel and six simulated runs: ~10-20 s
def test_the_example_notebook_runs_and_shows_the_runs_it_wrote(tmp_path, monkeypatch):
    # The kernel's connection file and IPython's profile in the test's folder, not the user's.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    import nbclient
    import nbformat
    import dlcp_emu
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "the notebook is kept without outputs (Kernel > Restart & Clear Output before saving)"
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any("image/png" in o.get("data", {}) for o in outputs), "the plots were not drawn"

    runs = sorted(p.parent for p in (tmp_path / "results").glob("*-default-sim/summary.json"))
    assert len(runs) == 1, runs
    written = dlcp_emu.Result.load(runs[0])
    assert written.complete and written.variants == ["fifo", "pias", "dlcp"]
    assert len(written.runs) == 6 and set(written.iterations["seed"]) == {1, 2}
    printed = nb.cells[-1].outputs[0]["text"]
    assert printed == "".join(f"{v}: iteration {t * 1e3:.3f} ms\n"
                              for v, t in written.figures["iteration_time_mean_s"].items())
