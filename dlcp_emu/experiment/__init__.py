"""An experiment: the spec, its scaling, placement and flows, and result tables."""
