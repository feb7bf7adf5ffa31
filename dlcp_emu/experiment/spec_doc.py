"""The spec reference (docs/spec.md), written from the tables that check a spec: every field,
its unit, its default and what is allowed, so that the page says what the checks do.

    python -m dlcp_emu.experiment.spec_doc > docs/spec.md

tests/test_spec_doc.py fails when the page and the tables part.
"""
import inspect

from switch_models import PRESETS
from switch_models.pipeline import PRESET_HOST_QUEUES, STAGES
from switch_models.traffic import TRAFFIC_CLASSES
from topologies import BUILDERS
from topologies.builders import RENAMED

from dlcp_emu.experiment import spec as S
from dlcp_emu.experiment import jobs_spec as J
from dlcp_emu.experiment import spec_schedule as SS
from dlcp_emu.experiment.checks import REQUIRED

# A field's unit from how its name ends (the spec's own convention; rates are real-world),
# from its allowed text for fractions, else named here.
UNITS = (("_bps", "bit/s"), ("_ms", "ms"), ("_ns", "ns"), ("_s", "s"), ("_bytes", "bytes"))
NAMED_UNITS = {"mtu": "bytes (IP packet)", "time_dilation": "factor", "byte_scale": "factor",
               "oversubscription": "ratio", "workers": "ranks", "ps": "ranks", "group_size": "ranks",
               "iterations": "iterations", "eval_every": "iterations", "batch_size": "samples",
               "hidden": "units a layer", "hosts": "hosts", "hosts_per_side": "hosts",
               "hosts_per_leaf": "hosts", "leaves": "switches", "spines": "switches", "k": "ports a switch",
               "servers": "servers", "gpus_per_server": "GPUs (hosts)", "pods": "pods"}
TABLES = (   # (heading, prefix, fields, what the table is)
    ("Top level", "", lambda: S.TOP_FIELDS, "The experiment as a whole."),
    ("[workload]", "workload", S._workload_fields,
     "What trains: a zoo model or a trace, the collective pattern, the ranks."),
    ("[workload] of a schedule", "workload", lambda: SS.doc_fields(S._workload_fields()),
     "With kind llm, chakra or astra-text: a training schedule (docs/schedules.md), one rank a host. "
     + SS.shared_fields_text(S._workload_fields())),
    ("[workload.parallelism]", "workload.parallelism", lambda: SS.PARALLELISM_FIELDS,
     "kind llm: how the model is split (Megatron's rank order: tp inside, then pp, then dp)."),
    ("[transport]", "transport", lambda: S.TRANSPORT_FIELDS, "How the workers' messages travel."),
    ("[compression]", "compression", lambda: S.COMPRESSION_FIELDS,
     "Optional: sparsification or quantisation of every gradient message."),
    ("[training]", "training", lambda: S.TRAINING_FIELDS,
     "Optional: train a real model, whose gradients are the payloads."),
    ("[background]", "background", lambda: S.BACKGROUND_FIELDS, "Optional: background flows."),
    ("[[jobs]]", "jobs[i]", lambda: J.JOB_FIELDS,
     "Optional, in place of [workload]: several training jobs on one fabric, each its [jobs.workload] "
     "(as [workload]) and [jobs.transport] (laid over [transport]); docs/multi-job.md."),
)


def unit(name, allowed=""):
    for suffix, text in UNITS:
        if name.endswith(suffix):
            return text
    if "fraction" in allowed:
        return "fraction"
    return NAMED_UNITS.get(name, "")


def markdown():
    out = ["# Spec reference",
           "",
           "<!-- Generated from the spec's field tables (dlcp_emu/experiment/spec.py): run",
           "     `python -m dlcp_emu.experiment.spec_doc > docs/spec.md`; a test keeps it in sync. -->",
           "",
           "A spec is a TOML file (`examples/*.toml`), or the same tables as a dict in Python "
           "(`dlcp_emu.parse_spec`, docs/api.md). Unknown fields are errors; every problem is "
           "reported at once, naming the field and what is allowed. Times and rates are "
           "real-world: `time_dilation` and `byte_scale` convert them for the run.", ""]
    for heading, prefix, fields, what in TABLES:
        out += [f"## {heading}", "", what, "", *_table(prefix, fields()), ""]
    out += _topology() + [""] + _switch() + [""] + _variants()
    return "\n".join(out) + "\n"


def _table(prefix, fields):
    rows = ["| field | unit | default | allowed |", "| --- | --- | --- | --- |"]
    for name, (default, _check, allowed) in fields.items():
        rows.append(f"| `{prefix + '.' if prefix else ''}{name}` | {unit(name, allowed)} | {_default(default)} "
                    f"| {_cell(allowed)} |")
    return rows


def _default(value):
    if value is REQUIRED:
        return "required"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, dict):
        return "`{" + ", ".join(f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}"
                                for k, v in value.items()) + "}`"
    return f"`{value}`"


def _cell(text):
    """Text as Markdown shows it as written (`l<i>` is no HTML tag, `|` no column)."""
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def _topology():
    out = ["## [topology]", "",
           "`kind` names the builder (required: one of "
           + ", ".join(f"`{k}`" for k in BUILDERS) + "); the other fields are its parameters. "
           "Rates are numbers of bit/s > 0 (`10e9`), delays integers of ns >= 0, buffers integers "
           "of bytes of at least one full frame, counts integers >= 1. Old names still taken, with "
           "a warning: " + "; ".join(f"`{old}` ({kind}) for `{new}`" for kind, names in RENAMED.items()
                                     for old, new in names.items()) + ".", ""]
    for kind, builder in BUILDERS.items():
        out += [f"### kind = \"{kind}\"", "", _cell(_first_paragraph(builder)), "",
                "| field | unit | default |", "| --- | --- | --- |"]
        for name, p in inspect.signature(builder).parameters.items():
            default = "required" if p.default is p.empty else \
                "from the others (above)" if p.default is None else _default(p.default)
            out.append(f"| `topology.{name}` | {unit(name)} | {default} |")
        out.append("")
    return out[:-1]


def _first_paragraph(obj):
    return " ".join((obj.__doc__ or "").strip().split("\n\n")[0].split())


def _switch():
    out = ["## [switch]", "",
           "A `preset`, and/or any of the four stages overriding it; a stage is a name or a table "
           "with `name` and the stage's parameters, e.g. "
           "`queue_manager = { name = \"dlcp\", threshold = 0.3 }`. `loss_tolerant` (switch-wide, "
           "default `[\"gradient\"]`) names the traffic classes bounded loss may act on, out of "
           + ", ".join(f"`{c}`" for c in TRAFFIC_CLASSES) + ": every stage that takes it (the dlcp "
           "classifier and queue manager) gets it; the others are never dropped to make room for "
           "a gradient and are served above every gradient. `host_queue` (switch-wide) is the "
           "hosts' NIC queue: `fifo`, or `priority` (control packets, ACKs, NACKs, pulls, probes "
           "and bitmaps, leave a host ahead of its data, as NDP's hosts send them); each preset "
           "names its own.", "",
           "| preset | load_balancer | classifier | queue_manager | scheduler | host_queue |",
           "| --- | --- | --- | --- | --- | --- |"]
    for name, stages in PRESETS.items():
        out.append(f"| `{name}` | " + " | ".join(_stage_text(stages[s]) for s in STAGES)
                   + f" | {PRESET_HOST_QUEUES.get(name, 'fifo')} |")
    out += ["", "| stage | name | parameters (default) | what it does |", "| --- | --- | --- | --- |"]
    for stage, registry in STAGES.items():
        for name in registry.names():
            params = ", ".join(f"`{p}` ({_default(d)})" for p, d in registry.parameters(name).items())
            out.append(f"| `{stage}` | `{name}` | {params or '-'} | {_cell(_first_paragraph(registry.get(name)))} |")
    return out


def _stage_text(value):
    if isinstance(value, str):
        return value
    return value["name"] + "(" + ", ".join(f"{k}={v}" for k, v in value.items() if k != "name") + ")"


def _variants():
    return ["## [variants]", "",
            "Optional: named runs for `compare` without `--presets`, each a table of the tables above "
            "laid over the spec's own field by field, e.g. "
            "`[variants.dlcp-bound10]` with `switch = { preset = \"dlcp\" }` and "
            "`transport = { loss_bound = 0.1 }`. A name is letters, digits, '-' and '_'."]


if __name__ == "__main__":
    print(markdown(), end="")
