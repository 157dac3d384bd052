#!/usr/bin/env bash
# install-deps.sh installs what memstream's embedded PostgreSQL needs on a
# Debian machine: the PostgreSQL server, its server development files, pg_trgm
# (postgresql-contrib) and pgvector; then the local embedding model's weights
# (scripts/install-model.sh); and, for the tests, Python's venv and Node.js
# with npm when they are missing. `make demo` and `make test` call it, and CI runs
# it as root in a fresh clone without stdin.
#
# It is idempotent and only looks at files when everything is present, so a
# second run takes well under a second and changes nothing.
#
# Debian bookworm ships no pgvector for PostgreSQL 15, so pgvector is built
# from Debian's own source package (SPEC §8): the suite that carries it
# (PGVECTOR_SUITE, default trixie) is added as a deb-src-only entry whose
# archive address is copied from the machine's existing apt sources. Only
# source indexes come from that suite, so no binary package is ever upgraded.
set -euo pipefail

PGVECTOR_SUITE="${PGVECTOR_SUITE:-trixie}"
SRC_LIST=/etc/apt/sources.list.d/memstream-src.sources
CACHE_DIR="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/memstream/pgvector"

export DEBIAN_FRONTEND=noninteractive

log() { printf 'install-deps: %s\n' "$*"; }
die() { printf 'install-deps: ERROR: %s\n' "$*" >&2; exit 1; }

# Root is needed only to change the machine: a user without sudo on a
# machine that has everything passes every check below and never gets here.
SUDO=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then
	SUDO=(sudo)
fi
# Run a command as root, echoing it so the log shows what changed the machine.
as_root() {
	if [ "$(id -u)" -ne 0 ] && [ ${#SUDO[@]} -eq 0 ]; then
		die "needs root to run: $* (not root and sudo is missing; run this script once as root)"
	fi
	log "+ $*"
	"${SUDO[@]}" "$@"
}

command -v apt-get >/dev/null || die "apt-get not found: this script supports Debian and derivatives only; install PostgreSQL 15+, its server dev files, pg_trgm and pgvector by hand"

APT_UPDATED=0
apt_update_once() {
	if [ "$APT_UPDATED" -eq 0 ]; then
		as_root apt-get update -q
		APT_UPDATED=1
	fi
}

apt_install() {
	apt_update_once
	as_root apt-get install -y -q --no-install-recommends "$@"
}

# pkg_missing PKG... prints the packages that are not installed.
pkg_missing() {
	local p
	for p in "$@"; do
		if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
			printf '%s\n' "$p"
		fi
	done
}

# --- 1. PostgreSQL server and contrib ---------------------------------------
missing=$(pkg_missing postgresql postgresql-contrib)
if [ -n "$missing" ]; then
	log "installing PostgreSQL server: $(echo $missing)"
	# shellcheck disable=SC2086 # word splitting of the package list is intended
	apt_install $missing
fi

# The machine's default major version is the one the `postgresql` metapackage
# depends on (postgresql-15 on bookworm); fall back to the newest installed.
PG_MAJOR=$(dpkg-query -W -f='${Depends}' postgresql 2>/dev/null | grep -oE 'postgresql-[0-9]+' | head -n1 | cut -d- -f2 || true)
if [ -z "$PG_MAJOR" ]; then
	PG_MAJOR=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -n | tail -n1)
fi
[ -n "$PG_MAJOR" ] || die "cannot determine the PostgreSQL major version after installing postgresql"
PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config"

# --- 2. Server development files (PGXS, needed to build pgvector) -----------
missing=$(pkg_missing "postgresql-server-dev-$PG_MAJOR")
if [ -n "$missing" ]; then
	log "installing PostgreSQL $PG_MAJOR server development files"
	apt_install "postgresql-server-dev-$PG_MAJOR"
fi
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found after installing postgresql-server-dev-$PG_MAJOR"
EXT_DIR="$("$PG_CONFIG" --sharedir)/extension"

# --- 3. pg_trgm and btree_gin ----------------------------------------------------
if [ ! -f "$EXT_DIR/pg_trgm.control" ] || [ ! -f "$EXT_DIR/btree_gin.control" ]; then
	log "pg_trgm or btree_gin missing from $EXT_DIR; reinstalling postgresql-contrib"
	apt_update_once
	as_root apt-get install -y -q --no-install-recommends --reinstall postgresql-contrib "postgresql-$PG_MAJOR"
fi

# --- 4. pgvector ---------------------------------------------------------------

# debian_archive_uri prints the URI of the machine's main Debian archive: the
# first `deb` source that serves the release's own suite (not -security, not a
# third-party repository). Both deb822 .sources files and one-line .list
# files are read. With the URI it prints the Signed-By keyring, if any.
debian_archive_uri() {
	local codename
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || codename=bookworm
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		[ "$f" = "$SRC_LIST" ] && continue
		# Stanzas are separated by blank lines; comments are skipped.
		awk -v want="$codename" '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " want " ") && uris != "" && !done) {
					split(uris, u, " "); print u[1] "\t" signed; done = 1
				}
				types = ""; suites = ""; uris = ""; signed = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1); sub(/:$/, "", key)
				val = $0; sub(/^[^:]*:[ \t]*/, "", val)
				if (key == "types") types = val
				else if (key == "suites") suites = val
				else if (key == "uris") uris = val
				else if (key == "signed-by") signed = val
			}
			END { flush() }
		' "$f"
	done
	local l
	for l in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$l" ] || continue
		# deb [options] URI SUITE COMPONENTS...
		awk -v want="$codename" '
			$1 == "deb" {
				i = 2; signed = ""
				if ($2 ~ /^\[/) {
					while (i <= NF) {
						if ($i ~ /^\[?signed-by=/) { s = $i; sub(/^\[?signed-by=/, "", s); sub(/\]$/, "", s); signed = s }
						if ($i ~ /\]$/) { i++; break }
						i++
					}
				}
				if ($(i+1) == want) { print $i "\t" signed; exit }
			}
		' "$l"
	done
}

build_pgvector() {
	local want_pkgs
	# dpkg-dev provides dpkg-source (apt-get source); build-essential the compiler.
	want_pkgs=$(pkg_missing build-essential dpkg-dev)
	if [ -n "$want_pkgs" ]; then
		log "installing build tools for pgvector: $(echo $want_pkgs)"
		# shellcheck disable=SC2086
		apt_install $want_pkgs
	fi

	local line uri signed
	line=$(debian_archive_uri | head -n1 || true)
	uri=${line%%$'\t'*}
	signed=${line#*$'\t'}
	[ -n "$uri" ] || die "no Debian archive found in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources; add one (Types: deb, Suites: $(. /etc/os-release && echo "${VERSION_CODENAME:-}")) and re-run"
	log "using Debian archive $uri for $PGVECTOR_SUITE source packages"

	local want
	want="# Written by memstream scripts/install-deps.sh: Debian source packages
# from $PGVECTOR_SUITE, to build pgvector against the installed PostgreSQL.
# deb-src only, so no binary package is taken from $PGVECTOR_SUITE.
Types: deb-src
URIs: $uri
Suites: $PGVECTOR_SUITE
Components: main"
	if [ -n "$signed" ]; then
		want="$want
Signed-By: $signed"
	fi
	if [ "$(cat "$SRC_LIST" 2>/dev/null || true)" != "$want" ]; then
		log "writing $SRC_LIST"
		printf '%s\n' "$want" | "${SUDO[@]}" tee "$SRC_LIST" >/dev/null
	fi

	# Refresh only our deb-src entry: the rest of the machine's indexes are
	# left alone, which keeps this fast and changes nothing else.
	as_root apt-get update -q \
		-o Dir::Etc::sourcelist="$SRC_LIST" \
		-o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0

	mkdir -p "$CACHE_DIR"
	(
		cd "$CACHE_DIR"
		# Run the download as the invoking user: apt-get source needs no root,
		# and the cache then stays owned by that user.
		log "+ apt-get source --download-only pgvector/$PGVECTOR_SUITE (in $CACHE_DIR)"
		# As root, apt drops to the _apt user to download, which cannot write
		# to root's cache dir; say so up front instead of warning.
		sandbox=()
		[ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
		apt-get source -q --download-only "${sandbox[@]}" \
			-o Dir::Etc::sourcelist="$SRC_LIST" \
			-o Dir::Etc::sourceparts=- \
			"pgvector/$PGVECTOR_SUITE"
	)
	local dsc
	dsc=$(find "$CACHE_DIR" -maxdepth 1 -name 'pgvector_*.dsc' | sort -V | tail -n1)
	[ -n "$dsc" ] || die "apt-get source did not fetch pgvector from $PGVECTOR_SUITE"
	local version srcdir
	version=$(basename "$dsc" .dsc)
	version=${version#pgvector_}
	srcdir="$CACHE_DIR/pgvector-$version"
	rm -rf "$srcdir"
	log "+ dpkg-source -x $(basename "$dsc")"
	# The maintainer's key is usually not on the machine; apt already checked
	# the files against the signed Sources index, so skip that second check.
	dpkg-source --no-check -x "$dsc" "$srcdir" >/dev/null

	# OPTFLAGS="": pgvector defaults to -march=native, which ties vector.so to
	# this CPU. The machine (and its installed files) can be handed to another
	# host, where a native build could die with SIGILL inside the server.
	# Debian's own package builds the same way; pgvector picks SIMD at run
	# time where it matters, so little speed is lost.
	log "building pgvector $version against PostgreSQL $PG_MAJOR"
	make -C "$srcdir" -s -j"$(nproc)" USE_PGXS=1 PG_CONFIG="$PG_CONFIG" OPTFLAGS=""
	as_root make -C "$srcdir" -s USE_PGXS=1 PG_CONFIG="$PG_CONFIG" OPTFLAGS="" install
}

if [ ! -f "$EXT_DIR/vector.control" ]; then
	log "pgvector missing from $EXT_DIR; building it from Debian's source package"
	build_pgvector
fi

# --- 5. Verify -------------------------------------------------------------------
fail=0
for ext in vector pg_trgm; do
	if [ ! -f "$EXT_DIR/$ext.control" ]; then
		printf 'install-deps: ERROR: %s/%s.control is missing\n' "$EXT_DIR" "$ext" >&2
		fail=1
	fi
done
[ "$fail" -eq 0 ] || die "PostgreSQL extensions are missing; see the messages above"
log "ok: PostgreSQL $PG_MAJOR ($PG_CONFIG) with $(sed -n "s/^default_version = '\(.*\)'/pgvector \1/p" "$EXT_DIR/vector.control") and pg_trgm"

# --- 6. The local embedding model (embed.provider: local) -------------------------
"$(dirname "$0")/install-model.sh"

# --- 7. Python with venv, for the Hindsight client suite (tests/compat) ----------
# The suite installs Hindsight's client from PyPI into a virtualenv it keeps in
# the user cache directory; it needs python3 and its venv module.
if ! command -v python3 >/dev/null || ! python3 -m venv --help >/dev/null 2>&1; then
	log "installing python3 and python3-venv (for tests/compat)"
	apt_install python3 python3-venv python3-pip
fi

# --- 8. Node.js with npm, for the TypeScript client suites and the console ------
# tests/compat/ts (Hindsight's TypeScript client), tests/mcp-ts (the MCP
# TypeScript SDK) and the console's bundle check install their packages with
# npm ci into the user cache directory. `make demo` and `go build` need none.
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	log "installing nodejs and npm (for the TypeScript client suites and the console check)"
	apt_install nodejs npm
fi
