#!/usr/bin/env bash
# install-browser.sh installs what the console's browser suite needs on a
# Debian machine: Debian's Chromium (driven headless by chromedp) and a CJK
# font so the screenshots of Chinese memories are readable. `make test`
# calls it; it changes nothing when both are present.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

log() { printf 'install-browser: %s\n' "$*"; }
die() { printf 'install-browser: ERROR: %s\n' "$*" >&2; exit 1; }

missing=()
command -v chromium >/dev/null || missing+=(chromium)
dpkg-query -W -f='${Status}' fonts-wqy-microhei 2>/dev/null | grep -q 'install ok installed' || missing+=(fonts-wqy-microhei)
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
command -v apt-get >/dev/null || die "apt-get not found: install Chromium (and a CJK font) by hand and put chromium on PATH"
# Root is needed only when something is missing.
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "not root and sudo is missing; run this script as root or install ${missing[*]}"
	SUDO=(sudo)
fi
log "+ apt-get update -q"
"${SUDO[@]}" apt-get update -q
log "+ apt-get install -y -q --no-install-recommends ${missing[*]}"
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
command -v chromium >/dev/null || die "chromium is still not on PATH after installing it"
