#!/usr/bin/env bash
# Makes integration/testdata/debezium/events.jsonl with Debezium itself:
# creates the database of source.sql (the part before "-- @streaming"), runs
# Debezium's embedded MariaDB connector (Capture.java, default connector
# options, JSON converter with schemas), runs the rest of source.sql once the
# snapshot is captured, and stops when every expected event is written.
#
# Needs: Java 17+, Maven (default repository configuration), the mariadb
# client, and the MariaDB of scripts/servers.sh (binlog ROW, GTID). Reads
# /tmp/sluice-servers/servers.env. Drops the database dbz_fixture first.
#
# Usage: scripts/debezium-fixture/run.sh [output file]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
data=$repo/integration/testdata/debezium
out=${1:-$data/events.jsonl}
env_file=${SLUICE_SERVERS_ENV:-/tmp/sluice-servers/servers.env}
# shellcheck disable=SC1090
. "$env_file"
host=${SLUICE_MYSQL_HOST:-127.0.0.1}
port=${SLUICE_MYSQL_PORT:?SLUICE_MYSQL_PORT not set: run scripts/servers.sh start all}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Events expected: 5 snapshot reads, then 14 from the binlog (a key change
# is a delete plus a create; tombstones are not written).
expected_snapshot=5
expected=19

admin() { MYSQL_PWD=$SLUICE_MYSQL_PASSWORD mariadb --default-character-set=utf8mb4 -h "$host" -P "$port" -u "$SLUICE_MYSQL_USER" "$@"; }
admin -e 'DROP DATABASE IF EXISTS dbz_fixture'
awk '/^-- @streaming/{exit} {print}' "$data/source.sql" | admin
awk 'f{print} /^-- @streaming/{f=1}' "$data/source.sql" > "$work/streaming.sql"

cp=$("$here/build.sh")

: > "$work/events.jsonl"
java -cp "$cp" sluice.fixture.Capture \
  "$host" "$port" "$SLUICE_MYSQL_CDC_USER" "$SLUICE_MYSQL_CDC_PASSWORD" dbz_fixture \
  "$work/events.jsonl" "$work/state" "$expected" 120 > "$work/capture.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do
  [ "$(wc -l < "$work/events.jsonl")" -ge "$expected_snapshot" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
sleep 2 # let the connector switch from the snapshot to the binlog
admin < "$work/streaming.sql"
if ! wait "$pid"; then
  tail -50 "$work/capture.log" >&2
  echo "capture failed; see above" >&2
  exit 1
fi
cp "$work/events.jsonl" "$out"
admin -e 'DROP DATABASE IF EXISTS dbz_fixture'
echo "wrote $(wc -l < "$out") events to $out"
