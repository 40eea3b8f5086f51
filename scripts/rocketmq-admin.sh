#!/usr/bin/env bash
# Runs RocketMQ's admin tool (MQAdminStartup) against the local name server started by
# scripts/servers.sh; "-n 127.0.0.1:<port>" is added unless given.
#   scripts/rocketmq-admin.sh clusterList
#   scripts/rocketmq-admin.sh updateTopic -c DefaultCluster -t my_topic -r 4 -w 4
#   scripts/rocketmq-admin.sh sendMessage -t my_topic -p hello
#   scripts/rocketmq-admin.sh consumeMessage -t my_topic -b broker-a -i 0 -o 0 -c 10
# The tool exits 0 even when the command failed: read its output.
# Each call is a JVM start and takes about 3-4 s (most of it the client's graceful shutdown).
set -euo pipefail
ROOT="${SLUICE_SERVERS_ROOT:-/tmp/sluice-servers}"
admin="$ROOT/rocketmq/bin/mqadmin"
[[ -x "$admin" ]] || { echo "rocketmq-admin: $admin missing; run scripts/servers.sh start rocketmq first" >&2; exit 1; }
exec "$admin" "$@"
