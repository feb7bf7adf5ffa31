"""Studies above both backends: compare, validate, report, what-if."""
