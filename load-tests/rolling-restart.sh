#!/usr/bin/env bash
# The rolling-restart soak: a fleet of three gateway instances in front of the sample backend, on a
# 3-master Redis Cluster with one replica each, Gatling's RetryStorm spreading every request round-robin over the
# instances in service. During the run each instance is restarted in turn (taken out of the rotation, drained,
# SIGTERM, started again, put back once healthy) and one master is failed over. At the end the backend's write log
# and the records (through the operator API) are checked: one upstream write per key, no lost result, no record
# stuck, every pending process seen to its end (dev.retrysafe.loadtests.soak.RollingRestartCheck).
#
#   load-tests/rolling-restart.sh                    # 300 s of load, a manual (coordinated) master failover
#   FAILOVER=kill load-tests/rolling-restart.sh      # the master is SIGKILLed instead; its replica takes over
#   DURATION=900 load-tests/rolling-restart.sh       # longer
#
# Needs a JDK 17+, redis-server and redis-cli (Redis 7 for sharded wake-ups; 6.2 works with classic ones) and curl.
# Settings (environment): DURATION seconds of load (300), STORM_INTERVAL seconds between storms (5), FAILOVER
# manual|kill (manual), DRAIN seconds between taking an instance out of the rotation and stopping it (2),
# GATEWAY_HEAP (384m), MVN_FLAGS extra Maven flags (e.g. -o), ports REDIS_BASE_PORT (17100..+5), BACKEND_PORT
# (18280), GATEWAY_BASE_PORT (18281..+2), MANAGEMENT_BASE_PORT (19281..+2).
# Everything (logs of each process, Gatling's output, the check, summary.txt) is in load-tests/target/rolling-restart/<time>/.
# Exit status: 0 when Gatling's gates and every end-of-run invariant held.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

DURATION="${DURATION:-300}"
STORM_INTERVAL="${STORM_INTERVAL:-5}"
FAILOVER="${FAILOVER:-manual}"
DRAIN="${DRAIN:-2}"
GATEWAY_HEAP="${GATEWAY_HEAP:-384m}"
REDIS_BASE_PORT="${REDIS_BASE_PORT:-17100}"
BACKEND_PORT="${BACKEND_PORT:-18280}"
GATEWAY_BASE_PORT="${GATEWAY_BASE_PORT:-18281}"
MANAGEMENT_BASE_PORT="${MANAGEMENT_BASE_PORT:-19281}"
OPERATOR_PASSWORD=soak-operator
ROUTE=onboarding-merchants

fail() { echo "rolling-restart.sh: $*" >&2; exit 2; }
elapsed() { awk -v from="$1" -v to="$2" -v less="${3:-0}" 'BEGIN { printf "%.1f", to - from - less }'; } # seconds
load_started=""
say() { # a line of the summary, with the time since the load started once it has
  local since=""
  [ -z "$load_started" ] || since=" t+$(( $(date +%s) - load_started ))s"
  printf '[%s%s] %s\n' "$(date -u +%H:%M:%S)" "$since" "$*" | tee -a "$out/summary.txt"
}
case "$FAILOVER" in manual|kill) ;; *) fail "FAILOVER is manual or kill, not '$FAILOVER'" ;; esac
for tool in java redis-server redis-cli curl; do
  command -v "$tool" >/dev/null 2>&1 || fail "needs $tool on the PATH"
done

out="$root/load-tests/target/rolling-restart/$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
: > "$out/summary.txt"

echo "rolling-restart.sh: building the gateway, the sample backend and load-tests (output in $out/build.log)"
# shellcheck disable=SC2086 # MVN_FLAGS is a list of flags
./mvnw -B -q ${MVN_FLAGS:-} -DskipTests -pl load-tests -am install dependency:build-classpath \
    -Dmdep.outputFile="$out/classpath.txt" -Dmdep.includeScope=runtime > "$out/build.log" 2>&1 \
  || { tail -n 30 "$out/build.log" >&2; fail "the build failed ($out/build.log)"; }
classpath="$root/load-tests/target/classes:$(cat "$out/classpath.txt")"
gateway_jar=$(ls "$root"/gateway/server/target/idempotency-gateway-server-*-exec.jar)
backend_jar=$(ls "$root"/sample-onboarding-backend/target/sample-onboarding-backend-*-exec.jar)

redis_pids=() gateway_pids=() other_pids=()
cleanup() {
  # The gateways stop first, while Redis still answers: their shutdown is then the one of a deploy, not of an outage.
  kill "${gateway_pids[@]}" "${other_pids[@]}" 2>/dev/null || true
  wait "${gateway_pids[@]}" "${other_pids[@]}" 2>/dev/null || true
  kill "${redis_pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- Redis Cluster: 3 masters, 1 replica each ----
redis_ports=()
start_redis() { # index
  local port=$((REDIS_BASE_PORT + $1))
  mkdir -p "$out/redis-$port"
  (cd "$out/redis-$port" && exec redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file nodes.conf --cluster-node-timeout 2000 --save '' --appendonly no \
      >> "$out/redis-$port/redis.log" 2>&1) &
  redis_pids[$1]=$!
}
for i in 0 1 2 3 4 5; do
  redis_ports+=("$((REDIS_BASE_PORT + i))")
  start_redis "$i"
done
for port in "${redis_ports[@]}"; do
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${redis_ports[@]}") --cluster-replicas 1 --cluster-yes \
  > "$out/cluster-create.log" 2>&1 || { cat "$out/cluster-create.log" >&2; fail "redis-cli --cluster create failed"; }
cluster_ok() {
  local port
  for port in "$@"; do
    redis-cli -p "$port" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || return 1
  done
}
for _ in $(seq 300); do cluster_ok "${redis_ports[@]}" && break; sleep 0.1; done
cluster_ok "${redis_ports[@]}" || fail "the cluster did not reach cluster_state:ok"
nodes=$(printf '127.0.0.1:%s,' "${redis_ports[@]}")
export REDIS_CLUSTER_NODES=${nodes%,}

# ---- the backend, logging every write it acts on ----
java -Xmx256m -jar "$backend_jar" --server.port="$BACKEND_PORT" --onboarding.write-log="$out/backend-writes.tsv" \
  > "$out/backend.log" 2>&1 &
other_pids+=($!)

# ---- three gateway instances ----
# 127.0.0.1, not localhost: Gatling shuffles a name's addresses, and a refused ::1 would say nothing about the fleet.
gateway_url() { echo "http://127.0.0.1:$((GATEWAY_BASE_PORT + $1))"; }
management_url() { echo "http://localhost:$((MANAGEMENT_BASE_PORT + $1))"; }
start_gateway() { # index
  java -Xmx"$GATEWAY_HEAP" -jar "$gateway_jar" --spring.profiles.active=cluster \
    --server.port="$((GATEWAY_BASE_PORT + $1))" --management.server.port="$((MANAGEMENT_BASE_PORT + $1))" \
    --onboarding.uri="http://localhost:$BACKEND_PORT" --idempotency.operator.password="$OPERATOR_PASSWORD" \
    --idempotency.record-counts.interval=15s >> "$out/gateway-$1.log" 2>&1 &
  gateway_pids[$1]=$!
}
wait_ready() { # index; waits for health UP, at most 180 s
  local deadline=$(( $(date +%s) + 180 ))
  until curl -fsS "$(management_url "$1")/actuator/health" 2>/dev/null | grep -q '"status":"UP"'; do
    kill -0 "${gateway_pids[$1]}" 2>/dev/null || fail "gateway $1 stopped while starting ($out/gateway-$1.log)"
    [ "$(date +%s)" -lt "$deadline" ] || fail "gateway $1 not healthy after 180 s ($out/gateway-$1.log)"
    sleep 0.2
  done
}
for i in 0 1 2; do start_gateway "$i"; done
for i in 0 1 2; do wait_ready "$i"; done
for _ in $(seq 300); do curl -s -o /dev/null "http://localhost:$BACKEND_PORT/stats" && break; sleep 0.2; done

# ---- the rotation: which instances the load test sends to ----
in_service=(0 1 2)
write_rotation() {
  local i
  : > "$out/rotation.tmp"
  for i in "${in_service[@]}"; do gateway_url "$i" >> "$out/rotation.tmp"; done
  mv "$out/rotation.tmp" "$out/rotation"
}
write_rotation

restart_gateway() { # index
  local i=$1 t0 stopped ready
  t0=$(date +%s.%N)
  in_service=("${in_service[@]/$i}")
  read -r -a in_service <<< "${in_service[*]}"
  write_rotation
  sleep "$DRAIN"
  kill -TERM "${gateway_pids[$i]}"
  wait "${gateway_pids[$i]}" 2>/dev/null || true
  stopped=$(date +%s.%N)
  start_gateway "$i"
  wait_ready "$i"
  ready=$(date +%s.%N)
  in_service+=("$i")
  write_rotation
  say "gateway $i restarted: out of the rotation ${DRAIN} s before SIGTERM, stopped in $(elapsed "$t0" "$stopped" "$DRAIN") s, healthy again $(elapsed "$stopped" "$ready") s later, back in the rotation"
}

# The master of the first slot range, and its replica.
failover_master() {
  local master_port master_id replica_port t0 promoted
  master_port=$(redis-cli -p "${redis_ports[0]}" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ {print $2}' \
    | sed 's/@.*//; s/.*://' | sort -n | head -n 1)
  master_id=$(redis-cli -p "$master_port" cluster myid)
  replica_port=$(redis-cli -p "${redis_ports[0]}" cluster nodes | awk -v m="$master_id" '$4 == m {print $2}' \
    | sed 's/@.*//; s/.*://' | head -n 1)
  [ -n "$replica_port" ] || fail "no replica found for the master on port $master_port"
  t0=$(date +%s.%N)
  if [ "$FAILOVER" = manual ]; then
    redis-cli -p "$replica_port" cluster failover > /dev/null
  else
    kill -9 "${redis_pids[$((master_port - REDIS_BASE_PORT))]}"
  fi
  until redis-cli -p "$replica_port" role 2>/dev/null | head -n 1 | grep -q '^master$'; do sleep 0.05; done
  promoted=$(date +%s.%N)
  say "master on port $master_port failed over ($FAILOVER): its replica on port $replica_port was master $(elapsed "$t0" "$promoted") s later"
  if [ "$FAILOVER" = kill ]; then
    start_redis "$((master_port - REDIS_BASE_PORT))"
    for _ in $(seq 300); do cluster_ok "${redis_ports[@]}" && break; sleep 0.1; done
    say "the killed node on port $master_port is back (as a replica of $replica_port); cluster_state ok: $(cluster_ok "${redis_ports[@]}" && echo yes || echo no)"
  fi
}

# ---- the load ----
urls=$(for i in 0 1 2; do gateway_url "$i"; done | paste -sd, -)
say "fleet ready: gateways $urls, cluster $REDIS_CLUSTER_NODES ($(redis-server --version | grep -o 'v=[^ ]*')), failover $FAILOVER, $(nproc) cores"
# shellcheck disable=SC2086
./mvnw -B ${MVN_FLAGS:-} -pl load-tests test-compile gatling:test \
  -Dgatling.simulationClass=dev.retrysafe.loadtests.gatling.RetryStormSimulation -Dprofile=soak \
  -DdurationSeconds="$DURATION" -DstormIntervalSeconds="$STORM_INTERVAL" -DbaseUrls="$urls" \
  -DrotationFile="$out/rotation" -DkeysFile="$out/keys.txt" -Dgatling.failedRequests=DEBUG \
  > "$out/gatling.log" 2>&1 &
gatling_pid=$!
other_pids+=("$gatling_pid")

# The schedule counts from the first write the backend sees (Maven and Gatling take a while to start).
for _ in $(seq 900); do [ -s "$out/backend-writes.tsv" ] && break; kill -0 "$gatling_pid" 2>/dev/null || break; sleep 0.2; done
[ -s "$out/backend-writes.tsv" ] || { tail -n 40 "$out/gatling.log" >&2; fail "no write reached the backend ($out/gatling.log)"; }
load_started=$(date +%s)
say "load started"
at() { # seconds after the start of the load
  local wait=$(( load_started + $1 - $(date +%s) ))
  [ "$wait" -le 0 ] || sleep "$wait"
}
at $((DURATION * 15 / 100)); restart_gateway 0
at $((DURATION * 35 / 100)); restart_gateway 1
at $((DURATION * 50 / 100)); failover_master
at $((DURATION * 65 / 100)); restart_gateway 2

gatling_status=0
wait "$gatling_pid" || gatling_status=$?
say "load ended (Gatling exit status $gatling_status)"
awk '/^---- Idempotency verdict: /,/^====/' "$out/gatling.log" | tee -a "$out/summary.txt"
sed -n '/^---- Global Information/,/^====/p' "$out/gatling.log" | tee -a "$out/summary.txt"

# ---- the end-of-run check ----
check_status=0
java -cp "$classpath" dev.retrysafe.loadtests.soak.RollingRestartCheck writes="$out/backend-writes.tsv" \
  keys="$out/keys.txt" operator="$(management_url 0)" user="operator:$OPERATOR_PASSWORD" route="$ROUTE" \
  waitSeconds=150 2>&1 | tee "$out/check.txt" || check_status=$?
# tee hides java's status: the verdict line says it.
grep -q '^VERDICT: every invariant held' "$out/check.txt" || check_status=1
cat "$out/check.txt" >> "$out/summary.txt"
for i in 0 1 2; do
  say "gauges on gateway $i: $(curl -fsS "$(management_url "$i")/actuator/prometheus" \
    | grep -E '^idempotency_records(_processes_pending|_pending)?[{ ]' | sed 's/^idempotency_records//' | paste -sd' ' -)"
done
# When the 503s were answered (the gateways log each refusal), in 5 s buckets since the load started.
refusals=$(cat "$out"/gateway-*.log | { grep 'Idempotency store unavailable, refusing' || true; } | cut -c1-19 \
  | while read -r stamp; do echo $(( ($(date -u -d "$stamp" +%s) - load_started) / 5 * 5 )); done \
  | sort -n | uniq -c | awk '{printf "t+%ss: %s  ", $2, $1}')
say "503 store unavailable by time (5 s buckets): ${refusals:-none}"
say "gateway logs: $(cat "$out"/gateway-*.log | grep -c ' ERROR ' || true) ERROR lines, $(cat "$out"/gateway-*.log | grep -c ' WARN ' || true) WARN lines"
say "failed requests (KO) by instance, from Gatling's debug log: $(grep -oE '^(POST|PUT|GET) http://[^/ ]+' "$out/gatling.log" | sed 's/^[A-Z]* //' | sort | uniq -c | paste -sd' ' - || true)"
say "Gatling report: $(grep -oE 'file://[^ ]*index\.html' "$out/gatling.log" | head -n 1)"
echo "rolling-restart.sh: summary in $out/summary.txt"
if [ "$gatling_status" -eq 0 ] && [ "$check_status" -eq 0 ]; then
  echo "rolling-restart.sh: PASSED"
  exit 0
fi
echo "rolling-restart.sh: FAILED (Gatling $gatling_status, check $check_status)"
exit 1
