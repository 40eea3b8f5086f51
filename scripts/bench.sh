#!/usr/bin/env bash
# The end-to-end benchmark on fresh throwaway servers of its own (own data
# folders and ports, so a fresh binlog holds only the benchmark's load):
# builds sluice, runs `sluice bench` with the arguments given, and runs
# Debezium 3.4 beside it on the same binlog when Java and Maven are present.
#   scripts/bench.sh                          200k inserts + 100k updates, embedded transport
#   scripts/bench.sh --transport rocketmq     through a RocketMQ broker (default format compact; --format json|packed)
#   scripts/bench.sh --transport kafka        through a Kafka broker (KRaft, one node)
#   scripts/bench.sh --rows 1000000 --json /tmp/bench.json
# SLUICE_BENCH_DEBEZIUM=0 skips Debezium; SLUICE_BENCH_KEEP=1 keeps the servers.
set -euo pipefail
cd "$(dirname "$0")/.."
export SLUICE_SERVERS_ROOT=${SLUICE_BENCH_ROOT:-/tmp/sluice-bench-servers}
# Ports below the kernel's ephemeral range (32768+), where an outgoing
# connection of any process could hold them when a server binds.
export SLUICE_MARIADB_PORT=${SLUICE_BENCH_MARIADB_PORT:-24306}
export SLUICE_POSTGRES_PORT=${SLUICE_BENCH_POSTGRES_PORT:-24432}
export SLUICE_ROCKETMQ_NAMESRV_PORT=${SLUICE_BENCH_NAMESRV_PORT:-24876}
export SLUICE_ROCKETMQ_BROKER_PORT=${SLUICE_BENCH_BROKER_PORT:-24911}
export SLUICE_ROCKETMQ_BROKER_B_PORT=$((SLUICE_ROCKETMQ_BROKER_PORT + 100))   # its own, never an inherited one
export SLUICE_ROCKETMQ_STORE=${SLUICE_BENCH_STORE:-/dev/shm/sluice-bench-store}
export SLUICE_KAFKA_PORT=${SLUICE_BENCH_KAFKA_PORT:-24092} # and its controller on the next port

servers=(mariadb postgres)
case " $* " in *" --transport rocketmq "*|*" --transport=rocketmq "*) servers+=(rocketmq) ;; esac
case " $* " in *" --transport kafka "*|*" --transport=kafka "*) servers+=(kafka) ;; esac

cleanup() {
  if [ "${SLUICE_BENCH_KEEP:-0}" != 1 ]; then scripts/servers.sh clean >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

scripts/servers.sh clean >/dev/null 2>&1 || true # a fresh binlog: Debezium reads it from its start
for s in "${servers[@]}"; do scripts/servers.sh start "$s"; done
set -a; . "$(scripts/servers.sh env)"; set +a

work=$(mktemp -d /tmp/sluice-bench.XXXXXX)
go build -o "$work/sluice" ./cmd/sluice

extra=()
if [ "${SLUICE_BENCH_DEBEZIUM:-1}" = 1 ] && command -v java >/dev/null && command -v mvn >/dev/null && [ -x scripts/debezium-fixture/bench.sh ]; then
  extra+=(--debezium scripts/debezium-fixture)
fi
# CPU per process: the servers' pid files (their children are counted too).
procs="mariadb=$SLUICE_SERVERS_ROOT/mariadb/mariadb.pid,postgres=$SLUICE_SERVERS_ROOT/postgres/data/postmaster.pid"
case " ${servers[*]} " in *" rocketmq "*)
  procs+=",broker-a=$SLUICE_SERVERS_ROOT/rocketmq/broker.pid"
  if [ -f "$SLUICE_SERVERS_ROOT/rocketmq/broker-b.pid" ]; then procs+=",broker-b=$SLUICE_SERVERS_ROOT/rocketmq/broker-b.pid"; fi ;;
esac
case " ${servers[*]} " in *" kafka "*) procs+=",kafka=$SLUICE_SERVERS_ROOT/kafka/kafka.pid" ;; esac
SLUICE_LOG_LEVEL=${SLUICE_LOG_LEVEL:-warn} "$work/sluice" bench --procs "$procs" "${extra[@]}" "$@"
