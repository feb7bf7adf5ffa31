"""How far byte scale has shrunk a run's messages (`message_frames_mean`), and the line under
`compare`'s table when they are few frames long."""
from pathlib import Path

import pandas as pd
import pytest

from dlcp_emu.experiment import run as experiment_run
from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.experiment.summary import message_frames_mean
from dlcp_emu.sim.run import SimBackend
from dlcp_emu.study.compare_table import SCALE_NOTE_FRAMES, table
from dlcp_emu.transport.message import transport_payload_size

DEFAULT = Path(__file__).resolve().parents[1] / "examples" / "default.toml"


def test_frames_are_each_messages_bytes_over_a_frames_payload():
    p = transport_payload_size(1500)
    dels = pd.DataFrame({"nbytes": [p, p + 1, 10 * p]})
    assert message_frames_mean(dels, 1500) == pytest.approx((1 + 2 + 10) / 3, abs=0.05)
    assert message_frames_mean(pd.DataFrame(), 1500) is None


@pytest.mark.parametrize("byte_scale,noted", [(0.002, True), (0.1, False)])
def test_the_table_says_when_messages_are_few_frames(tmp_path, byte_scale, noted):
    spec = load_spec(DEFAULT).with_field("byte_scale", byte_scale).with_field("workload.iterations", 2)
    s, _ = experiment_run.run(spec, SimBackend(), "dlcp", tmp_path / "dlcp", log=lambda *_: None)
    # ResNet-50's buckets over a ring of 4: 3.6 frames a message at 0.002, ~150 at 0.1
    assert (s["message_frames_mean"] < SCALE_NOTE_FRAMES) == noted
    text = table({"backend": "sim", "presets": {"dlcp": s}})
    assert ("(scale: dlcp's messages are" in text) == noted
    if noted:
        assert f"{s['message_frames_mean']:g} frames on average at byte scale 0.002" in text
