#!/usr/bin/env bash
# Peer benchmark: our runnable server and someone else's gateway (minimal-gateway: a bare Spring
# Cloud Gateway app with only our filter library added), one JVM at a time, on the same Redis and the same backend
# (nginx answering 202 like Onboarding, and COMPLETED to a status read), load by wrk. In each JVM: a plain route, an
# Idempotency route, the same route tracking processes (process-status-uri, as the shipped Onboarding route); in
# minimal-gateway also the peers, Spring Cloud Gateway's own RequestRateLimiter (one Lua call per request) and a naive
# hand-written idempotency filter (GET, SET NX, SET; no fingerprint: minimal-gateway's NaiveIdempotency). Every
# target's throughput is printed as a ratio to its own JVM's plain route, its CPU per request beside the plain
# route's, its p50 at LATENCY_CONNECTIONS beside the plain route's, and the two plain routes to each other; the table
# goes to load-tests/target/peers/peers.md, with what Redis did for each target (its commands per request and the
# time inside Redis per call, from INFO commandstats).
#
#   load-tests/peers.sh                                    # about 18 minutes
#   DURATION=20 ROUNDS=5 WARMUP_PASSES=5 load-tests/peers.sh   # steadier
#
# Settings (environment): WARMUP seconds per target and pass (15), WARMUP_PASSES over all targets (3), DURATION
# seconds per measurement (10), ROUNDS of measurements, the median reported (3), CONNECTIONS (32), THREADS for wrk
# (2), REPLAY_KEYS (1000), BODY_BYTES (0: the 600-byte merchant; more pads it to about that size), JAVA_OPTS for
# both JVMs (-Xmx512m), PROFILE=1 to record a JFR of each target in a pass of its own after the measured ones
# (load-tests/target/peers/JVM-TARGET.jfr, read by load-tests/jfr-breakdown.py); ports BENCH_GATEWAY_PORT (18090),
# BENCH_BACKEND_PORT (18091),
# BENCH_REDIS_PORT (16390), BENCH_MANAGEMENT_PORT (18093). To find what a setting costs: JVMS (server minimal),
# TARGETS (plain rate-limiter naive-first-writes naive-replays first-writes replays tracked-first-writes),
# LATENCY_CONNECTIONS (4: more runs per target at that many connections, for its p50; 0 skips them), LATENCY_ROUNDS
# (3: that many such runs per target, interleaved over the targets, the median p50 reported; one 10 s p50 swung by
# 0.5-1 ms from run to run on a shared 2-core VM), SERVER_ARGS /
# MINIMAL_ARGS (extra --property=value arguments). NEAR_CACHE (true, as the server's shipped configuration has it):
# idempotency.store.near-cache.enabled in both JVMs; false measures replays read from Redis.
# RECORDS (0): that many COMPLETED records put in Redis before the warm-up (copies of one real first write), to see
# what a large store costs. PROCESS_DRAIN_LIMIT (300): after each run, at most that many seconds of waiting for the
# processes its tracked 202s left to be polled and ended, so that their polls count in the tracked target's CPU and
# not in the next target's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

WARMUP="${WARMUP:-15}"
WARMUP_PASSES="${WARMUP_PASSES:-3}"
DURATION="${DURATION:-10}"
ROUNDS="${ROUNDS:-3}"
CONNECTIONS="${CONNECTIONS:-32}"
LATENCY_CONNECTIONS="${LATENCY_CONNECTIONS:-4}"
LATENCY_ROUNDS="${LATENCY_ROUNDS:-3}"
THREADS="${THREADS:-2}"
REPLAY_KEYS="${REPLAY_KEYS:-1000}"
BODY_BYTES="${BODY_BYTES:-0}"
RECORDS="${RECORDS:-0}"
PROCESS_DRAIN_LIMIT="${PROCESS_DRAIN_LIMIT:-300}"
NEAR_CACHE="${NEAR_CACHE:-true}"
JAVA_OPTS="${JAVA_OPTS:--Xmx512m}"
GATEWAY_PORT="${BENCH_GATEWAY_PORT:-18090}"
BACKEND_PORT="${BENCH_BACKEND_PORT:-18091}"
REDIS_PORT="${BENCH_REDIS_PORT:-16390}"
MANAGEMENT_PORT="${BENCH_MANAGEMENT_PORT:-18093}"
out="$root/load-tests/target/peers"
mkdir -p "$out"

missing=()
for tool in wrk nginx redis-server; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing ${missing[*]} (Debian packages wrk, nginx-light, redis-server)"
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq wrk nginx-light redis-server >/dev/null
fi

echo "Building the server and minimal-gateway"
# The jars go first: a module whose own classes did not change keeps its old jar (maven-jar-plugin finds it up to
# date), and Spring Boot repackages that one, with the library it was first built with.
rm -f "$root"/gateway/server/target/idempotency-gateway-server-*.jar "$root"/minimal-gateway/target/minimal-gateway-*.jar
./mvnw -q -B -DskipTests -pl gateway/server,minimal-gateway -am package
server_jar=$(ls "$root"/gateway/server/target/idempotency-gateway-server-*-exec.jar)
minimal_jar=$(ls "$root"/minimal-gateway/target/minimal-gateway-*.jar | grep -v original | head -n 1)

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no > "$out/redis.log" 2>&1 &
redis_pid=$!
pids+=($redis_pid)

mkdir -p "$out/nginx"
cat > "$out/nginx/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $out/nginx/nginx.pid;
error_log $out/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $out/nginx/body;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$BACKEND_PORT;
    location /processes/ {
      default_type application/json;
      return 200 '{"processId":"p-1","status":"COMPLETED"}';
    }
    location / {
      default_type application/json;
      add_header Location /processes/p-1;
      add_header Retry-After 1;
      return 202 '{"processId":"p-1","status":"PENDING"}';
    }
  }
}
CONF
nginx -c "$out/nginx/nginx.conf" -p "$out/nginx" &
pids+=($!)

wait_for_port() {
  for _ in $(seq 1 240); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  echo "Nothing listens on port $1" >&2
  return 1
}
wait_for_port "$REDIS_PORT"
wait_for_port "$BACKEND_PORT"

backend="http://127.0.0.1:$BACKEND_PORT"
routes="--spring.cloud.gateway.server.webflux.routes"
# The same routes in both JVMs, as a platform team would declare them (the command line's list replaces the one in
# config/application.yml): plain, Idempotency, and Idempotency tracking processes (each 202 names p-1, whose status
# nginx says is COMPLETED: polled once, ended). minimal-gateway adds the peers: SCG's own RequestRateLimiter (one
# Redis Lua call per request, a limit it never reaches) and the naive filter.
common_routes=(
  "$routes[0].id=plain" "$routes[0].uri=$backend" "$routes[0].predicates[0]=Path=/plain/**"
  "$routes[1].id=onboarding" "$routes[1].uri=$backend" "$routes[1].predicates[0]=Path=/merchants/**"
  "$routes[1].filters[0].name=Idempotency" "$routes[1].filters[0].args.unordered-arrays=integrations,paymentMethods,sites"
  "$routes[2].id=tracked" "$routes[2].uri=$backend" "$routes[2].predicates[0]=Path=/tracked/**"
  "$routes[2].filters[0].name=Idempotency" "$routes[2].filters[0].args.unordered-arrays=integrations,paymentMethods,sites"
  "$routes[2].filters[0].args.process-status-uri=/processes/{processId}"
)
peer_routes=(
  "$routes[3].id=limited" "$routes[3].uri=$backend" "$routes[3].predicates[0]=Path=/limited/**"
  "$routes[3].filters[0].name=RequestRateLimiter"
  "$routes[3].filters[0].args.redis-rate-limiter.replenishRate=1000000"
  "$routes[3].filters[0].args.redis-rate-limiter.burstCapacity=1000000"
  "$routes[4].id=naive" "$routes[4].uri=$backend" "$routes[4].predicates[0]=Path=/naive/**"
  "$routes[4].filters[0].name=NaiveIdempotency"
)

rows="$out/rows.tsv"
: > "$rows"
: > "$out/redis-commands.tsv"
latencies="$out/latencies.tsv"
: > "$latencies"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Busy ticks of the whole machine (every core, every process: wrk, nginx, Redis, the gateway, the rest).
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# Ticks the hypervisor gave to other guests while this VM wanted to run (steal): a shared VM's share of noise.
steal_and_all_ticks() { awk '/^cpu / {print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
read -r steal_start all_start <<< "$(steal_and_all_ticks)"
per_request_us() { echo $(( ($2 - $1) * 1000000 / $(getconf CLK_TCK) / ($3 > 0 ? $3 : 1) )); }
# Each tracked 202 leaves a process to poll a second later: until they are polled (and ended), the JVM works for the
# target that made them while the next one is measured. Waiting here puts that work in the tracked target's own CPU,
# where it belongs, and keeps it out of the next target's numbers (before this, the plain route measured right after
# a tracked round ran beside thousands of status polls).
processes_polled() {
  local waited=0
  while [ "$(redis-cli -p "$REDIS_PORT" ZCARD idempotency-process-slots)" != 0 ]; do
    if [ "$waited" -ge "$PROCESS_DRAIN_LIMIT" ]; then
      echo "  processes still pending after ${waited} s: the next target runs beside their polls" >&2
      return 0
    fi
    sleep 1
    waited=$((waited + 1))
  done
  if [ "$waited" -gt 0 ]; then echo "  (processes polled and ended within ${waited} s after the run)" >&2; fi
}
wrk_run() { # seconds url mode run [wrk options...]
  local seconds=$1 url=$2 mode=$3 run=$4
  shift 4
  wrk -t"$THREADS" -c"${WRK_CONNECTIONS:-$CONNECTIONS}" -d"${seconds}s" "$@" -s load-tests/wrk/idempotency-keys.lua \
    "$url" -- "$mode" "$run" "$REPLAY_KEYS" "$BODY_BYTES"
  processes_polled
}
# latency JVM TARGET URL MODE RUN ROUND -> a row: jvm, target, p50 at LATENCY_CONNECTIONS connections, round
latency() {
  local result="$out/$1-$2-latency-$6.txt"
  WRK_CONNECTIONS="$LATENCY_CONNECTIONS" THREADS=1 wrk_run "$DURATION" "$3" "$4" "$5-latency" --latency > "$result"
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(awk '$1 == "50%" {print $2}' "$result")" "$6" | tee -a "$latencies"
}
# measure JVM TARGET URL MODE RUN ROUND -> a row: jvm, target, round, req/s, p50, p99, non-2xx, then CPU in
# microseconds per request of the gateway, of Redis and of the whole machine
measure() {
  local jvm=$1 target=$2 url=$3 mode=$4 run=$5 round=$6
  local result="$out/$jvm-$target-$round.txt"
  local cpu_before cpu_after redis_before redis_after machine_before machine_after
  # Redis's own account of each command in the first round (calls, time inside Redis), from zero.
  if [ "$round" = 1 ]; then redis-cli -p "$REDIS_PORT" CONFIG RESETSTAT > /dev/null; fi
  cpu_before=$(cpu_ticks "$gateway_pid"); redis_before=$(cpu_ticks "$redis_pid"); machine_before=$(machine_ticks)
  wrk_run "$DURATION" "$url" "$mode" "$run" --latency > "$result"
  cpu_after=$(cpu_ticks "$gateway_pid"); redis_after=$(cpu_ticks "$redis_pid"); machine_after=$(machine_ticks)
  local rps p50 p99 bad requests cpu_us
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$result")
  requests=$(awk '/requests in/ {print $1}' "$result")
  if [ "$round" = 1 ]; then
    redis-cli -p "$REDIS_PORT" INFO commandstats | tr -d '\r' | awk -F'[:,=]' -v jvm="$jvm" -v target="$target" \
      -v requests="${requests:-0}" '/^cmdstat_/ && requests > 0 {
        sub("cmdstat_", "", $1)
        if ($3 / requests >= 0.01) printf "%s\t%s\t%s\t%.2f\t%.1f\n", jvm, target, toupper($1), $3 / requests, $7
      }' >> "$out/redis-commands.tsv"
  fi
  # The gateway JVM's CPU time (user + system, all threads) per request, in microseconds.
  cpu_us=$(per_request_us "$cpu_before" "$cpu_after" "${requests:-0}")
  p50=$(awk '$1 == "50%" {print $2}' "$result")
  p99=$(awk '$1 == "99%" {print $2}' "$result")
  bad=$(awk '/Non-2xx/ {print $5}' "$result")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$jvm" "$target" "$round" "$rps" "$p50" "$p99" "${bad:-0}" "$cpu_us" \
    "$(per_request_us "$redis_before" "$redis_after" "${requests:-0}")" \
    "$(per_request_us "$machine_before" "$machine_after" "${requests:-0}")" \
    | tee -a "$rows"
}

# preload_records GATEWAY: one real first write, then RECORDS copies of its record under other scopes (DUMP and
# RESTORE inside Redis, 24 h to live), so that the store holds RECORDS completed records like the filter's own.
preload_records() {
  local gateway=$1 key
  curl -s -o /dev/null -X POST "$gateway/merchants" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: preload-$(date +%s%N)" -d '{"legalName":"Preload S.A.","integrations":[]}'
  key=$(redis-cli -p "$REDIS_PORT" --scan --pattern 'idempotency:{*' | head -n 1)
  echo "  $RECORDS records copied from $key"
  # Batches keep each EVAL short enough not to stall Redis for long.
  local copied=0 batch
  while [ "$copied" -lt "$RECORDS" ]; do
    batch=$(( RECORDS - copied < 100000 ? RECORDS - copied : 100000 ))
    redis-cli -p "$REDIS_PORT" EVAL "
      local dump = redis.call('DUMP', KEYS[1])
      for i = tonumber(ARGV[1]), tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1 do
        redis.call('RESTORE', 'idempotency:{preload-' .. i .. '}', 86400000, dump, 'REPLACE')
      end
      return 1" 1 "$key" "$copied" "$batch" > /dev/null
    copied=$(( copied + batch ))
  done
  redis-cli -p "$REDIS_PORT" INFO memory | grep '^used_memory_human' | sed 's/^/  Redis /'
}

# run_jvm NAME JAR DIR [extra args...]: starts one gateway JVM, warms every target up (the JIT compiles what all of
# them use), measures them in ROUNDS rounds, stops it.
run_jvm() {
  local name=$1 jar=$2 dir=$3
  shift 3
  # shellcheck disable=SC2086
  (cd "$dir" && exec java $JAVA_OPTS -jar "$jar" --server.port="$GATEWAY_PORT" \
    --spring.data.redis.port="$REDIS_PORT" --management.server.port="$MANAGEMENT_PORT" \
    --logging.level.root=WARN "$@" > "$out/$name.log" 2>&1) &
  gateway_pid=$!
  pids+=($gateway_pid)
  wait_for_port "$GATEWAY_PORT"
  local gateway="http://127.0.0.1:$GATEWAY_PORT"
  local run
  run="$name-$(date +%s)"
  local targets=("plain $gateway/plain/merchants fresh")
  if [ "$name" = minimal ]; then
    targets+=("rate-limiter $gateway/limited/merchants fresh" "naive-first-writes $gateway/naive/merchants fresh"
      "naive-replays $gateway/naive/merchants replay")
  fi
  targets+=("first-writes $gateway/merchants fresh" "replays $gateway/merchants replay"
    "tracked-first-writes $gateway/tracked/merchants fresh")
  if [ -n "${TARGETS:-}" ]; then
    local wanted=()
    for target in "${targets[@]}"; do
      if [[ " $TARGETS " == *" ${target%% *} "* ]]; then wanted+=("$target"); fi
    done
    targets=("${wanted[@]}")
  fi
  if [ "$RECORDS" -gt 0 ]; then preload_records "$gateway"; fi
  local target
  # The JIT compiles for minutes on two busy cores, and its threads' CPU counts in the gateway's: rounds measured
  # after a single short warm-up grew 2-6x from one to the next. Every target is warmed several times over.
  for pass in $(seq 1 "$WARMUP_PASSES"); do
    for target in "${targets[@]}"; do
      read -r t url mode <<< "$target"
      echo "  warm-up pass $pass: $t (${WARMUP} s)"
      wrk_run "$WARMUP" "$url" "$mode" "$run" > /dev/null
    done
  done
  for round in $(seq 1 "$ROUNDS"); do
    for target in "${targets[@]}"; do
      read -r t url mode <<< "$target"
      measure "$name" "$t" "$url" "$mode" "$run" "$round"
    done
  done
  if [ "$LATENCY_CONNECTIONS" -gt 0 ]; then
    for latency_round in $(seq 1 "$LATENCY_ROUNDS"); do
      for target in "${targets[@]}"; do
        read -r t url mode <<< "$target"
        latency "$name" "$t" "$url" "$mode" "$run" "$latency_round"
      done
    done
  fi
  if [ -n "${PROFILE:-}" ]; then
    # A recording perturbs what it records: it gets a pass of its own, not counted in the table.
    for target in "${targets[@]}"; do
      read -r t url mode <<< "$target"
      jcmd "$gateway_pid" JFR.start name="$t" settings=profile duration="${DURATION}s" \
        filename="$out/$name-$t.jfr" > /dev/null
      wrk_run "$DURATION" "$url" "$mode" "$run" > /dev/null
      sleep 1
    done
  fi
  kill "$gateway_pid" 2>/dev/null || true
  wait "$gateway_pid" 2>/dev/null || true
  sleep 1
}

for jvm in ${JVMS:-server minimal}; do
  if [ "$jvm" = server ]; then
    echo "Our server (the runnable gateway with its own config/application.yml), near cache $NEAR_CACHE ${SERVER_ARGS:-}"
    # shellcheck disable=SC2086
    run_jvm server "$server_jar" "$root" "${common_routes[@]}" \
      --idempotency.store.near-cache.enabled="$NEAR_CACHE" ${SERVER_ARGS:-}
  else
    echo "minimal-gateway (a bare Spring Cloud Gateway app with our filter library), near cache $NEAR_CACHE ${MINIMAL_ARGS:-}"
    # shellcheck disable=SC2086
    run_jvm minimal "$minimal_jar" "$out" "${common_routes[@]}" "${peer_routes[@]}" \
      --idempotency.store.near-cache.enabled="$NEAR_CACHE" ${MINIMAL_ARGS:-}
  fi
done

read -r steal_end all_end <<< "$(steal_and_all_ticks)"
stolen=$(( (steal_end - steal_start) * 100 / ((all_end - all_start) > 0 ? (all_end - all_start) : 1) ))
machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), $(java -version 2>&1 | head -n 1), $([ "$RECORDS" -gt 0 ] && echo "$RECORDS records preloaded, ")Redis $(redis-server --version | awk '{print $3}' | sed 's/v=//'), wrk $THREADS threads $CONNECTIONS connections, the median of $ROUNDS rounds of ${DURATION} s per target after $WARMUP_PASSES warm-up passes of ${WARMUP} s over every target, ${stolen}% of the CPU time stolen by the hypervisor during the run"
# Per JVM and target, the round with the median throughput.
sort -t$'\t' -k1,1 -k2,2 -k4,4n "$rows" | awk -v rounds="$ROUNDS" -F'\t' '
  { n[$1 FS $2]++; if (n[$1 FS $2] == int((rounds + 1) / 2)) print }' > "$out/medians.tsv"
# wrk writes latencies with their unit (850.00us, 1.20ms, 2.00s): in microseconds.
awk -v machine="$machine" -v date="$(date -u +%Y-%m-%dT%H:%MZ)" -F'\t' '
  function us(text) {
    if (text ~ /us$/) return text + 0
    if (text ~ /ms$/) return text * 1000
    if (text ~ /s$/) return text * 1000000
    return -1
  }
  # The p50 of every latency round of a target; the median is reported (the middle one, or the mean of the middle two).
  FILENAME ~ /latencies/ { k = $1 FS $2; runs[k] = runs[k] (runs[k] == "" ? "" : " ") us($3); next }
  FILENAME ~ /rows/ { order[++count] = $1 FS $2; next }
  { row[$1 FS $2] = $0; if ($2 == "plain") { plain[$1] = $4; plaincpu[$1] = $8 } }
  function median(list,    v, n, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    for (k in runs) p50[k] = median(runs[k])
    print "Peer benchmark of " date " on " machine "."
    print ""
    print "| JVM | target | req/s | vs its plain route | p50 | p99 | non-2xx | CPU per request: gateway | over its plain route | Redis | whole machine | p50 at " (lc > 0 ? lc " connections (median of " lr ")" : "fewer connections (not run)") " | added over plain |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= count; i++) {
      if (seen[order[i]]++) continue
      split(row[order[i]], f, FS)
      ratio = plain[f[1]] ? sprintf("%.2f", f[4] / plain[f[1]]) : "-"
      key = f[1] FS f[2]; base = f[1] FS "plain"
      low = (key in p50) ? sprintf("%.0f us", p50[key]) : "-"
      added = (key in p50 && base in p50) ? sprintf("%+.0f us", p50[key] - p50[base]) : "-"
      printf "| %s | %s | %.0f | %s | %s | %s | %s | %d us | %+d us | %d us | %d us | %s | %s |\n", f[1], f[2], f[4], ratio, f[5], f[6], f[7], f[8], f[8] - plaincpu[f[1]], f[9], f[10], low, added
    }
    print ""
    if (plain["server"] && plain["minimal"])
      printf "Plain routes: server / minimal-gateway = %.2f\n", plain["server"] / plain["minimal"]
  }' lc="$LATENCY_CONNECTIONS" lr="$LATENCY_ROUNDS" "$latencies" "$rows" "$out/medians.tsv" > "$out/peers.md"
# What Redis did for each target: commands per request and microseconds inside Redis per call (a script's time
# includes the commands it calls, which Redis also counts under their own names).
awk -F'\t' '
  { key = $1 " | " $2; if (!(key in line)) order[++count] = key
    line[key] = line[key] (line[key] == "" ? "" : ", ") sprintf("%s %s x %s us", $3, $4, $5) }
  END {
    if (count == 0) exit
    print ""
    print "Redis per request (first round; `INFO commandstats`: calls per request x microseconds inside Redis per call):"
    print ""
    print "| JVM | target | commands |"
    print "|---|---|---|"
    for (i = 1; i <= count; i++) print "| " order[i] " | " line[order[i]] " |"
  }' "$out/redis-commands.tsv" >> "$out/peers.md"
echo
cat "$out/peers.md"
echo "Written: $out/peers.md"
