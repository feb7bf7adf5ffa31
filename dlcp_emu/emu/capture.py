"""What `dlcp-emu run --pcap` captures: which switch ports (checked against the run's
topology), how much disk each file may take, and the files a run's results list.

Every selected port is captured both ways (`<switch>-eth<N>-rx.pcap`, frames the switch
read; `-tx.pcap`, frames it sent) by the switch process itself (`datapath.pcap`). The
budget is for the whole run, split evenly over the files; each file keeps its newest frames
within its share, and the results say how many frames each kept and dropped."""
from dlcp_emu.emu.datapath.pcap import MIN_MAX_BYTES

DEFAULT_BUDGET_MB = 200.0
ALL = "all"


class CaptureError(ValueError):
    """A --pcap argument the run cannot honour; the message names what is allowed."""


def switch_ports(topology):
    """{switch: [its port interfaces, in port order]}."""
    return {s: [topology.intf_name(s, n) for n, _, _ in entries]
            for s, entries in topology.port_map().items()}


def select_ports(topology, text):
    """The interface names PORTS names, in topology order: "all" (every switch port), or a
    comma-separated list of switches (all their ports) and ports ("l1-eth3")."""
    by_switch = switch_ports(topology)
    every = [i for intfs in by_switch.values() for i in intfs]
    words = [w.strip() for w in text.split(",")]
    if ALL in words:
        return every
    chosen, bad = set(), []
    for w in words:
        if w in by_switch:
            chosen.update(by_switch[w])
        elif w in every:
            chosen.add(w)
        else:
            bad.append(w)
    if bad or "" in words:
        where = "; ".join(f"{s}: {intfs[0]}..{intfs[-1]}" if len(intfs) > 1 else f"{s}: {intfs[0]}"
                          for s, intfs in by_switch.items())
        named = ", ".join(repr(b) for b in bad if b) or "''"
        raise CaptureError(
            f"--pcap: no switch or switch port named {named} "
            f"in this spec's topology ({topology.name}); give 'all', switch names or ports "
            f"({where})")
    return [i for i in every if i in chosen]


def bytes_per_file(budget_mb, ports):
    """Each capture file's share of the run's budget (two files a port)."""
    files = 2 * len(ports)
    share = int(budget_mb * 1e6 / files)
    if share < MIN_MAX_BYTES:
        raise CaptureError(
            f"--pcap-max-mb: {budget_mb:g} MB over {files} capture files is {share / 1e3:.0f} kB "
            f"each; each needs at least {MIN_MAX_BYTES / 1e3:.0f} kB "
            f"(--pcap-max-mb {files * MIN_MAX_BYTES / 1e6:.1f} or more, or fewer ports)")
    return share


def listing(stats, base):
    """The capture files of a run, from its switches' final stats: [{file (relative to
    base), switch, interface, direction, frames, kept, rotated_out, bytes}]."""
    import os
    out = []
    for name, st in sorted(stats.items()):
        for c in (st or {}).get("captures") or ():
            stem = os.path.basename(c["file"])[:-len(".pcap")]
            intf, _, direction = stem.rpartition("-")
            out.append({"file": os.path.relpath(c["file"], base), "switch": name,
                        "interface": intf, "direction": direction, "frames": c["frames"],
                        "kept": c["kept"], "rotated_out": c["rotated_out"], "bytes": c["bytes"]})
    return out


def describe(captures, base):
    """Lines for the terminal: each file (under base), its frames, what a bounded one dropped."""
    import os
    lines = []
    for c in captures:
        note = f", the oldest {c['rotated_out']:,} dropped (size cap)" if c["rotated_out"] else ""
        lines.append(f"  {os.path.join(base, c['file'])}  {c['kept']:,} frames, "
                     f"{c['bytes'] / 1e6:.2f} MB{note}")
    return lines
