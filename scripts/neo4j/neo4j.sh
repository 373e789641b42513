#!/usr/bin/env bash
# Run a throw-away Neo4j Community server (no Docker, no package): jars from Maven Central, Java 17+.
#
#   scripts/neo4j/neo4j.sh start    # prints bolt://127.0.0.1:PORT on stdout once Bolt answers
#   scripts/neo4j/neo4j.sh status   # prints the URI and exits 0 if running, exits 1 otherwise
#   scripts/neo4j/neo4j.sh stop     # stops it (and forgets its data)
#
#   export EVENTFOLD_TEST_NEO4J_URI=$(scripts/neo4j/neo4j.sh start)
#
# Environment: EVENTFOLD_HOME (default ~/.cache/eventfold) holds lib/ (the jars, fetched with
# `mvn dependency:copy-dependencies` from scripts/neo4j/pom.xml when missing; Maven's local repository
# caches them) and the run directory; NEO4J_RUN_NAME (default "default") names an instance, so several can
# run side by side; NEO4J_START_TIMEOUT (default 120 s); NEO4J_HEAP (default 512m); NEO4J_PAGECACHE (64m).
# Bolt listens on 127.0.0.1 only and authentication is off: for development and tests, never production.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASE="${EVENTFOLD_HOME:-$HOME/.cache/eventfold}/neo4j"
LIB="$BASE/lib"
RUN_NAME="${NEO4J_RUN_NAME:-default}"
# the run directory is removed by `stop`/`start`: a name must stay one plain path component under run/
if [[ ! "$RUN_NAME" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$ ]]; then
  echo "neo4j.sh: NEO4J_RUN_NAME must be letters, digits, '_', '.', '-' (no '/', not starting with '.'), got '$RUN_NAME'" >&2
  exit 2
fi
RUN="$BASE/run/$RUN_NAME"
TIMEOUT="${NEO4J_START_TIMEOUT:-120}"
HEAP="${NEO4J_HEAP:-512m}"
PAGECACHE="${NEO4J_PAGECACHE:-64m}"

die() { echo "neo4j.sh: $*" >&2; exit 1; }
log() { echo "neo4j.sh: $*" >&2; }

running_pid() {
  [[ -f "$RUN/pid" ]] || return 1
  local pid; pid="$(cat "$RUN/pid")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && grep -q CommunityEntryPoint "/proc/$pid/cmdline" 2>/dev/null \
    && echo "$pid"
}

bolt_answers() {  # Bolt handshake: magic + 4 proposed versions; a server replies with 4 bytes
  local port="$1" reply
  reply="$({ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || exit 1
           printf '\x60\x60\xb0\x17\x00\x00\x04\x04\x00\x00\x00\x05\x00\x00\x00\x04\x00\x00\x00\x03' >&3
           timeout 2 head -c 4 <&3 | od -An -tx1 | tr -d ' \n')" || return 1
  [[ ${#reply} -eq 8 && "$reply" != "00000000" ]]
}

free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
  else
    local p; for p in $(shuf -i 20000-60000 -n 50); do
      (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done; die "no free port found"
  fi
}

fetch_jars() {
  if compgen -G "$LIB/neo4j-server-*.jar" >/dev/null; then return; fi
  command -v mvn >/dev/null || die "Neo4j jars missing in $LIB and Maven (mvn) is not installed"
  log "fetching Neo4j Community jars into $LIB (Maven Central; cached in ~/.m2) ..."
  mvn -q -f "$HERE/pom.xml" dependency:copy-dependencies -DoutputDirectory="$LIB" >&2 \
    || die "mvn dependency:copy-dependencies failed"
}

write_config() {
  local port="$1" conf="$RUN/conf"
  mkdir -p "$conf" "$RUN/data" "$RUN/logs" "$RUN/plugins" "$RUN/import" "$RUN/run"
  cat >"$conf/neo4j.conf" <<EOF
server.directories.data=$RUN/data
server.directories.logs=$RUN/logs
server.directories.plugins=$RUN/plugins
server.directories.import=$RUN/import
server.directories.run=$RUN/run
server.default_listen_address=127.0.0.1
server.bolt.enabled=true
server.bolt.listen_address=127.0.0.1:$port
server.bolt.advertised_address=127.0.0.1:$port
server.bolt.tls_level=DISABLED
server.http.enabled=false
server.https.enabled=false
dbms.security.auth_enabled=false
server.memory.pagecache.size=$PAGECACHE
db.tx_log.rotation.retention_policy=1 files
server.logs.config=$conf/server-logs.xml
server.logs.user.config=$conf/user-logs.xml
EOF
  local layout='<PatternLayout pattern="%d{yyyy-MM-dd HH:mm:ss.SSSZ} %-5p %m%n"/>'
  cat >"$conf/server-logs.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="ERROR">
  <Appenders><File name="Debug" fileName="$RUN/logs/debug.log">$layout</File></Appenders>
  <Loggers><Root level="INFO"><AppenderRef ref="Debug"/></Root></Loggers>
</Configuration>
EOF
  cat >"$conf/user-logs.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="ERROR">
  <Appenders><File name="Neo4jLog" fileName="$RUN/logs/neo4j.log">$layout</File></Appenders>
  <Loggers><Root level="INFO"><AppenderRef ref="Neo4jLog"/></Root></Loggers>
</Configuration>
EOF
}

lock() {  # one start/stop at a time (per EVENTFOLD_HOME); the server must not inherit this fd
  exec 9>"$BASE/run/.lock"
  flock -w 180 9 || die "another neo4j.sh start/stop holds $BASE/run/.lock for 180 s"
}

show_logs() {
  local f; for f in "$RUN/console.log" "$RUN/logs/neo4j.log" "$RUN/logs/debug.log"; do
    [[ -s "$f" ]] && { echo "--- tail of $f" >&2; tail -n 40 "$f" >&2; }
  done; return 0
}

start() {
  mkdir -p "$BASE/run"
  lock
  if pid="$(running_pid)"; then echo "bolt://127.0.0.1:$(cat "$RUN/port")"; return; fi
  command -v java >/dev/null || die "java not found (Neo4j 5 needs Java 17 or 21)"
  fetch_jars
  rm -rf "$RUN"; mkdir -p "$RUN"
  local port; port="$(free_port)"; echo "$port" >"$RUN/port"
  write_config "$port"
  # the JVM flags Neo4j's own launcher passes on Java 17+
  nohup java -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -XX:-OmitStackTraceInFastThrow \
    -Dlog4j2.disable.jmx=true -Dfile.encoding=UTF-8 -Dio.netty.tryReflectionSetAccessible=true \
    --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED \
    --enable-native-access=ALL-UNNAMED \
    -cp "$LIB/*" org.neo4j.server.CommunityEntryPoint --home-dir="$RUN" --config-dir="$RUN/conf" \
    >"$RUN/console.log" 2>&1 </dev/null 9>&- &
  local pid=$!; echo "$pid" >"$RUN/pid"
  local waited=0
  until bolt_answers "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then show_logs; die "Neo4j exited during startup (logs above, run dir $RUN)"; fi
    if (( waited >= TIMEOUT )); then
      show_logs; kill "$pid" 2>/dev/null || true
      die "Bolt on 127.0.0.1:$port did not answer within ${TIMEOUT}s (logs above, run dir $RUN)"
    fi
    sleep 1; waited=$((waited + 1))
  done
  log "Neo4j up after ${waited}s (pid $pid, run dir $RUN)"
  echo "bolt://127.0.0.1:$port"
}

stop() {
  mkdir -p "$BASE/run"
  lock
  local pid; if ! pid="$(running_pid)"; then log "not running"; rm -rf "$RUN"; return 0; fi
  kill "$pid"
  local i; for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then log "pid $pid ignored SIGTERM for 30 s; killing"; kill -9 "$pid" || true; fi
  rm -rf "$RUN"
  log "stopped (pid $pid)"
}

status() {
  if running_pid >/dev/null; then echo "bolt://127.0.0.1:$(cat "$RUN/port")"; else log "not running"; return 1; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: $0 start|stop|status" ;;
esac
