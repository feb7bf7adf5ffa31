"""Studies above both backends: compare, validate, report, what-if."""

# What `compare` (command line and API) runs when given no presets and the spec no [variants].
DEFAULT_PRESETS = ("fifo", "pias", "layer-prio", "dlcp")
