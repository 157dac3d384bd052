#!/usr/bin/env bash
# scripts/crash-test.sh — SIGKILL `memstream serve` mid-ingest, restart it,
# and verify that every event was ingested exactly once.
#
# It builds the binary, runs `memstream serve` on a fresh temp data_dir
# (embedded Kafka with its on-disk log + managed PostgreSQL, non-default
# ports via --set), produces N events with `memstream produce`, kills serve
# with SIGKILL once part of them is ingested (no drain, no final commit),
# restarts it, waits, and checks:
#   - GET /v1/default/banks/<bank>/stats reports events_ingested == N;
#   - every event's marker fact is stored exactly once (psql on the managed
#     server): nothing lost, nothing doubled.
# Prints PASS or FAIL and exits non-zero on FAIL.
#
# Environment: N (default 3000 events), KILL_AT (events ingested before the
# kill, default N/3), TIMEOUT (seconds to wait for the rest, default 600),
# KEEP=1 keeps the temp dir.
set -euo pipefail

N=${N:-3000}
KILL_AT=${KILL_AT:-$((N / 3))}
TIMEOUT=${TIMEOUT:-600}
BANK=crash-test
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/memstream-crash-XXXXXX)
# The managed PostgreSQL runs as another user when we are root.
chmod 711 "$WORK"
BIN=$WORK/memstream
BASE=$((20000 + RANDOM % 20000))
KAFKA_PORT=$BASE PG_PORT=$((BASE + 1)) HTTP_PORT=$((BASE + 2))
SETS=(--set "data_dir=$WORK/data" --set "kafka.embedded_addr=127.0.0.1:$KAFKA_PORT"
	--set "database.embedded_port=$PG_PORT" --set "http.addr=127.0.0.1:$HTTP_PORT" --set log.level=warn)
API=http://127.0.0.1:$HTTP_PORT
PGURL="postgres://memstream@127.0.0.1:$PG_PORT/memstream?sslmode=disable"
SERVE_PID=

log() { echo "crash-test: $*" >&2; }

cleanup() {
	if [[ -n $SERVE_PID ]] && kill -0 "$SERVE_PID" 2>/dev/null; then
		kill -TERM "$SERVE_PID" 2>/dev/null || true
		wait "$SERVE_PID" 2>/dev/null || true
	fi
	# serve leaves the managed server running only when it is killed; stop
	# it so the temp dir can go.
	if [[ -f $WORK/data/postgres/postmaster.pid ]]; then
		local owner
		owner=$(stat -c %U "$WORK/data/postgres")
		if [[ $owner == "$(id -un)" ]]; then
			pg_ctl_bin=$(ls /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | tail -1)
			"$pg_ctl_bin" -D "$WORK/data/postgres" -m fast stop >/dev/null 2>&1 || true
		else
			su "$owner" -s /bin/sh -c "$(ls /usr/lib/postgresql/*/bin/pg_ctl | tail -1) -D '$WORK/data/postgres' -m fast stop" >/dev/null 2>&1 || true
		fi
	fi
	if [[ ${KEEP:-0} == 1 ]]; then
		log "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

fail() {
	log "$*"
	[[ -f $WORK/serve.log ]] && tail -20 "$WORK/serve.log" >&2
	echo "FAIL: $*"
	exit 1
}

start_serve() {
	"$BIN" serve --roles ingest,api "${SETS[@]}" >>"$WORK/serve.log" 2>&1 &
	SERVE_PID=$!
	local deadline=$((SECONDS + 180))
	until curl -fsS "$API/health/ready" >/dev/null 2>&1; do
		kill -0 "$SERVE_PID" 2>/dev/null || fail "serve exited while starting"
		((SECONDS < deadline)) || fail "serve not ready after 180s"
		sleep 1
	done
}

ingested() {
	curl -fsS "$API/v1/default/banks/$BANK/stats" 2>/dev/null |
		sed -n 's/.*"events_ingested": *\([0-9]*\).*/\1/p' | grep . || echo 0
}

log "building into $WORK"
(cd "$ROOT" && go build -o "$BIN" ./cmd/memstream)

log "generating $N events"
for ((i = 0; i < N; i++)); do
	printf '{"bank_id":"%s","event_id":"ct-%06d","document_id":"conv-%d","messages":[{"role":"user","name":"Dana","content":"I booked ticket CT%06d for the Porto trip.","timestamp":"2026-11-01T10:00:00Z"},{"role":"assistant","content":"Noted, I will remind you.","timestamp":"2026-11-01T10:00:05Z"}]}\n' \
		"$BANK" "$i" $((i % 23)) "$i"
done >"$WORK/events.jsonl"

log "starting serve (kafka :$KAFKA_PORT, postgres :$PG_PORT, http :$HTTP_PORT)"
start_serve
log "producing"
"$BIN" produce "$WORK/events.jsonl" "${SETS[@]}" >/dev/null 2>>"$WORK/produce.log" || fail "produce failed: $(tail -3 "$WORK/produce.log")"

deadline=$((SECONDS + TIMEOUT))
until (($(ingested) >= KILL_AT)); do
	((SECONDS < deadline)) || fail "only $(ingested) events ingested before the kill deadline"
	sleep 0.2
done
before=$(ingested)
kill -KILL "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=
log "SIGKILLed serve with $before of $N events ingested"
((before < N)) || fail "all events were ingested before the kill; raise N or lower KILL_AT"

log "restarting serve"
start_serve
deadline=$((SECONDS + TIMEOUT))
while :; do
	got=$(ingested)
	((got >= N)) && break
	((SECONDS < deadline)) || fail "events_ingested = $got after ${TIMEOUT}s, want $N"
	sleep 1
done
# Give a replayed duplicate the chance to show up before counting.
sleep 3
got=$(ingested)

q() { psql "$PGURL" -XAtqc "$1"; }
facts=$(q "SELECT count(*) FROM memory_units WHERE bank_id = '$BANK' AND text ~ 'CT[0-9]{6}'")
distinct=$(q "SELECT count(DISTINCT substring(text from 'CT[0-9]{6}')) FROM memory_units WHERE bank_id = '$BANK' AND text ~ 'CT[0-9]{6}'")
events=$(q "SELECT count(*) FROM events WHERE bank_id = '$BANK'")
dead=$(q "SELECT count(*) FROM dead_letters WHERE bank_id = '$BANK'")
log "stats events_ingested=$got; db events=$events marker facts=$facts distinct=$distinct dead_letters=$dead"

[[ $got == "$N" ]] || fail "events_ingested = $got, want $N"
[[ $events == "$N" ]] || fail "events rows = $events, want $N"
[[ $distinct == "$N" ]] || fail "$distinct distinct marker facts, want $N (lost facts)"
[[ $facts == "$N" ]] || fail "$facts marker facts for $N events (doubled facts)"
[[ $dead == 0 ]] || fail "$dead events dead-lettered"
echo "PASS: killed at $before/$N, restarted, $N events ingested once, no duplicate facts"
