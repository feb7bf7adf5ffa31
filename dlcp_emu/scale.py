"""Real world <-> emulated: the one place that converts.

A machine that cannot move real gradient sizes at real link rates runs an experiment scaled:
time dilated by `dilation` (compute and delays last d times longer, links run d times
slower) and bytes scaled by `byte_scale` (gradients, flows and buffers b times their real
size, links b times their real rate, so a scaled message takes as long as the real one).
A real-world second is then d emulated seconds. Runs convert at two boundaries only: the spec
into the emulated run (`rate_bps`, `delay_ns`, `time_ns`, `nbytes`), and what was measured
back into the real world (`seconds`, `s_per_ns`).
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    dilation: float = 1.0
    byte_scale: float = 1.0

    # -- real world -> emulated --------------------------------------------------------
    def rate_bps(self, real_bps):
        """A link's emulated rate: bytes scaled, time dilated."""
        return real_bps * (self.byte_scale / self.dilation)

    def delay_ns(self, real_ns):
        """A delay (integer ns) as emulated."""
        return int(real_ns * self.dilation)

    def stretch(self, real_ns):
        """A duration in ns as emulated, unrounded."""
        return real_ns * self.dilation

    def time_ns(self, real_us):
        """A compute time from a trace (microseconds) in emulated integer ns."""
        return int(real_us * 1e3 * self.dilation)

    def nbytes(self, real_bytes):
        """A size in bytes as emulated (rounded down)."""
        return int(real_bytes * self.byte_scale)

    # -- emulated -> real world ----------------------------------------------------------
    @property
    def s_per_ns(self):
        """Real-world seconds per emulated ns."""
        return 1e-9 / self.dilation

    def seconds(self, ns):
        """Emulated ns as real-world seconds."""
        return ns * 1e-9 / self.dilation

    def as_config(self):
        """For a process's JSON config; `Scale(**cfg)` reads it back."""
        return {"dilation": self.dilation, "byte_scale": self.byte_scale}
