#!/usr/bin/env bash
# Builds and starts, on a machine with only a JDK 17:
#   - the sample Onboarding backend (no idempotency of its own) on BACKEND_PORT (default 8081)
#   - the idempotency gateway in front of it on GATEWAY_PORT (default 8080), with config/ and the "local"
#     profile: an embedded Redis, unless SPRING_DATA_REDIS_URL points at a real one.
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")"

GATEWAY_PORT="${GATEWAY_PORT:-8080}"
BACKEND_PORT="${BACKEND_PORT:-8081}"

./mvnw -q -B -DskipTests package

backend_jar=$(ls sample-onboarding-backend/target/sample-onboarding-backend-*-exec.jar)
gateway_jar=$(ls gateway/server/target/idempotency-gateway-server-*-exec.jar)
mkdir -p target

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

java -jar "$backend_jar" --server.port="$BACKEND_PORT" > target/onboarding-backend.log 2>&1 &
pids+=($!)
java -jar "$gateway_jar" --spring.profiles.active=local --server.port="$GATEWAY_PORT" \
  --onboarding.uri="http://localhost:$BACKEND_PORT" &
pids+=($!)

# Wait (bounded) until both ports accept connections; bash's /dev/tcp needs no curl.
for port in "$BACKEND_PORT" "$GATEWAY_PORT"; do
  for _ in $(seq 1 120); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.5
  done
done

cat <<MSG

  Idempotency gateway ready: http://localhost:$GATEWAY_PORT   (backend log: target/onboarding-backend.log)
  Try:  curl -i -X POST http://localhost:$GATEWAY_PORT/merchants \\
          -H 'Content-Type: application/json' -H 'Idempotency-Key: 8f1c2d3e4a5b6c7d8e9f0a1b' \\
          -d '{"legalName":"ACME","taxId":"ACME12345","email":"a@acme.example"}'
  Operator API: curl -u operator:local-operator http://localhost:${MANAGEMENT_PORT:-9090}/actuator/idempotency
  Ctrl-C stops the gateway and the backend.

MSG
wait -n "${pids[@]}"
