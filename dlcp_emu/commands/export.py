"""`dlcp-emu export`: a spec's generated LLM workload in the formats other tools run, to run
the same workload there: ASTRA-sim / SimAI per-layer text, or Chakra execution traces
(written by mlc-chakra's own text converter). The formats hold one micro-batch of a tensor-
and data-parallel model (pp, micro_batches, ep 1; ZeRO 0; a gradient bucket a block)."""
import sys

from dlcp_emu.commands.argtypes import input_file, output_file

FORMATS = ("astra-text", "chakra")


def add_parser(sub):
    p = sub.add_parser("export", help="a spec's generated LLM workload as ASTRA-sim/SimAI text or "
                                      "Chakra traces")
    p.add_argument("spec", type=input_file, metavar="SPEC", help="a spec whose [workload] has kind llm")
    p.add_argument("--format", choices=FORMATS, required=True, help="astra-text or chakra")
    p.add_argument("--out", type=output_file, required=True, metavar="PATH",
                   help="astra-text: the file to write; chakra: the prefix of PATH.<rank>.et")
    p.set_defaults(func=_run)


def _run(args):
    from dlcp_emu.commands.run import _load
    from dlcp_emu.experiment.spec_schedule import llm_of
    from workloads.llm import to_astra_text, to_chakra
    spec = _load(args.spec)
    if spec is None:
        return 2
    w = spec.workload
    if w.get("kind", "trace") != "llm":
        print(f"dlcp-emu export: workload.kind is {w.get('kind', 'trace')!r}; only a generated "
              "workload (kind = \"llm\") is exported", file=sys.stderr)
        return 2
    model, par, gpu = llm_of(w)
    try:   # what the formats cannot hold is refused before anything is written
        if args.format == "chakra":
            files = to_chakra(model, par, args.out, gpu)
        else:
            text = to_astra_text(model, par, gpu)
    except ValueError as e:
        print(f"dlcp-emu export: workload.parallelism: {e}", file=sys.stderr)
        return 2
    if args.format == "chakra":
        print(f"wrote {len(files)} files, {files[0]} .. {files[-1]}; here: [workload] kind = \"chakra\", "
              f"path = \"{args.out}\", workers = {len(files)}, tp = {par.tp}")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)   # output_file checked that it can
    args.out.write_text(text)
    print(f"wrote {args.out}: {par.dp * par.tp} ranks (tp {par.tp}, dp {par.dp}); here: "
          f"[workload] kind = \"astra-text\", path = \"{args.out}\", workers = {par.dp * par.tp}")
    return 0
