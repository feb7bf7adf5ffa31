"""Subcommands of `dlcp-emu`, one module each."""
