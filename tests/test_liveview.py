"""The live view renders what a real switch process wrote: its stats file, read twice while a
port is congested (the data path on socketpairs, no root)."""
import io
import json
import time

from dlcp_emu.emu.liveview import LiveView, enabled_by_default, port_rows, render
from test_datapath_loop import Rig, frame

RATE = 1e6            # 1 Mbit/s: a 1090-byte frame every 8.9 ms, so the queue lasts
ETHERNET_SHARE = 0.03  # of the line rate, preamble and gap (24 bytes a 1090-byte frame: 2.2%)
BUFFER = 64 * 1024


def _snapshot(path, after, deadline):
    """The stats file once its snapshot count passes `after` (bounded wait)."""
    while time.monotonic() < deadline:
        try:
            st = json.loads(path.read_text())
        except (OSError, ValueError):
            st = None
        if st and st["snapshot"] > after:
            return st
        time.sleep(0.01)
    raise AssertionError(f"no stats snapshot after {after} in time")


def test_render_shows_utilisation_queue_and_drops_from_real_stats(tmp_path):
    rig = Rig(tmp_path, rate=RATE, buffer_bytes=BUFFER, stats_interval_s=0.1)
    stats_file = tmp_path / "stats.json"
    try:
        for _ in range(150):                      # 163 kB at once into a 64 kB buffer
            rig.far[1].send(frame(dst=2, payload=1000))
        deadline = time.monotonic() + 10
        first = _snapshot(stats_file, 0, deadline)
        while first["model"]["ports"]["2"]["tx_packets"] == 0:   # the burst has reached the port
            first = _snapshot(stats_file, first["snapshot"], deadline)
        second = _snapshot(stats_file, first["snapshot"], deadline)
    finally:
        rig.stop()
    p2 = second["model"]["ports"]["2"]
    assert p2["queued_bytes"] > 0, "the queue drained before the second snapshot"
    rows = {r["intf"]: r for r in port_rows({"s1": first}, {"s1": second})}
    r = rows["p2"]
    dt = second["elapsed_s"] - first["elapsed_s"]
    sent = p2["tx_bytes"] - first["model"]["ports"]["2"]["tx_bytes"]
    assert r["util"] == sent * 8 / (RATE * dt)
    # At line rate while it has a backlog, within what the counting allows: whole frames are
    # counted as they start, so an interval holds up to one frame more or less than its time
    # serialises, and more after a stretch the switch itself reports it was late for.
    late_s = (second["lateness"]["max_ns"] or 0) / 1e9
    slack = (len(frame(dst=2, payload=1000)) * 8 + RATE * late_s) / (RATE * dt)
    assert 1 - ETHERNET_SHARE - slack < r["util"] < 1 + slack, (r["util"], slack)
    assert rows["p1"]["util"] == rows["p3"]["util"] == 0
    assert r["queued_bytes"] == p2["queued_bytes"] and r["buffer_bytes"] == BUFFER
    dropped = p2["drops"]["buffer_full"]
    assert dropped == 150 - p2["enqueued"] > 0
    assert r["drops"] == {"buffer_full": dropped}
    assert r["new_drops"] == {"buffer_full": dropped - first["model"]["ports"]["2"]["drops"].get("buffer_full", 0)}

    lines = render({"s1": first}, {"s1": second}, width=120, title="run x")
    assert lines[0] == "run x"
    (line,) = [l for l in lines if l.startswith("p2 ")]
    assert f"{r['util'] * 100:3.0f}%" in line
    assert f"{p2['queued_bytes'] / 1e3:.1f} kB {p2['queued_bytes'] / BUFFER * 100:3.0f}%" in line
    assert f"buffer_full {dropped:,}" in line
    assert [l for l in lines if l.startswith("p1 ")][0].endswith("0.0 kB   0%  -")
    assert all(len(l) <= 120 for l in lines)
    # A short terminal: the congested port stays, the quiet ones are counted.
    short = render({"s1": first}, {"s1": second}, width=120, height=3)
    assert any(l.startswith("p2 ") for l in short) and "(+2 quieter ports)" in short


def test_render_shows_frames_to_no_known_address_and_those_the_kernel_discarded(tmp_path):
    """`ports` (Mininet's CLI) shows every drop: a frame to an address the switch has no
    route for is one of its own (no port owns it), an 802.1Q header too short for its tag,
    which the kernel discarded, one of the port it came in on."""
    rig = Rig(tmp_path, rate=1e9)
    stray = bytearray(frame())
    stray[0:6] = bytes.fromhex("0000000000aa")
    rig.far[1].send(bytes(stray))
    rig.far[1].send(frame())
    assert len(rig.recv(2, 1)) == 1
    stats = rig.stop()
    assert stats["conservation"]["dropped"] == {"no_route": 1}
    stats["rx_kernel_discarded"] = {1: 3, 2: 0, 3: 0}     # as a switch port's kernel counts them
    lines = render({}, {"s1": stats}, width=120)
    assert "s1: no_route 1" in lines
    (p1,) = [line for line in lines if line.startswith("p1 ")]
    assert p1.endswith("kernel_discarded 3 (+3)")


def test_live_view_is_off_unless_a_terminal_and_not_ci(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.delenv("CI", raising=False)
    assert enabled_by_default(Tty()) and not enabled_by_default(io.StringIO())
    monkeypatch.setenv("CI", "true")
    assert not enabled_by_default(Tty())
    # Off: log lines pass through untouched and nothing is drawn.
    out = io.StringIO()
    view = LiveView(out, enabled=False)
    view.wrap(lambda m: out.write(m + "\n"))("hello")
    view.update({})
    assert out.getvalue() == "hello\n"
