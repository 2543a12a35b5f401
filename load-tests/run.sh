#!/usr/bin/env bash
# One command for the Gatling scenarios against a running gateway (./run-local.sh starts one):
#
#   load-tests/run.sh SCENARIO [URL] [MAVEN ARGS...]
#
#   SCENARIO    unique-keys | retry-storm | replay-heavy | mismatch | all
#   URL         the gateway, default http://localhost:8080
#   MAVEN ARGS  go to the Gatling run: -Dprofile=ci, -Dusers=20, -DmaxP99Millis=2000, -o (offline)...
#   PROFILE=laptop|ci|soak in the environment is -Dprofile= (default laptop: sized for 2 cores)
#
# Needs a JDK 17 or later, nothing else: the first run installs the modules load-tests needs into the local Maven
# repository (./mvnw install -pl load-tests -am, a few minutes), and again whenever their sources changed. At the end
# it prints each simulation's idempotency verdict again, Gatling's assertion results and the HTML report's path.
# Exit status: 0 when every asserted gate held.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$script")/.."

fail() { echo "run.sh: $*" >&2; exit 1; }
usage() { sed -n '2,10p' "$script" | sed -E 's/^# ?//' >&2; exit 2; }

[ $# -ge 1 ] || usage
scenario=$1
shift
case "$scenario" in
  unique-keys) simulation=UniqueKeysSimulation ;;
  retry-storm) simulation=RetryStormSimulation ;;
  replay-heavy) simulation=ReplayHeavySimulation ;;
  mismatch) simulation=MismatchSimulation ;;
  all) simulation="" ;;
  -h|--help|help) usage ;;
  *) echo "run.sh: unknown scenario '$scenario'" >&2; usage ;;
esac
url=http://localhost:8080
if [ $# -ge 1 ] && [[ "$1" != -* ]]; then
  url=${1%/}
  shift
fi
maven_args=("$@")

# A JDK, not only a JRE: Maven compiles the simulations.
java_cmd=java javac_cmd=javac
if [ -n "${JAVA_HOME:-}" ]; then java_cmd="$JAVA_HOME/bin/java" javac_cmd="$JAVA_HOME/bin/javac"; fi
command -v "$java_cmd" >/dev/null 2>&1 || fail "needs a JDK 17 or later: no java on the PATH (or in JAVA_HOME)"
command -v "$javac_cmd" >/dev/null 2>&1 || fail "needs a JDK 17 or later, not only a JRE: no javac next to $java_cmd"
java_major=$("$java_cmd" -version 2>&1 | sed -nE '1s/.*version "(1\.)?([0-9]+).*/\2/p')
[ -n "$java_major" ] && [ "$java_major" -ge 17 ] || fail "needs a JDK 17 or later; $java_cmd is: $("$java_cmd" -version 2>&1 | head -n 1)"

# Something must answer at URL, or every request fails for a reason that has nothing to do with the gateway.
hostport=${url#*://}
hostport=${hostport%%/*}
host=${hostport%:*}
port=${hostport##*:}
if [ "$port" = "$hostport" ]; then
  case "$url" in https://*) port=443 ;; *) port=80 ;; esac
fi
if [[ "$host" != \[* ]] && ! timeout 5 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
  fail "nothing answers at $url: start a gateway first, e.g. ./run-local.sh (it prints \"ready\"), or pass its URL"
fi

offline=()
for arg in ${maven_args[@]+"${maven_args[@]}"}; do
  case "$arg" in -o|--offline) offline=(-o) ;; esac
done

# Install the gateway and the sample backend (load-tests' dependencies) when not yet installed from these sources.
stamp=load-tests/target/run-sh.installed
repo="${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}"
changed=""
if [ -f "$stamp" ] && [ -d "$repo/dev/retrysafe/idempotency-gateway-server" ]; then
  changed=$(find pom.xml load-tests/pom.xml load-tests/src/main gateway sample-onboarding-backend \
      -name target -prune -o -type f -newer "$stamp" -print -quit)
fi
if [ ! -f "$stamp" ] || [ ! -d "$repo/dev/retrysafe/idempotency-gateway-server" ] || [ -n "$changed" ]; then
  echo "run.sh: installing the modules load-tests needs (the first time: a few minutes)"
  ./mvnw -B -q ${offline[@]+"${offline[@]}"} install -DskipTests -pl load-tests -am \
    || fail "the install failed (./mvnw -B install -DskipTests -pl load-tests -am shows why)"
  mkdir -p load-tests/target
  touch "$stamp"
fi

args=(-B -pl load-tests test-compile gatling:test "-Dgatling.baseUrl=$url")
[ -n "$simulation" ] && args+=("-Dgatling.simulationClass=dev.retrysafe.loadtests.gatling.$simulation")
[ -n "${PROFILE:-}" ] && args+=("-Dprofile=$PROFILE")
log="load-tests/target/run-sh-$scenario-$(date +%Y%m%d-%H%M%S).log"
mkdir -p load-tests/target
echo "run.sh: ./mvnw ${args[*]} ${maven_args[*]+${maven_args[*]}}  (output also in $log)"

status=0
./mvnw "${args[@]}" ${maven_args[@]+"${maven_args[@]}"} 2>&1 | tee "$log" || status=$?

profile=${PROFILE:-laptop}
for arg in ${maven_args[@]+"${maven_args[@]}"}; do
  case "$arg" in -Dprofile=*) profile=${arg#-Dprofile=} ;; -Dsmoke=true) profile=smoke ;; esac
done
echo
echo "== run.sh $scenario $url, profile $profile, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
awk '/^---- Idempotency verdict: /,/^====/' "$log"
grep -E ': (true|false) \(actual' "$log" | sed 's/^/assertion: /' || true
grep -oE 'file://[^ ]*index\.html' "$log" | sed 's/^/report: /' || true
if [ "$status" -eq 0 ]; then
  echo "run.sh: PASSED"
else
  echo "run.sh: FAILED (Maven exit status $status): the verdict and assertion lines above say why; the full output is in $log"
fi
exit "$status"
