#!/usr/bin/env bash
# Measures Debezium's throughput for a side-by-side comparison with sluice:
# runs sluice.fixture.Bench (Debezium 3.4.0.Final's embedded MariaDB
# connector, snapshot.mode=never, JSON converter with schemas) over a table's
# binlog events and prints one JSON line with counts, timings and peak RSS on
# stdout; Debezium's logging goes to stderr. Builds the jar first when it is
# missing or older than the sources.
#
# Needs: Java 17+, Maven (default repository configuration).
#
# Usage: scripts/debezium-fixture/bench.sh host port user password database table expectedEvents timeoutSeconds workDir
# Exit status: 0 when expectedEvents were counted, 1 when not, 2 on bad usage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "$#" -ne 9 ]; then
  echo "usage: $0 host port user password database table expectedEvents timeoutSeconds workDir" >&2
  exit 2
fi
jar=$here/target/debezium-fixture-1.jar
if [ ! -f "$jar" ] || [ ! -d "$here/target/lib" ] || [ -n "$(find "$here/pom.xml" "$here/src" -newer "$jar" -print -quit)" ]; then
  rm -rf "$here/target/lib" # no stale jars (say an older slf4j-api) on the class path
  (cd "$here" && mvn -q -B package dependency:copy-dependencies -DoutputDirectory=target/lib -DincludeScope=runtime) >&2
fi
exec java -cp "$jar:$here/target/lib/*" sluice.fixture.Bench "$@"
