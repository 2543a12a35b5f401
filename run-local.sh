#!/usr/bin/env bash
# Builds and starts, on a machine with only a JDK 17:
#   - the sample Onboarding backend (no idempotency of its own) on BACKEND_PORT (default 8081)
#   - the idempotency gateway in front of it on GATEWAY_PORT (default 8080), with config/ and the "local"
#     profile: an embedded Redis, unless SPRING_DATA_REDIS_URL points at a real one; its health, Prometheus and
#     operator API on MANAGEMENT_PORT (default 9090, localhost only).
# Extra arguments go to the gateway: ./run-local.sh --idempotency.in-flight-wait=5s
# Says "ready" only once the gateway's health is UP and the backend answers. Ctrl-C stops both.
# SKIP_BUILD=1 starts the jars already built (the build's own test of this script uses it).
set -euo pipefail
cd "$(dirname "$0")"

GATEWAY_PORT="${GATEWAY_PORT:-8080}"
BACKEND_PORT="${BACKEND_PORT:-8081}"
MANAGEMENT_PORT="${MANAGEMENT_PORT:-9090}"
READY_TIMEOUT="${READY_TIMEOUT:-180}"
export MANAGEMENT_PORT

fail() { echo "run-local.sh: $*" >&2; exit 1; }

# Something already listening would answer in our place, so "ready" would be a lie: refuse to start.
taken=()
for entry in "GATEWAY_PORT:$GATEWAY_PORT" "BACKEND_PORT:$BACKEND_PORT" "MANAGEMENT_PORT:$MANAGEMENT_PORT"; do
  port=${entry#*:}
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    who=""
    if command -v ss >/dev/null 2>&1; then
      who=$(ss -ltnpH "sport = :$port" 2>/dev/null | grep -o 'users:(("[^"]*"' | head -n 1 | sed 's/users:(("//; s/"$//')
    fi
    taken+=("port $port (${entry%%:*}) is taken${who:+ by $who}")
  fi
done
if [ ${#taken[@]} -gt 0 ]; then
  printf 'run-local.sh: %s\n' "${taken[@]}" >&2
  fail "stop what holds it, or choose other ports: GATEWAY_PORT=18080 BACKEND_PORT=18081 MANAGEMENT_PORT=19090 ./run-local.sh"
fi

if [ -z "${SKIP_BUILD:-}" ]; then
  echo "Building (the first build downloads Maven and the dependencies: a few minutes)"
  build_log=target/run-local-build.log
  mkdir -p target
  # One line per module as Maven reaches it; the whole output in target/run-local-build.log.
  if ! ./mvnw -B -DskipTests -pl sample-onboarding-backend,gateway/server -am package 2>&1 | tee "$build_log" \
      | grep --line-buffered -E '^\[INFO\] Building [A-Z]|BUILD (SUCCESS|FAILURE)' \
      | sed -u -E 's/^\[INFO\] Building (.*) [0-9][^ ]* +\[([0-9]+\/[0-9]+)\]$/  \2 \1/; s/^\[INFO\] /  /'; then
    tail -n 30 "$build_log" >&2
    fail "the build failed (the whole output: $build_log)"
  fi
  grep -q 'BUILD SUCCESS' "$build_log" || { tail -n 30 "$build_log" >&2; fail "the build failed (the whole output: $build_log)"; }
fi
mkdir -p target

backend_jar=$(ls sample-onboarding-backend/target/sample-onboarding-backend-*-exec.jar)
gateway_jar=$(ls gateway/server/target/idempotency-gateway-server-*-exec.jar)

pids=()
stopping=""
cleanup() {
  if [ -n "$stopping" ]; then return; fi
  stopping=1
  if [ ${#pids[@]} -gt 0 ]; then
    echo
    echo "Stopping the gateway and the backend"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

java -jar "$backend_jar" --server.port="$BACKEND_PORT" > target/onboarding-backend.log 2>&1 &
backend_pid=$!
pids+=("$backend_pid")
java -jar "$gateway_jar" --spring.profiles.active=local --server.port="$GATEWAY_PORT" \
  --management.server.port="$MANAGEMENT_PORT" --onboarding.uri="http://localhost:$BACKEND_PORT" "$@" &
gateway_pid=$!
pids+=("$gateway_pid")

# http_get PORT PATH: the status line and body of one HTTP/1.0 request, over bash's /dev/tcp (no curl needed).
http_get() {
  local response
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$2" >&3
  response=$(timeout 5 cat <&3 || true)
  exec 3>&-
  printf '%s' "$response"
}

deadline=$(( $(date +%s) + READY_TIMEOUT ))
gateway_up="" backend_up=""
while [ -z "$gateway_up" ] || [ -z "$backend_up" ]; do
  kill -0 "$gateway_pid" 2>/dev/null || fail "the gateway stopped before it was ready (its output is above)"
  kill -0 "$backend_pid" 2>/dev/null || { tail -n 20 target/onboarding-backend.log >&2; fail "the backend stopped before it was ready (target/onboarding-backend.log)"; }
  if [ -z "$gateway_up" ] && http_get "$MANAGEMENT_PORT" /actuator/health 2>/dev/null | grep -q '"status":"UP"'; then
    gateway_up=1
  fi
  if [ -z "$backend_up" ] && http_get "$BACKEND_PORT" /processes/run-local-probe 2>/dev/null | grep -q '^HTTP/'; then
    backend_up=1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    fail "not ready after ${READY_TIMEOUT} s (gateway health UP: ${gateway_up:-no}, backend answering: ${backend_up:-no})"
  fi
  sleep 0.5
done

cat <<MSG

  Idempotency gateway ready: http://localhost:$GATEWAY_PORT   (health UP on :$MANAGEMENT_PORT; backend log: target/onboarding-backend.log)
  Try:  curl -i -X POST http://localhost:$GATEWAY_PORT/merchants \\
          -H 'Content-Type: application/json' -H 'Idempotency-Key: 8f1c2d3e4a5b6c7d8e9f0a1b' \\
          -d '{"legalName":"ACME","taxId":"ACME12345","email":"a@acme.example","paymentMethods":["CARD","PIX"]}'
        (the README's curl session goes on from there)
  Operator API: curl -u operator:local-operator http://localhost:$MANAGEMENT_PORT/actuator/idempotency
  Ctrl-C stops the gateway and the backend.

MSG
wait -n "${pids[@]}" || true
kill -0 "$gateway_pid" 2>/dev/null || echo "run-local.sh: the gateway stopped" >&2
kill -0 "$backend_pid" 2>/dev/null || echo "run-local.sh: the backend stopped (target/onboarding-backend.log)" >&2
exit 1
