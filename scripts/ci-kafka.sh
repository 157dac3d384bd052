#!/usr/bin/env bash
# ci-kafka.sh runs memstream's real-broker integration suite
# (internal/kafkait) against a single-node Apache Kafka started by
# scripts/kafka-broker.sh, and stops the broker afterwards.
#
# .ci/run and `make test-kafka` call it. It needs Java 17+ and, for the first
# fetch of the broker jars, Maven; when they are missing it installs
# openjdk-17-jre-headless and maven with apt-get (as root, or through sudo
# without a password), bounded by CI_KAFKA_INSTALL_TIMEOUT seconds.
#
# When the broker cannot be provided (no Java, no Maven and no way to install
# them, the jars cannot be resolved, the broker does not come up), it prints
# the exact error and a line starting with "SKIPPED:" and exits 0, so the
# kfake-based suite alone decides CI. When the broker is up, the exit status
# is the test's.
#
# Environment (optional):
#   CI_KAFKA_INSTALL_TIMEOUT  seconds allowed for apt-get (default 300)
#   CI_KAFKA_GO_TEST_FLAGS    go test flags (default: -race -timeout 20m)
#   CI_KAFKA_PACKAGES         packages to test (default ./internal/kafkait/...)
#   KAFKA_START_TIMEOUT       passed to kafka-broker.sh (default 120 there)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

INSTALL_TIMEOUT="${CI_KAFKA_INSTALL_TIMEOUT:-300}"
GO_TEST_FLAGS="${CI_KAFKA_GO_TEST_FLAGS:--race -timeout 20m}"
PACKAGES="${CI_KAFKA_PACKAGES:-./internal/kafkait/...}"
GO="${GO:-go}"

log() { printf 'ci-kafka: %s\n' "$*" >&2; }
skip() {
	log "$*"
	echo "SKIPPED: real-Kafka integration suite (internal/kafkait): $*"
	exit 0
}

java_ok() {
	local j="${JAVA_HOME:+$JAVA_HOME/bin/}java" v
	command -v "$j" >/dev/null 2>&1 || return 1
	# "openjdk version "17.0.15" ..." or "1.8.0_..." for Java 8.
	v="$("$j" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)[."].*/\1/p' | head -n1)"
	[ -n "$v" ] && [ "$v" -ge 17 ]
}

jars_cached() {
	local ver
	ver="$(sed -n 's:.*<kafka\.version>\(.*\)</kafka\.version>.*:\1:p' scripts/kafka/pom.xml | head -n1)"
	ls "${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memstream/kafka-$ver}"/libs/kafka_2.13-*.jar >/dev/null 2>&1
}

# install_pkgs PKG... installs the packages that are not installed yet
# (never upgrading one that is) with apt-get, as root or through passwordless
# sudo.
install_pkgs() {
	local sudo=() p missing=()
	for p in "$@"; do
		if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
			missing+=("$p")
		fi
	done
	if [ "${#missing[@]}" -eq 0 ]; then
		log "$* already installed"
		return 0
	fi
	set -- "${missing[@]}"
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			log "cannot install $*: not root and no passwordless sudo"
			return 1
		fi
	fi
	command -v apt-get >/dev/null || { log "cannot install $*: apt-get not found"; return 1; }
	log "installing $* (at most ${INSTALL_TIMEOUT}s)"
	DEBIAN_FRONTEND=noninteractive timeout "$INSTALL_TIMEOUT" "${sudo[@]}" apt-get update -q >&2 &&
		DEBIAN_FRONTEND=noninteractive timeout "$INSTALL_TIMEOUT" "${sudo[@]}" \
			apt-get install -y -q --no-install-recommends "$@" >&2
}

need=()
java_ok || need+=(openjdk-17-jre-headless)
if ! jars_cached && ! command -v mvn >/dev/null; then
	need+=(maven)
fi
if [ "${#need[@]}" -gt 0 ]; then
	install_pkgs "${need[@]}" || skip "could not install ${need[*]} (see the lines above)"
	java_ok || skip "java 17+ not found on PATH or in JAVA_HOME=${JAVA_HOME:-} although ${need[*]} is installed"
fi

# Stop the broker only if this script started it.
started=0
if ! scripts/kafka-broker.sh status >/dev/null 2>&1; then
	started=1
fi
errf="$(mktemp)"
trap 'rm -f "$errf"; if [ "$started" = 1 ]; then scripts/kafka-broker.sh stop >&2 || true; fi' EXIT
# The default ports lie inside Linux's ephemeral range (32768-60999), so an
# outgoing connection of another process can hold one at the moment the
# broker binds ("Address already in use") although nothing listens there.
# Unless the ports were chosen by the caller, such a start is tried again on
# ports below that range.
if [ -n "${KAFKA_PORT:-}" ]; then
	pairs="$KAFKA_PORT:${KAFKA_CONTROLLER_PORT:-39093}"
else
	pairs="39092:39093 29092:29093 19092:19093"
fi
up=0
for pair in $pairs; do
	export KAFKA_PORT="${pair%:*}" KAFKA_CONTROLLER_PORT="${pair#*:}"
	if out="$(scripts/kafka-broker.sh start 2>"$errf")"; then
		up=1
		break
	fi
	cat "$errf" >&2
	grep -q 'already in use' "$errf" || break
	log "ports $pair are taken; trying the next pair"
done
if [ "$up" -ne 1 ]; then
	skip "the broker did not start: $(grep '^kafka-broker:' "$errf" | grep -v 'last lines of' | tail -n 1)"
fi
cat "$errf" >&2
case "$out" in
KAFKA_BROKERS=?*) export "${out?}" ;;
*) skip "kafka-broker.sh start printed no KAFKA_BROKERS line (got: $out)" ;;
esac
log "broker up: $out; running $GO test $GO_TEST_FLAGS $PACKAGES"
# shellcheck disable=SC2086 # GO_TEST_FLAGS is a list of flags
"$GO" test $GO_TEST_FLAGS $PACKAGES
rc=$?
if [ "$rc" -eq 0 ]; then
	log "PASSED: real-Kafka integration suite"
else
	log "FAILED: real-Kafka integration suite (go test exit $rc)"
fi
exit "$rc"
