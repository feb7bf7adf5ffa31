"""The per-packet table: each packet sent once, with its fate, from the hosts' logs as the
simulator hands them over (columns) or as the emulator reads them back (each host's files):
the same table either way."""
import pandas as pd

from dlcp_emu.host.packet_log import COLUMNS, RECEIVED_COLUMNS, columns, packet_table, read_records, write_records
from dlcp_emu.scale import Scale
from dlcp_emu.wire import Flags


def row(src, dst, chunk, sent_ns, flags=0):
    # src, dst, type, iteration, tensor_id, chunk, send_ts_ns, flags, priority, mag_class, tclass, size
    return (src, dst, 0, 1, 7, chunk, sent_ns, flags, 2, 3, 1, 1500)


def log(sent, received):
    return {"sent": columns(sent, COLUMNS), "received": columns(received, RECEIVED_COLUMNS)}


LOGS = [
    log([row(0, 1, 0, 1_000), row(0, 1, 1, 2_000, Flags.DROPPABLE), row(0, 1, 2, 3_000)],
        [row(1, 0, 0, 1_500) + (9_000, False)]),
    log([row(1, 0, 0, 1_500)],
        [row(0, 1, 0, 1_000) + (4_000, False),
         row(0, 1, 0, 1_000) + (4_100, False),            # a duplicate: delivered once
         row(0, 1, 2, 3_000, Flags.TRIMMED) + (6_000, True)]),
]


def read_back(logs, tmp_path):
    """The logs as a host writes them and the emulator reads them back."""
    out = []
    for i, records in enumerate(logs):
        write_records(records, tmp_path / f"packets-{i}")
        out.append(read_records(tmp_path / f"packets-{i}"))
    return out


def test_each_packet_sent_once_with_its_fate():
    t = packet_table(LOGS, Scale(dilation=2.0), t0_ns=1_000)
    assert len(t) == 4
    fate = {(r.src, r.chunk): r.fate for r in t.itertuples()}
    assert fate == {(0, 0): "delivered", (0, 1): "lost", (0, 2): "trimmed", (1, 0): "delivered"}
    first = t[(t.src == 0) & (t.chunk == 0)].iloc[0]
    assert first.send_s == 0.0 and first.recv_s == 3_000 * 1e-9 / 2   # real-world s from t0
    assert list(t.droppable) == [False, True, False, False]


def test_records_read_back_make_the_same_table(tmp_path):
    scale = Scale(dilation=2.0)
    pd.testing.assert_frame_equal(packet_table(read_back(LOGS, tmp_path), scale, t0_ns=1_000),
                                  packet_table(LOGS, scale, t0_ns=1_000))
    # A host that sent nothing and received nothing adds no rows either way.
    empty = log([], [])
    pd.testing.assert_frame_equal(packet_table(read_back([*LOGS, empty], tmp_path), scale, t0_ns=1_000),
                                  packet_table([*LOGS, empty], scale, t0_ns=1_000))
    # A host that wrote nothing is none.
    assert read_records(tmp_path / "packets-none") is None


def test_packets_in_flight_and_where_dropped():
    key = lambda src, dst, chunk, sent_ns: (src, dst, 0, 1, 7, chunk, sent_ns)   # noqa: E731
    t = packet_table(LOGS, Scale(), in_flight=[key(0, 1, 1, 2_000), key(5, 5, 5, 5)],
                     dropped=[(key(0, 1, 1, 2_000), "l1-eth3", "early"), (key(0, 1, 1, 2_000), "s1-eth1", "buffer_full"),
                              (key(9, 9, 9, 9), "s2-eth1", "buffer_full")])
    by = {(r.src, r.chunk): r for r in t.itertuples()}
    assert by[(0, 1)].fate == "in_flight" and by[(0, 0)].fate == "delivered"
    # The last drop known of a packet names where and why; others have none.
    assert (by[(0, 1)].drop_at, by[(0, 1)].drop_reason) == ("s1-eth1", "buffer_full")
    assert by[(0, 0)].drop_at is None and by[(1, 0)].drop_reason is None
    assert t.drop_at.dtype == object
