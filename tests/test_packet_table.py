"""The per-packet table: each packet sent once, with its fate, from the hosts' logs as the
simulator hands them over (lists of tuples) or as the emulator reads them back (frames from
each host's parquet files): the same table either way."""
import pandas as pd

from dlcp_emu.host.packet_log import packet_table
from dlcp_emu.scale import Scale
from dlcp_emu.wire import Flags


def row(src, dst, chunk, sent_ns, flags=0):
    # src, dst, type, iteration, tensor_id, chunk, send_ts_ns, flags, priority, mag_class, size
    return (src, dst, 0, 1, 7, chunk, sent_ns, flags, 2, 3, 1500)


LOGS = [
    {"sent": [row(0, 1, 0, 1_000), row(0, 1, 1, 2_000, Flags.DROPPABLE), row(0, 1, 2, 3_000)],
     "received": [row(1, 0, 0, 1_500) + (9_000, False)]},
    {"sent": [row(1, 0, 0, 1_500)],
     "received": [row(0, 1, 0, 1_000) + (4_000, False),
                  row(0, 1, 0, 1_000) + (4_100, False),            # a duplicate: delivered once
                  row(0, 1, 2, 3_000, Flags.TRIMMED) + (6_000, True)]},
]


def as_frames(logs):
    from dlcp_emu.host.packet_log import COLUMNS
    return [{"sent": pd.DataFrame(log["sent"], columns=COLUMNS),
             "received": pd.DataFrame(log["received"], columns=COLUMNS + ["recv_ns", "ce"])}
            for log in logs]


def test_each_packet_sent_once_with_its_fate():
    t = packet_table(LOGS, Scale(dilation=2.0), t0_ns=1_000)
    assert len(t) == 4
    fate = {(r.src, r.chunk): r.fate for r in t.itertuples()}
    assert fate == {(0, 0): "delivered", (0, 1): "lost", (0, 2): "trimmed", (1, 0): "delivered"}
    first = t[(t.src == 0) & (t.chunk == 0)].iloc[0]
    assert first.send_s == 0.0 and first.recv_s == 3_000 * 1e-9 / 2   # real-world s from t0
    assert list(t.droppable) == [False, True, False, False]


def test_frames_read_back_make_the_same_table_as_lists():
    scale = Scale(dilation=2.0)
    pd.testing.assert_frame_equal(packet_table(as_frames(LOGS), scale, t0_ns=1_000),
                                  packet_table(LOGS, scale, t0_ns=1_000))
    # A host that sent nothing and received nothing adds no rows either way.
    empty = {"sent": [], "received": []}
    pd.testing.assert_frame_equal(packet_table(as_frames([*LOGS, empty]), scale, t0_ns=1_000),
                                  packet_table([*LOGS, empty], scale, t0_ns=1_000))
