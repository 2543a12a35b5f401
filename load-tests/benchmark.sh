#!/usr/bin/env bash
# Side-by-side benchmark, in one run on this machine: the backend called directly, a plain Spring Cloud Gateway
# route, the same route with the Idempotency filter (first writes) and the same route replaying.
# It starts its own Redis, a fixed-latency stub backend and a gateway, drives the load with
# dev.retrysafe.loadtests.bench.LoadDriver, and writes load-tests/target/benchmark/benchmark.{md,json}.
#
#   load-tests/benchmark.sh                       # about 2 minutes
#   WARMUP=60 DURATION=20 load-tests/benchmark.sh # steadier numbers, about 6 minutes
#
# With redis-server on the PATH it also starts a replica of that Redis and then, after the main run, compares first
# writes through a gateway with idempotency.replica-acks=0 and one with 1 (Redis WAIT): replica-acks.md.
#
# Settings (environment): WARMUP seconds (40), DURATION seconds per measurement (8), LIGHT connections (4),
# HEAVY connections (32), BACKEND_LATENCY_MS (0), ports BENCH_GATEWAY_PORT (18090), BENCH_BACKEND_PORT (18091),
# BENCH_REDIS_PORT (16390), BENCH_REPLICA_PORT (16391), BENCH_ACKED_GATEWAY_PORT (18092).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

WARMUP="${WARMUP:-40}"
DURATION="${DURATION:-8}"
LIGHT="${LIGHT:-4}"
HEAVY="${HEAVY:-32}"
BACKEND_LATENCY_MS="${BACKEND_LATENCY_MS:-0}"
GATEWAY_PORT="${BENCH_GATEWAY_PORT:-18090}"
BACKEND_PORT="${BENCH_BACKEND_PORT:-18091}"
REDIS_PORT="${BENCH_REDIS_PORT:-16390}"
REPLICA_PORT="${BENCH_REPLICA_PORT:-16391}"
ACKED_GATEWAY_PORT="${BENCH_ACKED_GATEWAY_PORT:-18092}"
out="$root/load-tests/target/benchmark"
mkdir -p "$out"

# One reactor run: every module writes the classpath file, load-tests (built last) has the final word.
./mvnw -q -B -DskipTests -pl load-tests -am package dependency:build-classpath \
  -Dmdep.outputFile="$out/classpath.txt" -Dmdep.includeScope=runtime
cp="$root/load-tests/target/classes:$(cat "$out/classpath.txt")"
gateway_jar=$(ls "$root"/gateway/server/target/idempotency-gateway-server-*-exec.jar)

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

redis_args=()
if command -v redis-server >/dev/null 2>&1; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no > "$out/redis.log" 2>&1 &
  pids+=($!)
  redis_args=(--spring.data.redis.port="$REDIS_PORT")
  redis-server --port "$REPLICA_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --replicaof 127.0.0.1 "$REDIS_PORT" > "$out/redis-replica.log" 2>&1 &
  pids+=($!)
  replica_started=yes
else
  redis_args=(--idempotency.embedded-redis.enabled=true --idempotency.embedded-redis.port="$REDIS_PORT")
fi

java -Xmx256m -cp "$cp" dev.retrysafe.loadtests.bench.StubBackend "$BACKEND_PORT" "$BACKEND_LATENCY_MS" \
  > "$out/backend.log" 2>&1 &
pids+=($!)

# Started from target/ so that the repository's ./config/application.yml (the Onboarding routes) is not picked up;
# the setting that costs every request is passed as shipped there (Spring Security observations off).
route="--spring.cloud.gateway.server.webflux.routes"
guarded_route() { # index id path -> $guarded: the Idempotency route as config/application.yml has it for Onboarding
  guarded=("$route[$1].id=$2" "$route[$1].uri=http://127.0.0.1:$BACKEND_PORT" "$route[$1].predicates[0]=Path=$3"
    "$route[$1].filters[0].name=Idempotency" "$route[$1].filters[0].args.unordered-arrays=integrations,paymentMethods,sites")
}
start_gateway() { # port log-file extra-args...; its pid in $!
  local port=$1 log=$2
  shift 2
  (cd "$out" && exec java -Xmx512m -jar "$gateway_jar" --server.port="$port" "${redis_args[@]}" \
    --spring.main.banner-mode=off --logging.level.root=WARN --management.observations.enable.spring.security=false \
    "$@" > "$out/$log" 2>&1) &
}
guarded_route 1 onboarding '/merchants/**'
start_gateway "$GATEWAY_PORT" gateway.log \
  "$route[0].id=plain" "$route[0].uri=http://127.0.0.1:$BACKEND_PORT" "$route[0].predicates[0]=Path=/plain/**" \
  "${guarded[@]}"
gateway_pid=$!
pids+=($gateway_pid)

ports=("$BACKEND_PORT" "$GATEWAY_PORT")
for port in "${ports[@]}"; do
  for _ in $(seq 1 240); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.5
  done
done

java -Xmx512m -cp "$cp" dev.retrysafe.loadtests.bench.LoadDriver \
  --backend="http://127.0.0.1:$BACKEND_PORT/merchants" \
  --plain="http://127.0.0.1:$GATEWAY_PORT/plain/merchants" \
  --guarded="http://127.0.0.1:$GATEWAY_PORT/merchants" \
  --warmup="$WARMUP" --duration="$DURATION" --light="$LIGHT" --heavy="$HEAVY" --out="$out"

# The price of idempotency.replica-acks (Redis WAIT), with a replica of the Redis: first writes through a gateway
# with replica-acks 0, then one with 1, each a fresh JVM with its own warm-up and nothing else running (a second
# gateway JVM beside the first distorted the main table's numbers).
if [ -n "${replica_started:-}" ]; then
  kill "$gateway_pid" 2>/dev/null || true
  wait "$gateway_pid" 2>/dev/null || true
  rows="$out/replica-acks-rows.md"
  rm -f "$rows"
  for acks in 0 1; do
    guarded_route 0 acked '/merchants/**'
    start_gateway "$ACKED_GATEWAY_PORT" "gateway-acks-$acks.log" --idempotency.replica-acks="$acks" "${guarded[@]}"
    acked_pid=$!
    pids+=($acked_pid)
    for _ in $(seq 1 240); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$ACKED_GATEWAY_PORT") 2>/dev/null; then break; fi
      sleep 0.5
    done
    java -Xmx512m -cp "$cp" dev.retrysafe.loadtests.bench.LoadDriver \
      --first-writes-only="http://127.0.0.1:$ACKED_GATEWAY_PORT/merchants" --label="first writes, replica-acks $acks" \
      --name=replica-acks-rows --warmup="$WARMUP" --duration="$DURATION" --light="$LIGHT" --heavy="$HEAVY" --out="$out"
    kill "$acked_pid" 2>/dev/null || true
    wait "$acked_pid" 2>/dev/null || true
  done
  { echo "| Target | Load | Throughput (req/s) | p50 (ms) | p99 (ms) | p99.9 (ms) | Errors |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    cat "$rows"; } > "$out/replica-acks.md"
  echo; cat "$out/replica-acks.md"
  echo "Written: $out/replica-acks.md"
fi
