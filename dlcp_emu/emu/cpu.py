"""Where the machine's cores went during an emulated run (/proc/stat, and what each process
of the run reported at its end): the fidelity's `cpu_s`, `cpu_busy_share`, `cpu_steal_share`."""
import os

from dlcp_emu.emu.streams import read_process_row


def machine_cpu_s():
    """{"busy", "steal"}: seconds of CPU time, over every core since boot, spent on anything
    but idling (the hypervisor's steal included) and stolen by the hypervisor (/proc/stat),
    or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    if len(fields) < 8:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return {"busy": (user + nice + system + irq + softirq + steal) / tick, "steal": steal / tick}


def cpu_steal_s():
    """Seconds of CPU time stolen by the hypervisor since boot, or None."""
    cpu = machine_cpu_s()
    return None if cpu is None else cpu["steal"]


def cpu_use(records, stats, background, busy_s, steal_s, duration):
    """Where the machine's cores went during the run: each kind of process's CPU seconds
    (what it reported at its end; None when none did), and the shares of the machine's
    capacity that was busy and that the hypervisor stole. A busy share near 1 means every
    process of the run waited for a core, whatever its own figures say."""
    def total(values):
        values = [v for v in values if v is not None]
        return round(sum(values), 3) if values else None
    capacity = duration * (os.cpu_count() or 1)
    # /proc/stat counts in ticks (10 ms) over a window whose ends are not the run's duration's:
    # a saturated machine can read a tick or two more than its capacity. A share stops at 1.
    def share(s):
        return min(1.0, s / capacity) if s is not None and capacity > 0 else None
    return {"cpu_s": {"switches": total((st or {}).get("cpu_s") for st in stats.values()),
                      "hosts": total(r.get("cpu_s") for r in records),
                      "background": total((read_process_row(p) or {}).get("cpu_s") for p in background)},
            "cpu_busy_share": share(busy_s),
            "cpu_steal_share": share(steal_s)}
