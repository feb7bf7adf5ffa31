"""An experiment: the spec, the one way to run it (`run`, on a `backend.Backend`), and what a
run is made of: its scaled topology, placement, background flows, settings, tables and
summary."""
