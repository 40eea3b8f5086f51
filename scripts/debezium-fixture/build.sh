#!/usr/bin/env bash
# Builds the fixture jar and copies its runtime dependencies to target/lib when
# either is missing or older than pom.xml/src, then prints the Java class path
# (one line) on stdout; Maven's output goes to stderr.
#
# Fast and offline when it can be: with the jar up to date nothing runs; with
# the artifacts already in the local repository (~/.m2, or $MAVEN_REPO_LOCAL)
# Maven runs with -o, and only when that fails does it resolve online
# (Maven Central, default repository configuration).
#
# Usage: scripts/debezium-fixture/build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jar=$here/target/debezium-fixture-1.jar
cp="$jar:$here/target/lib/*"
if [ -f "$jar" ] && [ -d "$here/target/lib" ] && [ -z "$(find "$here/pom.xml" "$here/src" -newer "$jar" -print -quit)" ]; then
  echo "$cp"
  exit 0
fi
rm -rf "$here/target/lib" # no stale jars (say an older slf4j-api) on the class path
args=(-q -B)
[ -n "${MAVEN_REPO_LOCAL:-}" ] && args+=("-Dmaven.repo.local=$MAVEN_REPO_LOCAL")
goals=(package dependency:copy-dependencies -DoutputDirectory=target/lib -DincludeScope=runtime)
cd "$here"
if ! mvn "${args[@]}" -o "${goals[@]}" >&2 2>/dev/null; then
  echo "debezium-fixture: resolving from the Maven repository (not all artifacts are local yet)" >&2
  mvn "${args[@]}" "${goals[@]}" >&2
fi
echo "$cp"
