#!/usr/bin/env bash
# Runs the JMH micro-benchmarks of the gateway's pure per-request code (load-tests/src/main/java/.../jmh).
#
#   load-tests/jmh.sh                       # every benchmark
#   load-tests/jmh.sh 'fingerprint.*'       # a first argument not starting with '-' replaces the pattern (a regex)
#   load-tests/jmh.sh -prof gc              # any further arguments go to JMH (see: load-tests/jmh.sh -h)
#   JMH_SKIP_BUILD=1 load-tests/jmh.sh      # reuse the last build and classpath
#
# Results: the JMH summary on stdout, load-tests/target/jmh-results.json, and a Markdown table at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

pattern='dev\.retrysafe\.loadtests\.jmh\..*'
if [[ $# -gt 0 && "$1" != -* ]]; then
  pattern="$1"
  shift
fi

classpath_file="$PWD/load-tests/target/jmh-classpath.txt"
results="load-tests/target/jmh-results.json"

if [[ "${JMH_SKIP_BUILD:-}" != 1 || ! -s "$classpath_file" ]]; then
  echo "Building the gateway and load-tests (tests are neither compiled nor run)..."
  # One reactor run: the gateway resolves to its freshly built jar, so nothing has to be installed in ~/.m2.
  # maven.test.skip rather than skipTests: the benchmarks do not need the test sources to compile. The runnable
  # -exec jars are not needed either, and rewriting them could break a gateway or backend running from them.
  ./mvnw -q -B -pl load-tests -am package dependency:build-classpath \
    -Dmaven.test.skip=true -Dspring-boot.repackage.skip=true \
    -DincludeScope=runtime -Dmdep.outputFile=target/jmh-classpath.txt
fi

# The run takes minutes and every fork loads classes anew: it gets its own copy of what the build wrote into this
# repository (the benchmark classes, the gateway jar), so that another build running meanwhile cannot pull them away.
snapshot="$PWD/load-tests/target/jmh-run"
rm -rf "$snapshot"
mkdir -p "$snapshot/lib"
cp -R load-tests/target/classes "$snapshot/classes"
classpath="$snapshot/classes"
IFS=: read -r -a entries < "$classpath_file" || true # the file has no final newline
for entry in "${entries[@]}"; do
  if [[ "$entry" == "$PWD"/* ]]; then
    copy="$snapshot/lib/$(basename "$entry")"
    cp -R "$entry" "$copy"
    entry="$copy"
  fi
  classpath="$classpath:$entry"
done
if [[ ! -s "$snapshot/classes/META-INF/BenchmarkList" ]]; then
  echo "No benchmarks in load-tests/target/classes (a concurrent build or clean?): run this script again." >&2
  exit 1
fi

# JMH forks a fresh JVM per benchmark with this process's java.class.path, hence plain java (not exec:java).
rm -f "$results"
java -cp "$classpath" org.openjdk.jmh.Main "$pattern" -rf json -rff "$results" "$@"

if [[ -s "$results" ]]; then
  echo
  java -cp "$classpath" dev.retrysafe.loadtests.jmh.JmhMarkdownTable "$results"
fi
