"""A live view of what the switches do while a run goes on, in the terminal: per switch
port, utilisation since the last refresh, queue depth now, and drops by reason, read from the
stats each switch process writes once a second (`datapath.stats`); nothing is asked of the
switches. On when standard output is a terminal and CI is not set; `--live/--no-live` decide.

    port       utilisation       queue, buffer  drops by reason (+ new since the last refresh)
    l1-eth3    ######....  61%     41.2 kB  31%  dlcp_threshold 12 (+3)

`render` is the whole view as lines, from two snapshots of the stats; `LiveView` redraws it in
place below the run's log lines (`wrap`).
"""
import os
import shutil

BAR = 10


def enabled_by_default(stream):
    ci = os.environ.get("CI", "").strip().lower()
    return bool(getattr(stream, "isatty", lambda: False)()) and ci in ("", "0", "false")


def _port_drops(st, n):
    """Drops at one port, by reason: the model's at its egress, and on its way in the frames
    its receive ring lost (the switch fell behind) and those the kernel discarded before the
    switch's socket (`links.py`)."""
    drops = dict(st["model"]["ports"][n]["drops"])
    for reason, key in (("rx_ring_full", "rx_socket_drops"), ("kernel_discarded", "rx_kernel_discarded")):
        lost = (st.get(key) or {}).get(n, 0)
        if lost:
            drops[reason] = lost
    return drops


def port_rows(prev, cur):
    """One dict per switch port: switch, intf, util (since prev, or since the start; None
    when no time passed), queued and buffer bytes, drops by reason and their growth."""
    rows = []
    for name in sorted(cur):
        st = cur[name]
        if not st or "model" not in st:
            continue
        before = (prev or {}).get(name) or {}
        dt = st["elapsed_s"] - before.get("elapsed_s", 0.0)
        for n, port in st["model"]["ports"].items():
            old = before.get("model", {}).get("ports", {}).get(n, {})
            sent = port["tx_bytes"] - old.get("tx_bytes", 0)
            drops = _port_drops(st, n)
            old_drops = _port_drops(before, n) if old else {}
            rows.append({
                "switch": name, "intf": st["ports"][n],
                "util": sent * 8 / (port["rate_bps"] * dt) if dt > 0 and port["rate_bps"] else None,
                "queued_bytes": port["queued_bytes"],
                "buffer_bytes": (st.get("port_buffer_bytes") or {}).get(n),
                "drops": drops, "new_drops": {r: k - old_drops.get(r, 0) for r, k in drops.items()},
            })
    return rows


def _switch_drops(st):
    """Drops no port owns (a host link's queue, malformed or refused frames, frames to no
    known address), by reason."""
    model = {r for p in st["model"]["ports"].values() for r in p["drops"]}
    return {r: k for r, k in st.get("conservation", {}).get("dropped", {}).items()
            if r not in model and k}


def _row_text(r):
    u = r["util"]
    bar = "-" * BAR if u is None else ("#" * round(min(u, 1.0) * BAR)).ljust(BAR, ".")
    util = "   -" if u is None else f"{u * 100:3.0f}%"
    q = f"{r['queued_bytes'] / 1e3:.1f} kB"
    if r["buffer_bytes"]:
        q += f" {r['queued_bytes'] / r['buffer_bytes'] * 100:3.0f}%"
    drops = ", ".join(f"{reason} {k:,}" + (f" (+{r['new_drops'][reason]:,})" if r["new_drops"].get(reason) else "")
                      for reason, k in sorted(r["drops"].items()) if k) or "-"
    return f"{r['intf']:<10} {bar} {util}  {q:>14}  {drops}"


def render(prev, cur, width=100, height=None, title=""):
    """The view as lines (each at most `width` characters). With `height`, the ports that
    matter most (new drops, then utilisation, then queue) fill it, and a line says how many
    quieter ones are left out."""
    rows = port_rows(prev, cur)
    head = [title] if title else []
    head.append(f"{'port':<10} {'utilisation':<{BAR + 5}}  {'queue, buffer':>14}  drops by reason "
                "(+ new since the last refresh)")
    tail = []
    for name in sorted(cur):
        st = cur[name]
        other = _switch_drops(st) if st and "model" in st else {}
        if other:
            tail.append(f"{name}: " + ", ".join(f"{r} {k:,}" for r, k in sorted(other.items())))
        if st and st.get("fell_behind"):
            tail.append(f"{name}: behind! (late departures or frames lost at its sockets)")
    shown = rows
    if height is not None and len(head) + len(rows) + len(tail) > height:
        room = max(1, height - len(head) - len(tail) - 1)
        busy = sorted(rows, key=lambda r: (-sum(r["new_drops"].values()), -(r["util"] or 0),
                                           -r["queued_bytes"]))[:room]
        shown = [r for r in rows if r in busy]
        tail.insert(0, f"(+{len(rows) - len(shown)} quieter ports)")
    return [line[:width] for line in head + [_row_text(r) for r in shown] + tail]


class LiveView:
    """Redraws `render` in place on a terminal, below the lines `log` prints."""

    def __init__(self, stream, enabled=None):
        self.stream = stream
        self.enabled = enabled_by_default(stream) if enabled is None else enabled
        self.drawn = 0
        self.last = {}       # per switch, the newest snapshot seen
        self.prev = {}       # and the one before it: utilisation is over the time between
        self.lines = []

    def _clear(self):
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.drawn = 0

    def _draw(self):
        for line in self.lines:
            self.stream.write(line + "\n")
        self.drawn = len(self.lines)
        self.stream.flush()

    def wrap(self, log):
        """`log` (which writes to this stream), its lines printed above the view."""
        if not self.enabled:
            return log

        def logged(text):
            self._clear()
            log(text)
            self._draw()
        return logged

    def update(self, stats, title=""):
        """New stats ({switch: its latest stats or None}): redraw."""
        if not self.enabled:
            return
        for name, st in stats.items():
            old = self.last.get(name)
            if st and (old is None or st.get("snapshot") != old.get("snapshot")):
                if old is not None:
                    self.prev[name] = old
                self.last[name] = st
        size = shutil.get_terminal_size()
        self.lines = render(self.prev, self.last, width=size.columns - 1,
                            height=max(5, size.lines // 2), title=title)
        self._clear()
        self._draw()
