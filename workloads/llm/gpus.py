"""Compute time from a roofline of a named GPU: FLOPs / (peak x efficiency).

Only the compute roof: a transformer's time goes to its large matrix products, which are
compute-bound at the batch sizes of training; ``efficiency`` (the achieved fraction of the
peak, MFU-like; 0.5 by default, an assumption) covers the memory-bound rest. Peaks are the
vendors' dense (no sparsity) tensor-core figures, BF16 (V100: FP16, it has no BF16):

| GPU         | dense TFLOP/s | source                                      |
|-------------|---------------|---------------------------------------------|
| V100-SXM2   | 125           | NVIDIA V100 datasheet (FP16 tensor)         |
| A100-SXM4   | 312           | NVIDIA A100 datasheet (BF16 tensor, dense)  |
| H100-SXM5   | 989           | NVIDIA H100 datasheet (BF16 tensor, dense)  |
| H100-PCIe   | 756           | NVIDIA H100 datasheet (BF16 tensor, dense)  |
"""

from __future__ import annotations

from dataclasses import dataclass

PEAK_FLOPS = {"V100-SXM2": 125e12, "A100-SXM4": 312e12, "H100-SXM5": 989e12,
              "H100-PCIe": 756e12}
ALIASES = {"V100": "V100-SXM2", "A100": "A100-SXM4", "H100": "H100-SXM5"}


@dataclass(frozen=True)
class Roofline:
    gpu: str = "A100"
    efficiency: float = 0.5

    def __post_init__(self):
        if ALIASES.get(self.gpu, self.gpu) not in PEAK_FLOPS:
            raise ValueError(f"unknown GPU {self.gpu!r}; known: "
                             f"{', '.join([*PEAK_FLOPS, *ALIASES])}")
        if not 0 < self.efficiency <= 1:
            raise ValueError(f"efficiency must be in (0, 1], got {self.efficiency}")

    @property
    def peak_flops(self) -> float:
        return PEAK_FLOPS[ALIASES.get(self.gpu, self.gpu)]

    def us(self, flops: float) -> float:
        """Microseconds that ``flops`` take."""
        return flops / (self.peak_flops * self.efficiency) * 1e6
