"""The modelled (not measured) parts of traces, in one place so they are easy to find.

- Gradient magnitudes: no trace we ship records gradient values, so every layer gets a
  synthetic lognormal |g| model. Its median shrinks slowly with tensor size (large weight
  matrices have many small entries, biases and norms fewer larger ones):
  median = 1e-3 * (numel / 1e6) ** -0.25, sigma = 1.0 (in log space). These numbers are an
  assumption chosen for plausible orders of magnitude, not fitted to any model.
- Compute times of zoo-only models: an assumed batch time split over layers in proportion
  to FLOPs, forward:backward = 1:2 (backward computes gradients of activations and weights).
"""

from __future__ import annotations

import numpy as np

MAG_MEDIAN_AT_1M = 1e-3  # median |g| of a 1M-element tensor (assumed)
MAG_SIZE_EXPONENT = -0.25
MAG_SIGMA = 1.0
BYTES_PER_PARAM = 4  # float32 gradients


def lognormal_magnitudes(grad_bytes) -> dict[str, np.ndarray]:
    """``mag_dist``/``mag_mu``/``mag_sigma`` columns for layers of these sizes."""
    numel = np.asarray(grad_bytes, dtype=float) / BYTES_PER_PARAM
    median = MAG_MEDIAN_AT_1M * (numel / 1e6) ** MAG_SIZE_EXPONENT
    return {"mag_dist": np.full(numel.shape, "lognormal", dtype=object),
            "mag_mu": np.log(median),
            "mag_sigma": np.full(numel.shape, MAG_SIGMA)}


def split_by_weight(total_us: float, weights) -> np.ndarray:
    """``total_us`` spread over layers in proportion to ``weights`` (all-zero -> evenly)."""
    w = np.asarray(weights, dtype=float)
    if w.sum() <= 0:
        w = np.ones_like(w)
    return total_us * w / w.sum()
