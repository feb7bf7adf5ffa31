"""Synthetic gradients drawn ahead on threads (host/prefetch.py): every bucket a simulated
worker begins was drawn ahead, nothing is drawn that is not used, and the results are those
of drawing each bucket when it begins."""
import threading

import pytest

import dlcp_emu.sim.run as sim_run
from dlcp_emu.experiment.run import prepare, run
from dlcp_emu.sim.run import SimBackend
from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.host.prefetch import Prefetch
from dlcp_emu.sim.engines import WALL_CLOCK_KEYS


class Counted(Prefetch):
    """A Prefetch that keeps what each take found, and what was left at the end."""
    made = []

    def __init__(self, threads=None):
        super().__init__(threads)
        self.asked, self.found, self.left = [], {}, None
        Counted.made.append(self)

    def ask(self, key, fn, *args):
        self.asked.append(key)
        super().ask(key, fn, *args)

    def take(self, key, fn, *args):
        self.found[key] = key in self._ahead
        return super().take(key, fn, *args)

    def close(self):
        self.left = self.pending()
        super().close()


class Never(Prefetch):
    """Asks for nothing: every bucket drawn when its collective begins, as before prefetching."""

    def ask(self, key, fn, *args):
        pass


def _run(monkeypatch, tmp_path, cls, spec, name):
    monkeypatch.setattr(sim_run, "Prefetch", cls)
    s, _ = run(spec, SimBackend(), spec.switch, tmp_path / name, log=lambda *_: None)
    return {k: v for k, v in s.items() if k not in WALL_CLOCK_KEYS}


# The Python engine holds the GIL where the core lets it go: the same checks, in `make test`.
@pytest.mark.parametrize("engine", ["native", pytest.param("python", marks=pytest.mark.slow)])
def test_every_bucket_is_drawn_ahead_once_and_the_run_is_the_same(monkeypatch, tmp_path, engine):
    spec = load_spec("examples/default.toml").with_field("byte_scale", 0.01) \
        .with_field("workload.iterations", 2).with_field("engine", engine)
    Counted.made.clear()
    ahead = _run(monkeypatch, tmp_path, Counted, spec, "ahead")
    (p,) = Counted.made
    plan_buckets = len(prepare(spec, SimBackend(), spec.switch).plan.buckets)
    want = {(rank, it, b) for rank in range(4) for it in range(2) for b in range(plan_buckets)}
    assert plan_buckets > 1
    assert set(p.found) == want          # every bucket of every iteration and rank was taken
    assert all(p.found.values())         # ... each one asked for ahead of its collective
    assert sorted(p.asked) == sorted(want)   # asked once each, nothing beyond the last iteration
    assert p.left == set()
    assert _run(monkeypatch, tmp_path, Never, spec, "when-begun") == ahead


def test_take_computes_what_was_not_asked_for_and_raises_what_the_thread_raised():
    with Prefetch(threads=1) as p:
        assert p.take("x", lambda a, b: a + b, 2, 3) == 5
        p.ask("y", lambda: threading.current_thread().name)
        assert p.take("y", lambda: "here").startswith("gradients")   # drawn on the thread

        def fail():
            raise ValueError("bad draw")
        p.ask("z", fail)
        with pytest.raises(ValueError, match="bad draw"):
            p.take("z", fail)
        assert p.pending() == set()

