"""`dlcp-emu validate`: emulate and simulate one spec and compare (see dlcp_emu/study/validate.py)."""
import json
import sys
from pathlib import Path

from dlcp_emu.commands.argtypes import name_list, number_at_least, open_fraction, output_dir, positive_int
from dlcp_emu.commands.run import _check_presets, _load, _need_root


def add_parser(sub):
    v = sub.add_parser("validate", help="emulate and simulate one spec; how far apart are they (root)")
    v.add_argument("spec", type=Path, help="experiment spec (TOML); see examples/")
    v.add_argument("--presets", type=name_list, default=None,
                   help="comma-separated presets (default: the spec's [switch], a preset or a pipeline table)")
    v.add_argument("--seeds", type=positive_int, default=1, help="runs per preset and backend")
    v.add_argument("--noise-seeds", type=number_at_least(0, int), default=None,
                   help="the simulator's seeds (those compared, then more) whose spread gives the noise a "
                        "difference sits in (default 5; 0: none beyond those compared)")
    v.add_argument("--tolerance", type=open_fraction, default=0.05,
                   help="largest relative difference of mean iteration time that passes (default 0.05)")
    v.add_argument("--results", type=output_dir, default=Path("results"),
                   help="results root (default results/)")
    v.add_argument("--json", action="store_true", help="print the comparison as JSON")
    v.set_defaults(func=_validate)


def _validate(args):
    spec = _load(args.spec)
    if spec is None or _need_root("emu"):
        return 2
    if args.presets:
        if _check_presets(args.presets):
            return 2
        presets = args.presets
    elif set(spec.switch) == {"preset"}:
        presets = [spec.switch["preset"]]
    else:
        presets = [spec.switch]   # a custom pipeline: both backends run the table itself
    from dlcp_emu.study import validate
    try:
        noise = validate.NOISE_SEEDS if args.noise_seeds is None else args.noise_seeds
        out_dir, report = validate.validate(spec, presets, seeds=args.seeds, tolerance=args.tolerance,
                                            root=args.results, log=lambda m: print(m, flush=True),
                                            noise_seeds=noise)
    except (RuntimeError, ValueError) as e:
        print(f"dlcp-emu: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print()
        print(validate.table(report))
        print(f"\nvalidation: {out_dir / 'validation.json'}")
    return 0 if report["complete"] and all(r["within_tolerance"] for r in report["presets"]) else 1
