#!/usr/bin/env bash
# The wire torture harness (gateway/server/src/test/.../faults/torture/WireTortureIntegrationTest) for a long run: randomized
# wire-level faults under concurrency against the real gateway, its own Redis and a recording upstream, then the
# invariants over the Redis records and the upstream log. The CI test command runs the same harness for 1,000
# exchanges; this runs it for EXCHANGES (100,000 by default, about 30-40 minutes on 2 cores), restarting the gateway
# once mid-run.
#
#   load-tests/torture.sh                          # 100,000 exchanges, a fresh seed, one gateway restart
#   SEED=4741459153736 EXCHANGES=1000 load-tests/torture.sh   # replay a seed printed by a failed run
#   FAULTS=bad-chunk-size,upstream-reset load-tests/torture.sh  # only these fault kinds (labels in docs/load-tests.md, Wire torture)
#
# Settings (environment): EXCHANGES (100000), SEED (fresh), THREADS client threads (12), FAULTS (all),
# RESTART true|false (true), MVN_FLAGS extra Maven flags (e.g. -o). The report is printed and written to gateway/server/target/torture/torture-<seed>.txt, with
# one line per key in torture-<seed>-keys.tsv; the gateway's own log is in
# gateway/server/target/surefire-reports/dev.retrysafe.gateway.faults.torture.WireTortureIntegrationTest-output.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

EXCHANGES="${EXCHANGES:-100000}"
THREADS="${THREADS:-12}"
RESTART="${RESTART:-true}"
# The gateway logs a stack trace for each error Reactor drops (a client gone mid-answer...): thousands in a long run.
args=(-Dtorture.exchanges="$EXCHANGES" -Dtorture.threads="$THREADS" -Dtorture.restart="$RESTART"
  -Dlogging.level.reactor.core.publisher.Operators=OFF)
[[ -n "${SEED:-}" ]] && args+=(-Dtorture.seed="$SEED")
[[ -n "${FAULTS:-}" ]] && args+=(-Dtorture.faults="$FAULTS")

started=$(date +%s)
status=0
# shellcheck disable=SC2086 # MVN_FLAGS is a list of flags
./mvnw -B -q ${MVN_FLAGS:-} -pl gateway/server -am test -Dtest=WireTortureIntegrationTest -Dsurefire.failIfNoSpecifiedTests=false "${args[@]}" || status=$?
report=$(ls -t gateway/server/target/torture/torture-*.txt 2>/dev/null | head -1)
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(uname -sm), $(( $(date +%s) - started )) s wall clock"
[[ -n "$report" ]] && cat "$report"
exit "$status"
