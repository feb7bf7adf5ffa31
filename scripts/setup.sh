#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine: Debian packages, then .venv with the
# pinned PyPI packages and this project installed editable. A second run installs nothing:
# Debian packages are checked with dpkg-query, the venv by a stamp of the files it came from.
set -euo pipefail
cd "$(dirname "$0")/.."

# tshark: the Wireshark dissector's tests (wireshark/dlcp.lua) read captures with it.
DEB_PACKAGES=(mininet bridge-utils iperf3 tcpdump ethtool iputils-ping iproute2 python3-venv tshark)
# --test: what the suite needs beyond a run: a browser for report.html's test.
if [[ "${1:-}" == "--test" ]]; then
    DEB_PACKAGES+=(chromium chromium-driver)
elif [[ $# -gt 0 ]]; then
    echo "setup: unknown argument '$1' (allowed: --test)" >&2
    exit 2
fi
BASE_PYTHON=/usr/bin/python3
VENV=.venv

missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "setup: Debian packages missing (${missing[*]}); run as root: sudo make setup" >&2
        exit 1
    fi
    echo "setup: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark's package would otherwise ask whether non-root users may capture: no.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The stamp covers the native core's sources too: a changed .cpp rebuilds it (pip install -e .).
native_sources=$(find dlcp_native/src -type f | LC_ALL=C sort)
stamp_want=$( { echo "$native_sources"; cat requirements.txt requirements-nodeps.txt pyproject.toml setup.py $native_sources; } | sha256sum | cut -c1-16)
stamp_file=$VENV/.dlcp-emu-installed
if [[ -x $VENV/bin/python && -f $stamp_file && $(cat "$stamp_file") == "$stamp_want" ]]; then
    exit 0
fi
echo "setup: preparing $VENV (pinned packages from requirements.txt)"
[[ -x $VENV/bin/python ]] || "$BASE_PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
# Builds dlcp_native's compiled core; a compiler error stops here (set -e), printed by pip.
echo "setup: building the native core (dlcp_native/src) and installing the project"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --config-settings editable_mode=compat -e .
echo "$stamp_want" > "$stamp_file"
echo "setup: done"
