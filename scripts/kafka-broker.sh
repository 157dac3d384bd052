#!/usr/bin/env bash
# scripts/kafka-broker.sh start|stop|status|restart
#
# A real single-node Apache Kafka 4.x broker (KRaft combined mode:
# process.roles=broker,controller) on loopback, for memstream's integration
# tests. The broker jars come from Maven Central through scripts/kafka/pom.xml
# (mvn dependency:copy-dependencies) into a per-user cache, once per version:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/memstream/kafka-<version>/libs
# Runtime state (server.properties, data dir, pid file, log) lives in
# scripts/.kafka/ (gitignored).
#
#   start    fetch jars if needed, format fresh storage, start the broker in
#            the background and wait until it serves metadata requests; prints
#            KAFKA_BROKERS=<host:port> on stdout (everything else goes to
#            stderr), so `eval "$(scripts/kafka-broker.sh start)"` works.
#            Already running: prints the same line and exits 0.
#   stop     SIGTERM, wait, then SIGKILL. Not running: exits 0.
#   status   prints "running pid=<pid> KAFKA_BROKERS=..." (exit 0) or
#            "stopped" (exit 3).
#   restart  stop + start.
#
# Environment (all optional):
#   KAFKA_VERSION          Kafka version (default: <kafka.version> in scripts/kafka/pom.xml)
#   KAFKA_PORT             PLAINTEXT listener port (default 39092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port (default 39093)
#   KAFKA_START_TIMEOUT    seconds to wait for the broker (default 120)
#   KAFKA_STOP_TIMEOUT     seconds to wait after SIGTERM before SIGKILL (default 30)
#   KAFKA_KEEP_DATA=1      keep the data dir of the previous run instead of wiping it
#   KAFKA_LOG_LEVEL        root log level of the broker (default WARN)
#   KAFKA_HEAP_OPTS        default "-Xms256m -Xmx512m"
#   KAFKA_JVM_OPTS         extra JVM options for the broker
#   KAFKA_STATE_DIR        default scripts/.kafka
#   KAFKA_CACHE_DIR        default ${XDG_CACHE_HOME:-$HOME/.cache}/memstream/kafka-<version>
#   JAVA_HOME              Java 17+ to use (default: java on PATH)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
POM="$SCRIPT_DIR/kafka/pom.xml"
LOG4J_CONF="$SCRIPT_DIR/kafka/log4j2.properties"

pom_version="$(sed -n 's:.*<kafka\.version>\(.*\)</kafka\.version>.*:\1:p' "$POM" | head -n1)"
KAFKA_VERSION="${KAFKA_VERSION:-$pom_version}"
KAFKA_HOST=127.0.0.1
KAFKA_PORT="${KAFKA_PORT:-39092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-39093}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"
KAFKA_STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-30}"
KAFKA_LOG_LEVEL="${KAFKA_LOG_LEVEL:-WARN}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
STATE_DIR="${KAFKA_STATE_DIR:-$SCRIPT_DIR/.kafka}"
CACHE_DIR="${KAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memstream/kafka-$KAFKA_VERSION}"
LIBS="$CACHE_DIR/libs"
PID_FILE="$STATE_DIR/kafka.pid"
LOG_FILE="$STATE_DIR/kafka.log"
CONF_FILE="$STATE_DIR/server.properties"
DATA_DIR="$STATE_DIR/data"
BROKERS="$KAFKA_HOST:$KAFKA_PORT"

JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
# JVM options for the short-lived CLI tools (storage format, readiness check).
TOOL_OPTS=(-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$LOG4J_CONF" -Dkafka.root.log.level=ERROR)

log() { echo "kafka-broker: $*" >&2; }
die() { log "$*"; exit 1; }

now() { date +%s; }

pid_alive() {
  # Our broker: the pid file's process is alive and runs kafka.Kafka with our config.
  local pid
  [[ -s "$PID_FILE" ]] || return 1
  pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka\.Kafka $CONF_FILE" || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/$KAFKA_HOST/$1") 2>/dev/null; }

check_java() {
  command -v "$JAVA" >/dev/null 2>&1 || die "java not found (need Java 17+; set JAVA_HOME or put java on PATH)"
  local v major
  v="$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n1)"
  major="${v%%.*}"
  [[ "$major" =~ ^[0-9]+$ && "$major" -ge 17 ]] || die "Java 17+ required for Kafka $KAFKA_VERSION, found '$v' ($JAVA)"
}

# Download the broker's jars once per version (and again if the pom changes).
ensure_libs() {
  local stamp="$CACHE_DIR/libs.stamp" want
  want="$(sha256sum <"$POM" | cut -d' ' -f1) $KAFKA_VERSION"
  if [[ -d "$LIBS" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found: needed once to fetch Kafka $KAFKA_VERSION jars into $LIBS"
  mkdir -p "$CACHE_DIR"
  local tmp="$CACHE_DIR/libs.tmp.$$" flog="$CACHE_DIR/fetch.log" t0
  rm -rf "$tmp"
  t0="$(now)"
  log "fetching Kafka $KAFKA_VERSION jars with Maven into $LIBS ..."
  if ! mvn -B -q -Dstyle.color=never -f "$POM" "-Dkafka.version=$KAFKA_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime "-DoutputDirectory=$tmp" >"$flog" 2>&1; then
    tail -n 40 "$flog" >&2
    rm -rf "$tmp"
    die "could not resolve Kafka $KAFKA_VERSION from Maven (full output: $flog)"
  fi
  [[ -f "$tmp/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch (see $flog)"
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS"
  echo "$want" >"$stamp"
  log "fetched $(find "$LIBS" -name '*.jar' | wc -l) jars ($(du -sh "$LIBS" | cut -f1)) in $(( $(now) - t0 ))s"
}

write_config() {
  mkdir -p "$STATE_DIR"
  cat >"$CONF_FILE" <<EOF
# Generated by scripts/kafka-broker.sh - edits are overwritten on start.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$KAFKA_HOST:$KAFKA_PORT,CONTROLLER://$KAFKA_HOST:$KAFKA_CONTROLLER_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA_DIR

num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true
num.network.threads=2
num.io.threads=4
EOF
}

format_storage() {
  if [[ "${KAFKA_KEEP_DATA:-}" == 1 && -f "$DATA_DIR/meta.properties" ]]; then
    log "keeping existing data in $DATA_DIR"
    return 0
  fi
  rm -rf "$DATA_DIR"
  local cluster_id
  # 16 random bytes, URL-safe base64 without padding: the format of a Kafka
  # cluster id. Like Kafka's own random-uuid, avoid a leading '-' (CLI parsers).
  cluster_id=-
  while [[ "$cluster_id" == -* ]]; do
    cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
  done
  if ! "$JAVA" "${TOOL_OPTS[@]}" -cp "$LIBS/*" kafka.tools.StorageTool format \
      --standalone "--cluster-id=$cluster_id" "--config=$CONF_FILE" >"$STATE_DIR/format.log" 2>&1; then
    cat "$STATE_DIR/format.log" >&2
    die "storage format failed"
  fi
}

broker_ready() {
  # Metadata round trip through the real client: proves the broker is serving.
  timeout 60 "$JAVA" "${TOOL_OPTS[@]}" -cp "$LIBS/*" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$BROKERS" --list >/dev/null 2>>"$STATE_DIR/ready.log"
}

fail_start() {
  log "$1"
  if [[ -f "$LOG_FILE" ]]; then
    log "last lines of $LOG_FILE:"
    tail -n 60 "$LOG_FILE" >&2
  fi
  exit 1
}

do_start() {
  local pid t0
  if pid="$(pid_alive)"; then
    log "already running (pid $pid)"
    echo "KAFKA_BROKERS=$BROKERS"
    return 0
  fi
  rm -f "$PID_FILE"
  t0="$(now)"
  check_java
  for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    ! port_open "$p" || die "port $KAFKA_HOST:$p is already in use by another process (set KAFKA_PORT / KAFKA_CONTROLLER_PORT)"
  done
  ensure_libs
  write_config
  format_storage
  : >"$STATE_DIR/ready.log"

  # shellcheck disable=SC2086  # heap/JVM opts are intentionally word-split
  nohup "$JAVA" $KAFKA_HEAP_OPTS -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true "-Dlog4j2.configurationFile=$LOG4J_CONF" \
    "-Dkafka.root.log.level=$KAFKA_LOG_LEVEL" ${KAFKA_JVM_OPTS:-} \
    -cp "$LIBS/*" kafka.Kafka "$CONF_FILE" </dev/null >"$LOG_FILE" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$PID_FILE"

  local deadline=$(( t0 + KAFKA_START_TIMEOUT ))
  while :; do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PID_FILE"; fail_start "broker exited during startup"; }
    if port_open "$KAFKA_PORT" && broker_ready; then
      break
    fi
    if (( $(now) >= deadline )); then
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$PID_FILE"
      fail_start "broker not ready after ${KAFKA_START_TIMEOUT}s (killed pid $pid)"
    fi
    sleep 0.5
  done
  log "Kafka $KAFKA_VERSION running (pid $pid) on $BROKERS, ready in $(( $(now) - t0 ))s; log: $LOG_FILE"
  echo "KAFKA_BROKERS=$BROKERS"
}

do_stop() {
  local pid
  if ! pid="$(pid_alive)"; then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for (( i = 0; i < KAFKA_STOP_TIMEOUT * 10; i++ )); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid still alive after ${KAFKA_STOP_TIMEOUT}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$PID_FILE"
  log "stopped (pid $pid)"
}

do_status() {
  local pid
  if pid="$(pid_alive)"; then
    echo "running pid=$pid KAFKA_BROKERS=$BROKERS"
    return 0
  fi
  echo "stopped"
  return 3
}

with_lock() {
  mkdir -p "$STATE_DIR"
  exec 9>"$STATE_DIR/.lock"
  flock -w 300 9 || die "could not lock $STATE_DIR/.lock"
  "$@"
}

case "${1:-}" in
  start) with_lock do_start ;;
  stop) with_lock do_stop ;;
  restart) with_lock do_stop; with_lock do_start ;;
  status) do_status ;;
  *) echo "usage: $0 start|stop|status|restart" >&2; exit 2 ;;
esac
