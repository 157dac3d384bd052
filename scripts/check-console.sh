#!/usr/bin/env bash
# check-console.sh verifies that the committed console bundle (console/dist,
# embedded in the binary) is what web/ builds to: it installs the pinned npm
# packages from web/package-lock.json, builds into a temporary directory and
# compares byte for byte. With --write it rebuilds console/dist instead
# (make console). Needs Node and npm; `make demo` and `go build` never do.
set -euo pipefail
cd "$(dirname "$0")/../web"

die() { printf 'check-console: ERROR: %s\n' "$*" >&2; exit 1; }
command -v npm >/dev/null || die "npm not found: install Node.js and npm (Debian: apt-get install nodejs npm)"

# npm ci is skipped when node_modules was installed from this lock file.
if ! cmp -s package-lock.json node_modules/.memstream-lock 2>/dev/null; then
	npm ci --no-audit --no-fund --loglevel=error
	cp package-lock.json node_modules/.memstream-lock
fi

if [ "${1:-}" = "--write" ]; then
	npx --no-install vite build --logLevel warn
	exit 0
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
npx --no-install vite build --outDir "$out" --emptyOutDir --logLevel warn
if ! diff -r "$out" ../console/dist >/dev/null; then
	diff -r "$out" ../console/dist | head -20 >&2 || true
	die "console/dist is not what web/ builds to: run 'make console' and commit console/dist"
fi
echo "check-console: console/dist matches web/ ($(find ../console/dist -type f | wc -l) files)"
