"""Every example spec simulated under its own presets (its [variants], else the default
presets), each run's summary without its wall-clock keys, as one JSON: what a restructuring
must leave identical.

    .venv/bin/python scripts/example_summaries.py OUT.json [--skip NAME ...] [--iterations-cap N]
    .venv/bin/python scripts/example_summaries.py --diff BEFORE.json AFTER.json
"""
import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _wall_clock_keys():
    from dlcp_emu.sim.engines import WALL_CLOCK_KEYS
    return WALL_CLOCK_KEYS | {"elapsed_s", "started"}


def _capped(path, cap):
    """The spec's text with `iterations` at most `cap` (a soak's 10,000 are hours), or None."""
    text = path.read_text()
    m = re.search(r"^iterations\s*=\s*(\d+)", text, re.M)
    if cap is None or not m or int(m.group(1)) <= cap:
        return None
    return text[:m.start(1)] + str(cap) + text[m.end(1):]


def collect(skip, cap=None):
    import dlcp_emu
    out = {}
    for path in sorted((ROOT / "examples").glob("*.toml")):
        if path.stem in skip:
            continue
        capped = _capped(path, cap)
        print(f"{path.name} ...{f' (iterations capped at {cap})' if capped else ''}",
              file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as root:
            spec_path = path
            if capped:   # beside the original, so its relative paths hold
                spec_path = path.with_name(f".{path.stem}-capped.toml")
                spec_path.write_text(capped)
            try:
                spec = dlcp_emu.load_spec(spec_path)
            finally:
                if capped:
                    spec_path.unlink()
            dlcp_emu.compare(spec, root=root)
            for f in sorted(Path(root).rglob("summary.json")):
                s = json.loads(f.read_text())
                key = "/".join((path.stem, *f.parent.relative_to(root).parts[1:]))
                out[key] = _strip(s, _wall_clock_keys())
    return out


def _strip(value, keys):
    if isinstance(value, dict):
        return {k: _strip(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_strip(v, keys) for v in value]
    return value


def diff(before, after):
    before, after = _strip(before, _wall_clock_keys()), _strip(after, _wall_clock_keys())
    bad = 0
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            bad += 1
            b, a = before.get(key) or {}, after.get(key) or {}
            fields = sorted(k for k in set(b) | set(a) if b.get(k) != a.get(k))
            print(f"{key}: differs in {', '.join(fields) or 'presence'}")
    print(f"{len(before)} runs before, {len(after)} after, {bad} differ")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--skip", nargs="*", default=[])
    ap.add_argument("--diff", nargs=2)
    ap.add_argument("--iterations-cap", type=int, help="run specs of more iterations with this many")
    a = ap.parse_args()
    if a.diff:
        return diff(*(json.loads(Path(p).read_text()) for p in a.diff))
    Path(a.out).write_text(json.dumps(collect(set(a.skip), a.iterations_cap), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
