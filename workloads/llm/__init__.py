"""Transformer training workloads generated from the architecture: the model zoo
(``models``), a GPU roofline (``gpus``), parallelism and per-stage blocks (``parallelism``),
the schedule generator (``generate``) and the writers of ASTRA-sim text and Chakra traces
(``astra_export``)."""

from workloads.llm.astra_export import to_astra_text, to_chakra
from workloads.llm.generate import llm_schedule
from workloads.llm.gpus import PEAK_FLOPS, Roofline
from workloads.llm.models import ZOO, TransformerConfig, get_config
from workloads.llm.parallelism import Block, Parallelism, one_f_one_b, stage_blocks

__all__ = ["PEAK_FLOPS", "ZOO", "Block", "Parallelism", "Roofline", "TransformerConfig",
           "get_config", "llm_schedule", "one_f_one_b", "stage_blocks", "to_astra_text",
           "to_chakra"]
