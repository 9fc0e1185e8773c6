# shellcheck shell=bash
# Make headless Chromium available for the `polydom browse` test (tests/test_app/test_browse.py).
#
#   source .ci/chromium.sh
#
# Installs Debian's `chromium` package when no chromium binary is on the PATH (needs root).
# Meant to be sourced: it never exits the calling shell; on failure it prints why and returns
# non-zero (the Chromium test then skips, saying Chromium is not installed).

_polydom_chromium() {
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "chromium.sh: Chromium is not installed and we are not root" >&2
        return 1
    fi
    echo "chromium.sh: installing Debian's chromium package" >&2
    apt-get update -qq >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null ||
        { echo "chromium.sh: apt-get install chromium failed" >&2; return 1; }
}

_polydom_chromium
