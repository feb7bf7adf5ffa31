"""`report.html`: one self-contained page of a run folder, to keep or send: the table, every
plot (embedded) with the figures it draws, each preset's fidelity, the spec and the versions
that made it. No file beside it is needed to read it."""
import base64
import html
import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path

import pandas as pd

from dlcp_emu.study.compare import table

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #eee; }
figure { margin: 1.5em 0; }
img { max-width: 100%; border: 1px solid #ddd; }
"""
PACKAGES = ("dlcp-emu", "numpy", "pandas", "pyarrow", "matplotlib", "scapy", "mininet")


def write(run_dir, pngs, summary):
    """Write run_dir/report.html from the run's summary and the PNGs `report.draw` made (each
    with its CSV beside it); returns its path."""
    run_dir = Path(run_dir)
    title = f"{summary['spec']}: {'emulation' if summary['backend'] == 'emu' else 'simulation'}"
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<h1>{_e(title)}</h1>",
             f"<p>{summary['runs']} run(s), {_e(', '.join(summary['presets']))}; run folder "
             f"<code>{_e(run_dir.resolve())}</code></p>",
             "<h2>Results</h2>", f"<pre id='table'>{_e(table(summary))}</pre>"]
    parts += ["<h2>Plots</h2>"] + [_figure(png) for png in pngs]
    parts += ["<h2>Fidelity</h2>", _fidelity(summary)]
    spec = run_dir / "spec.toml"
    if spec.is_file():
        parts += ["<h2>Spec</h2>", f"<pre id='spec'>{_e(spec.read_text())}</pre>"]
    parts += ["<h2>Versions</h2>", _frame_html(pd.DataFrame(versions().items(), columns=["what", "version"]),
                                               index=False)]
    parts.append("</body></html>")
    path = run_dir / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def versions():
    """What made the run: this package and the libraries it leans on, Python, the kernel, and
    the checkout's commit where there is one."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["python"] = sys.version.split()[0]
    out["kernel"] = platform.release()
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        out["commit"] = commit + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        out["commit"] = "unknown (not a git checkout)"
    return out


def _figure(png):
    data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
    csv = Path(png).with_suffix(".csv")
    drawn = _frame_html(pd.read_csv(csv), index=False) if csv.is_file() else ""
    return (f"<figure id='{_e(Path(png).stem)}'><img alt='{_e(Path(png).name)}' "
            f"src='data:image/png;base64,{data}'><figcaption>{_e(Path(png).name)}: the figures it "
            f"draws</figcaption>{drawn}</figure>")


def _fidelity(summary):
    """A row a preset, a column a figure the runs recorded (nested ones flattened)."""
    rows = {p: pd.json_normalize(s.get("fidelity") or {}).iloc[0].to_dict() if s.get("fidelity") else {}
            for p, s in summary["presets"].items()}
    frame = pd.DataFrame.from_dict(rows, orient="index").T
    return _frame_html(frame.astype(object).where(frame.notna(), "-")) if len(frame) else "<p>none recorded</p>"


def _frame_html(frame, index=True):
    # Milliseconds to the 0.1 the text table prints; smaller figures to four digits.
    return frame.to_html(float_format=lambda v: f"{v:.1f}" if abs(v) >= 100 else f"{v:.4g}", na_rep="-",
                         border=0, index=index)


def _e(text):
    return html.escape(str(text), quote=True)
