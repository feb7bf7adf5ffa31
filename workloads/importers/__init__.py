"""Workloads of other tools into a Schedule: ASTRA-sim / SimAI per-layer text
(``astra_text``) and Chakra execution traces (``chakra_et``, through mlc-chakra)."""

from workloads.importers.astra_text import astra_text_schedule, load_astra_text, parse_text

__all__ = ["astra_text_schedule", "load_astra_text", "parse_text"]
