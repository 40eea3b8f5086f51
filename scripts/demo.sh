#!/usr/bin/env bash
# The sluice demo: start throwaway servers, run a pipeline, write sample rows
# into MariaDB, show them arriving in PostgreSQL, stop everything cleanly.
#   scripts/demo.sh            MariaDB -> RocketMQ -> PostgreSQL
#   scripts/demo.sh embedded   MariaDB -> in-process queues -> PostgreSQL (no broker)
# Set SLUICE_DEMO_KEEP=1 to leave the servers running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-rocketmq}
case "$mode" in
  rocketmq) servers=(mariadb postgres rocketmq); config=examples/mysql-rocketmq-postgres.yaml ;;
  embedded) servers=(mariadb postgres); config=examples/mysql-embedded-postgres.yaml ;;
  *) echo "usage: $0 [rocketmq|embedded]" >&2; exit 2 ;;
esac

work=$(mktemp -d /tmp/sluice-demo.XXXXXX)
sluice_pid=
cleanup() {
  if [ -n "$sluice_pid" ] && kill -0 "$sluice_pid" 2>/dev/null; then kill -TERM "$sluice_pid"; wait "$sluice_pid" || true; fi
  if [ "${SLUICE_DEMO_KEEP:-0}" != 1 ]; then scripts/servers.sh stop all >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Starting ${servers[*]} on 127.0.0.1 (first run installs packages and downloads RocketMQ)"
for s in "${servers[@]}"; do scripts/servers.sh start "$s"; done
set -a; . "$(scripts/servers.sh env)"; set +a

step "Building sluice"
go build -o "$work/sluice" ./cmd/sluice

mysql_root() { mariadb --protocol=tcp -h "$SLUICE_MYSQL_HOST" -P "$SLUICE_MYSQL_PORT" -u "$SLUICE_MYSQL_USER" -p"$SLUICE_MYSQL_PASSWORD" "$@"; }
pg() { psql "$SLUICE_PG_DSN" -v ON_ERROR_STOP=1 "$@"; }

step "Creating the demo database shop in MariaDB"
mysql_root -e "DROP DATABASE IF EXISTS shop; CREATE DATABASE shop;
  CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, customer VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL, status VARCHAR(16) NOT NULL);
  CREATE TABLE shop.items (order_id BIGINT NOT NULL, sku VARCHAR(32) NOT NULL, qty INT NOT NULL, PRIMARY KEY (order_id, sku));"
pg -q -c 'DROP SCHEMA IF EXISTS shop CASCADE' >/dev/null
# A fresh start: the rows an earlier demo left in the sink's control tables
# (progress, the tables it wrote) go with the target schema, or the sink
# would report its tables dropped behind it.
pipeline="$(awk '$1 == "name:" { print $2; exit }' "$config")"
pg -q -c "DO \$\$ DECLARE t text; BEGIN
  FOR t IN SELECT table_name FROM information_schema.columns
    WHERE table_schema = 'public' AND table_name LIKE 'sluice\\_progress%' AND column_name = 'pipeline' LOOP
    EXECUTE format('DELETE FROM %I WHERE pipeline = %L', t, '$pipeline');
  END LOOP; END \$\$" >/dev/null

step "Running: sluice run --config $config (log: $work/sluice.log)"
export SLUICE_POSITIONS_DIR="$work/positions"
"$work/sluice" run --config "$config" >"$work/sluice.log" 2>&1 &
sluice_pid=$!

# Wait until sluice streams: a first row must arrive in PostgreSQL.
mysql_root -e "INSERT INTO shop.orders VALUES (1, 'ada', 19.99, 'new')"
for i in $(seq 1 120); do
  if pg -tAc "SELECT count(*) FROM shop.orders" 2>/dev/null | grep -qx 1; then break; fi
  if ! kill -0 "$sluice_pid" 2>/dev/null; then echo "sluice exited:"; cat "$work/sluice.log"; exit 1; fi
  # The first row may predate the start of reading: touch it until it shows up.
  mysql_root -e "UPDATE shop.orders SET status = IF(status = 'new', 'created', 'new') WHERE id = 1"
  sleep 0.5
done

step "Writing sample rows into MariaDB"
mysql_root -v -e "
  INSERT INTO shop.orders VALUES (2, 'grace', 5.00, 'new'), (3, 'linus', 120.50, 'new');
  INSERT INTO shop.items VALUES (1, 'book', 1), (2, 'pen', 10), (3, 'laptop', 1);
  UPDATE shop.orders SET status = 'paid', amount = amount + 1.01 WHERE id IN (1, 3);
  UPDATE shop.items SET qty = qty * 2 WHERE sku = 'pen';
  DELETE FROM shop.orders WHERE id = 2; DELETE FROM shop.items WHERE order_id = 2;"

step "Waiting for PostgreSQL to match"
# Both tables: their changes travel on separate topics and may arrive apart.
q_orders="SELECT id, customer, amount, status FROM shop.orders ORDER BY id"
q_items="SELECT order_id, sku, qty FROM shop.items ORDER BY order_id, sku"
want="$(mysql_root -N -e "$q_orders; $q_items" | tr '\t' '|')"
for i in $(seq 1 120); do
  got="$( { pg -tAc "$q_orders" && pg -tAc "$q_items"; } 2>/dev/null || true)"
  [ "$got" = "$want" ] && break
  sleep 0.5
done
pg -c "SELECT * FROM shop.orders ORDER BY id" -c "SELECT * FROM shop.items ORDER BY order_id, sku"
if [ "$got" != "$want" ]; then echo "PostgreSQL does not match MariaDB; sluice log:"; tail -50 "$work/sluice.log"; exit 1; fi

step "Stopping sluice gracefully (SIGTERM): it drains and saves its position"
kill -TERM "$sluice_pid"; wait "$sluice_pid"; sluice_pid=
"$work/sluice" positions show --config "$config"
echo "Done. sluice's log: $work/sluice.log"
