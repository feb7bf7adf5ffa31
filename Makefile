# dlcp-emu: `sudo make emulate` runs the default experiment, `sudo make test` runs every test.
# Both install what they need first (scripts/setup.sh, idempotent).
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST := $(PY) -m pytest
CLI    := $(VENV)/bin/dlcp-emu

.PHONY: setup setup-test emulate test test-fast bench validate calibrate clean-runs require-root wireshark

setup:
	@scripts/setup.sh

# The suite's own needs on top (a headless browser for report.html's test).
setup-test:
	@scripts/setup.sh --test

emulate: setup
	$(CLI) emulate

# pytest exits 5 when it selects no test; that is a failure of the suite here, not a pass.
# The whole suite emulates, so it needs root; DLCP_REQUIRE_ROOT=1 makes an emulation test
# that cannot run fail instead of skipping (tests/conftest.py). Two passes: the tests that
# emulate nothing on every core (a module's tests on one worker, so its shared run is made
# once), then the emulations one at a time (each wants the machine's cores to itself); both
# run whatever the first gave, and the target fails if either did.
test: require-root setup-test
	@rc=0; \
	DLCP_REQUIRE_ROOT=1 $(PYTEST) -q -n auto --dist loadscope -m "not root" || rc=$$?; \
	DLCP_REQUIRE_ROOT=1 $(PYTEST) -q -m root || rc=$$?; \
	exit $$rc

require-root:
	@if [ "$$(id -u)" -ne 0 ]; then \
		echo "make $(MAKECMDGOALS): emulation needs root: run 'sudo make $(MAKECMDGOALS)'" \
		     "('make test-fast' runs the tests that need no root)" >&2; \
		exit 1; \
	fi

# The fast tier (docs/testing.md): every core, a module's tests on one worker (--dist loadscope)
# so that a module's shared run is made once, hypothesis at a fifth of its examples (tests/tiers.py).
test-fast: setup
	DLCP_HYPOTHESIS=fast $(PYTEST) -q -n auto --dist loadscope -m "not root and not slow"

bench: setup
	$(CLI) bench model --preset fifo
	$(CLI) bench model --preset dlcp
	$(CLI) bench sim --plot results/bench-sim.png
	$(CLI) bench switch
	$(CLI) bench transport
	$(CLI) bench host
	$(CLI) bench htsim --speed
	$(PY) scripts/bench_schedules.py

# Emulated against simulated, side by side: how closely the backends agree is a figure that
# a loaded machine moves, so it is printed here, not asserted by a test. Each runs on.
validate: require-root setup
	-$(CLI) validate examples/validate-ps.toml
	-$(CLI) validate examples/validate-ring.toml --presets fifo,dlcp-nodrop
	-$(CLI) validate examples/validate-ps-topk.toml

# The fidelity estimate against `validate` on a grid of specs x dilations x seeds (about an
# hour of emulation; a case already in calibration/grid.jsonl is not run again), then its
# report: docs/fidelity-grid.md and .png.
calibrate: require-root setup
	$(CLI) calibrate

clean-runs: setup
	$(CLI) clean

# The DLCP dissector (wireshark/dlcp.lua) into your Wireshark's Personal Lua Plugins folder:
# run it as the user who runs Wireshark, not with sudo.
wireshark: setup
	$(CLI) wireshark --install
