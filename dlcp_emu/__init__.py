"""dlcp-emu: a packet-level network emulator and simulator for DL-aware transport."""

__version__ = "0.1.0"
