#!/usr/bin/env bash
# Throwaway real servers for sluice's integration tests: MariaDB (binlog source),
# MySQL 9.7 (a binlog source and a target), PostgreSQL (sink) and Apache RocketMQ
# (name server + two master brokers).
#
#   scripts/servers.sh start  [mariadb|mysql|mysql-scratch|postgres|rocketmq|rocketmq-acl|rocketmq-b|kafka|all]   (default: all)
#   scripts/servers.sh stop   [mariadb|mysql|mysql-scratch|postgres|rocketmq|rocketmq-acl|rocketmq-b|kafka|all]   (default: all)
#   scripts/servers.sh status
#   scripts/servers.sh env        # prints the path of the env file
#   scripts/servers.sh mysql-client ARGS...   # the unpacked MySQL client
#   scripts/servers.sh clean      # stop all, then delete every data directory
#
# Everything listens on 127.0.0.1 only. All state lives under one root
# (SLUICE_SERVERS_ROOT, default /tmp/sluice-servers), the RocketMQ store included
# (SLUICE_ROCKETMQ_STORE, default $ROOT/rocketmq-store; point it at tmpfs for speed
# when little is written), except the RocketMQ jars, cached in SLUICE_CACHE
# (default ~/.cache/sluice).
# Connection settings are written to $ROOT/servers.env (KEY=value lines).
# TLS: the first start under a root makes a throwaway CA and a server
# certificate for 127.0.0.1/localhost (and a client certificate) in $ROOT/tls;
# MariaDB and PostgreSQL serve TLS with them (plain connections keep working)
# and servers.env names the files (SLUICE_TLS_CA, SLUICE_TLS_CLIENT_CERT/KEY).
#
# SLUICE_POSTGRES_DURABLE=1 starts PostgreSQL crash-safe, for crash tests
# (pg_ctl stop -m immediate): fsync and full_page_writes on. Otherwise it runs
# with fsync=off, which a crash can corrupt. synchronous_commit stays off as the
# server default either way: the sink must ask for durable commits itself. A
# running server is not restarted: stop it first to change the mode.
#
# rocketmq-acl (not part of "all"): a second, separate RocketMQ (own name server
# on SLUICE_ROCKETMQ_ACL_NAMESRV_PORT, default 17876, one broker on
# SLUICE_ROCKETMQ_ACL_BROKER_PORT, default 17911, small heaps) with authentication
# and authorization on; servers.env gets SLUICE_ROCKETMQ_ACL_NAMESRV and its super
# user's SLUICE_ROCKETMQ_ACL_ACCESS_KEY/SECRET_KEY (throwaway test credentials).
#
# rocketmq-b (not part of "all"): a second, independent RocketMQ cluster for the
# replicator's tests (own name server on SLUICE_ROCKETMQ_B_NAMESRV_PORT, default
# 19976, one broker "broker-b1" of cluster ClusterB on SLUICE_ROCKETMQ_B_BROKER_PORT,
# default 21911 (also -2 and +1), own store SLUICE_ROCKETMQ_B_STORE, small heaps); servers.env gets
# SLUICE_ROCKETMQ_B_NAMESRV, SLUICE_ROCKETMQ_B_CLUSTER and SLUICE_ROCKETMQ_B_BROKER_ADDR.
#
# kafka: a single-node Apache Kafka 4.x in KRaft mode (broker and controller in
# one process, jars of org.apache.kafka:kafka_2.13 resolved with maven into the
# cache) on SLUICE_KAFKA_PORT (default 19092; the controller takes port+1);
# servers.env gets SLUICE_KAFKA_BROKERS. SLUICE_KAFKA_VERSION picks another 4.x.
# The same broker has four more listeners for the transport's TLS and SASL
# tests, with the throwaway CA's server certificate (see TLS): SSL on port+2
# (SLUICE_KAFKA_SSL_BROKERS), SASL_SSL on port+3 (SLUICE_KAFKA_SASL_SSL_BROKERS),
# SASL_PLAINTEXT on port+4 (SLUICE_KAFKA_SASL_BROKERS), both SASL ones with
# PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 for one user (throwaway test
# credentials SLUICE_KAFKA_SASL_USER/SLUICE_KAFKA_SASL_PASSWORD; the SCRAM
# credentials are written when the storage is formatted), and SSL that
# requires a client certificate signed by the CA (ssl.client.auth=required) on
# port+5 (SLUICE_KAFKA_MTLS_BROKERS; the CA's client certificate and its key
# are SLUICE_KAFKA_CLIENT_CERT and SLUICE_KAFKA_CLIENT_KEY); SLUICE_KAFKA_CA
# names the CA.
# Its start also fetches (once, into the cache) a Kafka Connect worker's jars
# and Debezium's JDBC sink and MySQL connector for the interop tests
# (SLUICE_KAFKA_CONNECT_LIB and SLUICE_KAFKA_CONNECT_PLUGINS in servers.env).
#
# start is idempotent (already running => checks readiness, refreshes env, succeeds);
# every start waits for real readiness and, on failure, prints the server log tail
# and exits non-zero.
set -euo pipefail

ROOT="${SLUICE_SERVERS_ROOT:-/tmp/sluice-servers}"
CACHE="${SLUICE_CACHE:-$HOME/.cache/sluice}"
HOST=127.0.0.1

# Every default port sits below 32768, where the kernel's ephemeral ports
# begin (net.ipv4.ip_local_port_range): a port in that range can be taken
# by any outgoing connection, and a server then fails to bind it (MySQL's
# 33306 did, once, on a busy machine).
MARIADB_PORT="${SLUICE_MARIADB_PORT:-13306}"
PG_PORT="${SLUICE_POSTGRES_PORT:-15432}"
RMQ_NAMESRV_PORT="${SLUICE_ROCKETMQ_NAMESRV_PORT:-19876}"
RMQ_BROKER_PORT="${SLUICE_ROCKETMQ_BROKER_PORT:-20911}"   # broker also uses port-2 and port+1
RMQ_VERSION="${SLUICE_ROCKETMQ_VERSION:-5.3.3}"
# On disk under the root by default: a tmpfs store is RAM the kernel cannot reclaim, and a
# test suite writing gigabytes to it ends in the OOM killer. It follows the root, so
# `clean` of one root never removes another root's store.
RMQ_STORE="${SLUICE_ROCKETMQ_STORE:-$ROOT/rocketmq-store}"
# A second master broker, broker-b, in the same cluster (topics then have
# queues on both): on unless SLUICE_ROCKETMQ_BROKER_B=0. Its store is $RMQ_STORE-b.
RMQ_BROKER_B="${SLUICE_ROCKETMQ_BROKER_B:-1}"
RMQ_BROKER_B_PORT="${SLUICE_ROCKETMQ_BROKER_B_PORT:-$((RMQ_BROKER_PORT + 100))}"   # also port-2 and port+1
START_TIMEOUT="${SLUICE_START_TIMEOUT:-120}"

ENV_FILE="$ROOT/servers.env"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf '[servers] %s\n' "$*" >&2; }
die() { printf '[servers] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

tail_log() { # tail_log FILE...
  local f
  for f in "$@"; do
    if [[ -f "$f" ]]; then
      printf '[servers] ---- last lines of %s ----\n' "$f" >&2
      tail -n 40 "$f" >&2 || true
    fi
  done
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# read_pid PIDFILE: the pid in the file, or nothing. A server removes its
# own pid file as it shuts down (MariaDB after SQL SHUTDOWN), so the file can
# go between a test for it and a read of it: one read, its failure tolerated
# (in CI, stop_mariadb failed on that read under set -e, December 7).
read_pid() { tr -dc 0-9 2>/dev/null <"$1" || true; }

pid_alive() { # pid_alive PIDFILE
  local pid
  pid="$(read_pid "$1")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

kill_pid() { # kill_pid PID NAME TIMEOUT: TERM, wait, then KILL
  local pid="$1" name="$2" timeout="$3" i
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  log "$name (pid $pid) did not stop in ${timeout}s, killing"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.5
}

kill_pidfile() { # kill_pidfile PIDFILE NAME TIMEOUT
  kill_pid "$(read_pid "$1")" "$2" "$3"
  rm -f "$1"
}

# ---------------------------------------------------------------- packages --
APT_UPDATED=0
ensure_apt() { # ensure_apt PKG... : installs the packages that are not installed yet
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ((APT_UPDATED == 0)); then apt-get update -qq; APT_UPDATED=1; fi
  apt-get install -y -qq "${missing[@]}" >/dev/null
}

# --------------------------------------------------------------- env file --
env_set() { # env_set KEY=VALUE... : replaces those keys in the env file, keeps the others
  mkdir -p "$ROOT"
  local tmp kv keys=()
  tmp="$(mktemp "$ROOT/.servers.env.XXXXXX")"
  for kv in "$@"; do keys+=("${kv%%=*}"); done
  if [[ -f "$ENV_FILE" ]]; then
    grep -v -E "^($(IFS='|'; echo "${keys[*]}"))=" "$ENV_FILE" >"$tmp" || true
  fi
  printf '%s\n' "$@" >>"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$ENV_FILE"
}

# --------------------------------------------------------------------- TLS --
TLS_DIR="$ROOT/tls"

# ensure_tls makes, once per root, a throwaway CA, a server certificate for
# 127.0.0.1 and localhost, and a client certificate, all signed by the CA.
ensure_tls() {
  [[ -f "$TLS_DIR/.complete" ]] && return 0
  command -v openssl >/dev/null || ensure_apt openssl
  local tmp; mkdir -p "$ROOT"; tmp="$(mktemp -d "$ROOT/.tls.XXXXXX")"
  (
    cd "$tmp"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=sluice throwaway test CA" \
      -keyout ca.key -out ca.pem -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -extfile server.ext -out server.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=sluice" -keyout client.key -out client.csr
    printf 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -extfile client.ext -out client.pem
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 644 ./*.pem; chmod 600 ./*.key
  ) >"$tmp/openssl.log" 2>&1 || { tail_log "$tmp/openssl.log"; rm -rf "$tmp"; die "tls: openssl could not make the test CA"; }
  rm -f "$tmp/openssl.log"
  touch "$tmp/.complete"
  rm -rf "$TLS_DIR"
  mv "$tmp" "$TLS_DIR"
  chmod 755 "$TLS_DIR"
  log "tls: throwaway CA and certificates for 127.0.0.1/localhost in $TLS_DIR"
}

tls_env() {
  env_set SLUICE_TLS_CA="$TLS_DIR/ca.pem" SLUICE_TLS_CLIENT_CERT="$TLS_DIR/client.pem" \
    SLUICE_TLS_CLIENT_KEY="$TLS_DIR/client.key"
}

# ----------------------------------------------------------------- MariaDB --
MDB_DIR="$ROOT/mariadb"
MDB_CNF="$MDB_DIR/my.cnf"
MDB_SOCK="$MDB_DIR/mariadb.sock"
MDB_PID="$MDB_DIR/mariadb.pid"
MDB_ERR="$MDB_DIR/mariadb.err"
MDB_OUT="$MDB_DIR/mariadbd.out"

mdb_root() { mariadb --no-defaults --protocol=socket -S "$MDB_SOCK" -uroot "$@"; }
# Running = pid file alive, or (pid file lost) our socket still answers.
mdb_running() { pid_alive "$MDB_PID" || mdb_root -N -e 'SELECT 1' >/dev/null 2>&1; }
mdb_cdc_ok() {
  mariadb --no-defaults --protocol=tcp -h "$HOST" -P "$MARIADB_PORT" -usluice -psluice \
    --connect-timeout=2 -N -e 'SELECT 1' >/dev/null 2>&1
}

mdb_write_cnf() {
  cat >"$MDB_CNF" <<EOF
# generated by scripts/servers.sh
[client]
port=$MARIADB_PORT
socket=$MDB_SOCK

[mariadbd]
user=root
datadir=$MDB_DIR/data
tmpdir=$MDB_DIR/tmp
port=$MARIADB_PORT
bind-address=$HOST
socket=$MDB_SOCK
pid-file=$MDB_PID
log-error=$MDB_ERR
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci

# binlog for CDC
log-bin=mariadb-bin
binlog-format=ROW
binlog-row-image=FULL
binlog-row-metadata=FULL
server-id=1
gtid-strict-mode=ON
binlog-expire-logs-seconds=172800
sync-binlog=0

# small and fast, throwaway
innodb-buffer-pool-size=128M
innodb-log-file-size=64M
innodb-flush-log-at-trx-commit=2
innodb-doublewrite=0
performance-schema=OFF
max-connections=200
max-allowed-packet=64M
key-buffer-size=8M

# TLS with the throwaway CA (ensure_tls); plain connections still work
ssl-ca=$TLS_DIR/ca.pem
ssl-cert=$TLS_DIR/server.pem
ssl-key=$TLS_DIR/server.key
EOF
}

# accounts_once DATADIR NAME RUNNER: runs the SQL on stdin with RUNNER
# unless DATADIR's marker says this very script already ran there.
accounts_once() {
  local sql sum marker="$1/sluice-accounts.sum"
  sql="$(cat)"
  sum="$(printf '%s' "$sql" | sha256sum | cut -d' ' -f1)"
  if [[ -f "$marker" && "$(cat "$marker")" == "$sum" ]]; then
    log "$2: accounts already set up"
    return 0
  fi
  printf '%s\n' "$sql" | "$3" || return 1
  printf '%s' "$sum" >"$marker"
}

start_mariadb() {
  local t0; t0="$(now)"
  command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null && command -v mariadb >/dev/null \
    || ensure_apt mariadb-server mariadb-client
  mkdir -p "$MDB_DIR/tmp"
  ensure_tls
  mdb_write_cnf
  if ! mdb_running; then
    if [[ ! -d "$MDB_DIR/data/mysql" ]]; then
      log "mariadb: initialising $MDB_DIR/data"
      rm -rf "$MDB_DIR/data"
      mariadb-install-db --no-defaults --user=root --datadir="$MDB_DIR/data" \
        --auth-root-authentication-method=normal --skip-test-db >"$MDB_DIR/install-db.log" 2>&1 \
        || { tail_log "$MDB_DIR/install-db.log"; die "mariadb-install-db failed"; }
    fi
    port_open "$MARIADB_PORT" && die "mariadb: port $MARIADB_PORT is already taken by another process"
    log "mariadb: starting on $HOST:$MARIADB_PORT"
    setsid mariadbd --defaults-file="$MDB_CNF" >>"$MDB_OUT" 2>&1 </dev/null 9>&- &
  fi
  local i ok=0
  for ((i = 0; i < START_TIMEOUT * 5; i++)); do
    if mdb_root -N -e 'SELECT 1' >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
  done
  ((ok)) || { tail_log "$MDB_ERR" "$MDB_OUT"; die "mariadb did not answer on its socket within ${START_TIMEOUT}s"; }
  # Accounts (idempotent). Kept out of the binlog so the CDC stream starts clean.
  # Run once per data directory (a marker holds the script's checksum): a
  # restart, as the fault tests do many times, leaves the accounts alone
  # instead of revoking and granting again while pipelines reconnect.
  accounts_once "$MDB_DIR/data" mariadb mdb_root <<'SQL' || { tail_log "$MDB_ERR"; die "mariadb: creating accounts failed"; }
SET SESSION sql_log_bin = 0;
DROP USER IF EXISTS ''@'localhost';
CREATE USER IF NOT EXISTS 'sluice'@'127.0.0.1' IDENTIFIED BY 'sluice';
-- Exactly the grants README lists for a source, binlog.SourcePrivileges (the same list for MySQL; TestSourceGrantListIsOne).
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'sluice'@'127.0.0.1';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY 'root';
-- mariadb-install-db may already have made root@127.0.0.1 without a password.
ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY 'root';
ALTER USER 'sluice'@'127.0.0.1' IDENTIFIED BY 'sluice';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
  ok=0
  for ((i = 0; i < 50; i++)); do
    if mdb_cdc_ok; then ok=1; break; fi
    sleep 0.2
  done
  ((ok)) || { tail_log "$MDB_ERR"; die "mariadb: CDC user cannot query over TCP $HOST:$MARIADB_PORT"; }
  env_set SLUICE_MYSQL_HOST=$HOST SLUICE_MYSQL_PORT="$MARIADB_PORT" \
    SLUICE_MYSQL_USER=root SLUICE_MYSQL_PASSWORD=root \
    SLUICE_MYSQL_CDC_USER=sluice SLUICE_MYSQL_CDC_PASSWORD=sluice \
    SLUICE_MYSQL_FLAVOR=mariadb SLUICE_MYSQL_SOCKET="$MDB_SOCK"
  tls_env
  [[ "$(mdb_root -N -e "SELECT @@have_ssl")" == YES ]] \
    || log "mariadb: WARNING: TLS is off (have_ssl is not YES): it was started before TLS was set up; restart it"
  log "mariadb: ready on $HOST:$MARIADB_PORT ($(mdb_root -N -e 'SELECT VERSION()')) in $(elapsed "$t0")s"
}

stop_mariadb() {
  mdb_running || { rm -f "$MDB_PID"; log "mariadb: not running"; return 0; }
  log "mariadb: stopping"
  # The pid is read before SHUTDOWN: MariaDB removes its pid file while it
  # shuts down, and the wait below must still see the process go.
  local pid; pid="$(read_pid "$MDB_PID")"
  mdb_root -e 'SHUTDOWN' >/dev/null 2>&1 || true
  kill_pid "$pid" mariadb 30
  rm -f "$MDB_PID"
  local i
  for ((i = 0; i < 150; i++)); do port_open "$MARIADB_PORT" || break; sleep 0.2; done
  port_open "$MARIADB_PORT" && die "mariadb: still listening on $MARIADB_PORT after shutdown"
  log "mariadb: stopped"
}

status_mariadb() {
  if mdb_running; then
    local pid; pid="$(cat "$MDB_PID" 2>/dev/null || echo '?')"
    if mdb_cdc_ok; then echo "mariadb   running  pid $pid  $HOST:$MARIADB_PORT  ready"
    else echo "mariadb   running  pid $pid  $HOST:$MARIADB_PORT  NOT answering"; fi
  else echo "mariadb   stopped"; fi
}

# ------------------------------------------------------------ MySQL 9.7 --
# MySQL is not in Debian 12's suites; Debian's unstable suite carries
# mysql-server-core/mysql-client-core 9.7. Its libc and libstdc++ are newer than
# this machine's, so nothing is installed as a system package: apt fetches the two
# packages and their shared-library closure through a private sources list (the
# system's configured Debian mirror, unstable suite) and private lists folder,
# dpkg-deb unpacks them under $CACHE/mysql-root, and every binary runs through that
# root's own dynamic loader. Three instances: a source (log-bin, GTID on, row
# metadata FULL), a target, and a scratch source (GTID off) for tests that change globals.
MY_VERSION_SUITE="${SLUICE_MYSQL_SUITE:-sid}"
MY_PKG_ROOT="$CACHE/mysql-root"
MYSQL_SOURCE_PORT="${SLUICE_MYSQL97_PORT:-16306}"
MYSQL_TARGET_PORT="${SLUICE_MYSQL97_TARGET_PORT:-16307}"
# A third instance whose globals tests may change (gtid_mode, binlog_row_metadata):
# a source that starts with GTIDs off, as a server that never had them.
MYSQL_SCRATCH_PORT="${SLUICE_MYSQL97_SCRATCH_PORT:-16308}"
# Shared libraries the packages need that are not worth unpacking (perl is only
# for helper scripts such as mysqld_multi).
MY_SKIP_PKGS='^(perl|perl-base|perl-modules-[0-9.]+|libperl[0-9.]+|debconf|dpkg|tar|coreutils)$'

my_run() { # my_run BINARY ARGS... : runs an unpacked binary through the root's own loader
  local lib="$MY_PKG_ROOT/usr/lib/x86_64-linux-gnu"
  "$lib/ld-linux-x86-64.so.2" --library-path "$lib:$MY_PKG_ROOT/lib/x86_64-linux-gnu" "$MY_PKG_ROOT/$1" "${@:2}"
}

my_fetch() { # unpacks mysql-server-core and mysql-client-core with their library closure (once)
  [[ -f "$MY_PKG_ROOT/.complete" ]] && return 0
  command -v apt-get >/dev/null || die "mysql: apt-get is needed to fetch MySQL from Debian's packages"
  local t0 apt uri tmp pkgs
  t0="$(now)"
  apt="$CACHE/mysql-apt"
  uri="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  [[ -n "$uri" ]] || uri="$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null || true)"
  [[ -n "$uri" ]] || die "mysql: no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
  rm -rf "$apt"; mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/cache" "$apt/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $MY_VERSION_SUITE main" >"$apt/sources.list"
  : >"$apt/status"
  local o=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=/nonexistent
    -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
    -o "Dir::Cache=$apt/cache" -o "Dir::Cache::archives=$apt/archives" -o APT::Sandbox::User=root)
  log "mysql: fetching mysql-server-core and mysql-client-core from Debian's $MY_VERSION_SUITE suite"
  apt-get "${o[@]}" update -qq >"$apt/update.log" 2>&1 || { tail_log "$apt/update.log"; die "mysql: apt-get update of the private $MY_VERSION_SUITE list failed"; }
  mapfile -t pkgs < <(apt-cache "${o[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances mysql-server-core mysql-client-core | grep -v -e '^ ' -e '^<' | sort -u | grep -v -E "$MY_SKIP_PKGS")
  ((${#pkgs[@]} > 2)) || die "mysql: Debian's $MY_VERSION_SUITE suite lists no mysql-server-core"
  (cd "$apt/debs" && apt-get "${o[@]}" download "${pkgs[@]}") >"$apt/download.log" 2>&1 \
    || { tail_log "$apt/download.log"; die "mysql: downloading ${#pkgs[@]} packages failed"; }
  tmp="$(mktemp -d "$CACHE/.mysql-root.XXXXXX")"
  local d
  for d in "$apt/debs"/*.deb; do dpkg-deb -x "$d" "$tmp" || die "mysql: cannot unpack $d"; done
  rm -rf "$MY_PKG_ROOT"; mv "$tmp" "$MY_PKG_ROOT"; rm -rf "$apt/debs"
  my_run usr/sbin/mysqld --version >/dev/null || die "mysql: the unpacked mysqld does not run through its own loader"
  touch "$MY_PKG_ROOT/.complete"
  log "mysql: $(my_run usr/sbin/mysqld --version | sed 's/^.*mysqld *//') unpacked (${#pkgs[@]} packages) in $(elapsed "$t0")s"
}

# my_vars NAME PORT : the paths of one instance
my_vars() {
  MY_NAME="$1"; MY_PORT="$2"; MY_DIR="$ROOT/$1"
  MY_SOCK="$MY_DIR/mysqld.sock"; MY_PIDF="$MY_DIR/mysqld.pid"; MY_ERR="$MY_DIR/mysqld.err"
}
my_root_sql() { my_run usr/bin/mysql --no-defaults --protocol=socket -S "$MY_SOCK" -uroot "$@"; }
my_running() { pid_alive "$MY_PIDF" || my_root_sql -N -e 'SELECT 1' >/dev/null 2>&1; }

my_start_instance() { # my_start_instance NAME PORT ROLE(source|scratch|target)
  my_vars "$1" "$2"
  local role="$3" t0 i ok=0; t0="$(now)"
  my_fetch
  mkdir -p "$MY_DIR/tmp" "$MY_DIR/files"
  ensure_tls
  if ! my_running; then
    if [[ ! -d "$MY_DIR/data/mysql" ]]; then
      log "$MY_NAME: initialising $MY_DIR/data"
      rm -rf "$MY_DIR/data"
      my_run usr/sbin/mysqld --no-defaults --basedir="$MY_PKG_ROOT/usr" --lc-messages-dir="$MY_PKG_ROOT/usr/share/mysql" \
        --datadir="$MY_DIR/data" --user=root --initialize-insecure >"$MY_DIR/initialize.log" 2>&1 \
        || { tail_log "$MY_DIR/initialize.log"; die "$MY_NAME: mysqld --initialize-insecure failed"; }
    fi
    port_open "$MY_PORT" && die "$MY_NAME: port $MY_PORT is already taken by another process"
    local args=(--no-defaults --basedir="$MY_PKG_ROOT/usr" --lc-messages-dir="$MY_PKG_ROOT/usr/share/mysql"
      --datadir="$MY_DIR/data" --tmpdir="$MY_DIR/tmp" --user=root --port="$MY_PORT" --bind-address=$HOST
      --socket="$MY_SOCK" --pid-file="$MY_PIDF" --log-error="$MY_ERR" --secure-file-priv="$MY_DIR/files"
      --mysqlx=OFF --skip-name-resolve --performance-schema=OFF --innodb-buffer-pool-size=128M
      --innodb-log-buffer-size=16M --max-connections=200 --max-allowed-packet=64M
      --ssl-ca="$TLS_DIR/ca.pem" --ssl-cert="$TLS_DIR/server.pem" --ssl-key="$TLS_DIR/server.key")
    if [[ "${SLUICE_MYSQL_DURABLE:-0}" == 1 ]]; then args+=(--innodb-flush-log-at-trx-commit=1 --sync-binlog=1)
    else args+=(--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --innodb-doublewrite=OFF); fi
    if [[ "$role" == source ]]; then
      args+=(--server-id=1 --log-bin=binlog --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL
        --gtid-mode=ON --enforce-gtid-consistency=ON --binlog-expire-logs-seconds=172800)
    elif [[ "$role" == scratch ]]; then
      args+=(--server-id=3 --log-bin=binlog --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL
        --gtid-mode=OFF --enforce-gtid-consistency=OFF --binlog-expire-logs-seconds=172800)
    else
      args+=(--server-id=2 --skip-log-bin)
    fi
    log "$MY_NAME: starting MySQL ($role) on $HOST:$MY_PORT"
    setsid "$MY_PKG_ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \
      --library-path "$MY_PKG_ROOT/usr/lib/x86_64-linux-gnu:$MY_PKG_ROOT/lib/x86_64-linux-gnu" \
      "$MY_PKG_ROOT/usr/sbin/mysqld" "${args[@]}" >>"$MY_DIR/mysqld.out" 2>&1 </dev/null 9>&- &
  fi
  for ((i = 0; i < START_TIMEOUT * 5; i++)); do
    if my_root_sql -N -e 'SELECT 1' >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
  done
  ((ok)) || { tail_log "$MY_ERR" "$MY_DIR/mysqld.out"; die "$MY_NAME did not answer on its socket within ${START_TIMEOUT}s"; }
  # Accounts (idempotent), kept out of the binlog. The CDC account has exactly
  # the grants README lists for a source (binlog.SourcePrivileges; TestSourceGrantListIsOne).
  accounts_once "$MY_DIR/data" "$MY_NAME" my_root_sql <<'SQL' || { tail_log "$MY_ERR"; die "$MY_NAME: creating accounts failed"; }
SET SESSION sql_log_bin = 0;
CREATE USER IF NOT EXISTS 'sluice'@'127.0.0.1' IDENTIFIED WITH caching_sha2_password BY 'sluice';
ALTER USER 'sluice'@'127.0.0.1' IDENTIFIED WITH caching_sha2_password BY 'sluice';
REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'sluice'@'127.0.0.1';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'sluice'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED WITH caching_sha2_password BY 'root';
ALTER USER 'root'@'127.0.0.1' IDENTIFIED WITH caching_sha2_password BY 'root';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
  ok=0
  for ((i = 0; i < 50; i++)); do
    if my_run usr/bin/mysql --no-defaults --protocol=tcp -h $HOST -P "$MY_PORT" -usluice -psluice \
      --get-server-public-key --connect-timeout=2 -N -e 'SELECT 1' >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
  done
  ((ok)) || { tail_log "$MY_ERR"; die "$MY_NAME: the sluice user cannot query over TCP $HOST:$MY_PORT"; }
  log "$MY_NAME: ready on $HOST:$MY_PORT ($(my_root_sql -N -e 'SELECT VERSION()')) in $(elapsed "$t0")s"
}

my_stop_instance() { # my_stop_instance NAME PORT
  my_vars "$1" "$2"
  [[ -x "$MY_PKG_ROOT/usr/sbin/mysqld" ]] || { log "$MY_NAME: not installed"; return 0; }
  my_running || { rm -f "$MY_PIDF"; log "$MY_NAME: not running"; return 0; }
  log "$MY_NAME: stopping"
  local pid; pid="$(read_pid "$MY_PIDF")" # before SHUTDOWN, as in stop_mariadb
  my_root_sql -e 'SHUTDOWN' >/dev/null 2>&1 || true
  kill_pid "$pid" "$MY_NAME" 30
  rm -f "$MY_PIDF"
  local i
  for ((i = 0; i < 150; i++)); do port_open "$MY_PORT" || break; sleep 0.2; done
  port_open "$MY_PORT" && die "$MY_NAME: still listening on $MY_PORT after shutdown"
  log "$MY_NAME: stopped"
}

my_status_instance() { # my_status_instance NAME PORT
  my_vars "$1" "$2"
  if [[ -x "$MY_PKG_ROOT/usr/sbin/mysqld" ]] && my_running; then
    echo "$(printf '%-9s' "$MY_NAME") running  pid $(cat "$MY_PIDF" 2>/dev/null || echo '?')  $HOST:$MY_PORT"
  else echo "$(printf '%-9s' "$MY_NAME") stopped"; fi
}

start_mysql() {
  my_start_instance mysql "$MYSQL_SOURCE_PORT" source
  my_start_instance mysql-tgt "$MYSQL_TARGET_PORT" target
  # SLUICE_MYSQL_* name the MariaDB source (older tests); SLUICE_MYSQL97_* the MySQL servers.
  env_set SLUICE_MYSQL97_HOST=$HOST SLUICE_MYSQL97_PORT="$MYSQL_SOURCE_PORT" \
    SLUICE_MYSQL97_USER=root SLUICE_MYSQL97_PASSWORD=root \
    SLUICE_MYSQL97_CDC_USER=sluice SLUICE_MYSQL97_CDC_PASSWORD=sluice \
    SLUICE_MYSQL97_SOCKET="$ROOT/mysql/mysqld.sock" SLUICE_MYSQL97_TARGET_PORT="$MYSQL_TARGET_PORT" \
    SLUICE_MYSQL97_TARGET_DSN="'root:root@tcp($HOST:$MYSQL_TARGET_PORT)/'"
  tls_env
  start_mysql_scratch
}
stop_mysql() { stop_mysql_scratch; my_stop_instance mysql-tgt "$MYSQL_TARGET_PORT"; my_stop_instance mysql "$MYSQL_SOURCE_PORT"; }
status_mysql() { my_status_instance mysql "$MYSQL_SOURCE_PORT"; my_status_instance mysql-tgt "$MYSQL_TARGET_PORT"; status_mysql_scratch; }

# mysql-scratch: started with mysql or alone; same accounts as the source.
start_mysql_scratch() {
  my_start_instance mysql-scratch "$MYSQL_SCRATCH_PORT" scratch
  env_set SLUICE_MYSQL97_SCRATCH_PORT="$MYSQL_SCRATCH_PORT"
}
stop_mysql_scratch() { my_stop_instance mysql-scratch "$MYSQL_SCRATCH_PORT"; }
status_mysql_scratch() { my_status_instance mysql-scratch "$MYSQL_SCRATCH_PORT"; }

# -------------------------------------------------------------- PostgreSQL --
PG_DIR="$ROOT/postgres"
PG_DATA="$PG_DIR/data"
PG_LOG="$PG_DIR/postgres.log"

pg_bindir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [[ -n "$d" && -x "$d/initdb" ]] && echo "$d"
}
pg_psql() { psql -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PG_PORT" -U postgres "$@"; }
pg_as() { runuser -u postgres -- "$@"; }

start_postgres() {
  local t0 bin; t0="$(now)"
  bin="$(pg_bindir)" || true
  if [[ -z "$bin" ]] || ! command -v psql >/dev/null; then
    ensure_apt postgresql postgresql-client
    bin="$(pg_bindir)" || die "postgres: no /usr/lib/postgresql/*/bin/initdb after install"
  fi
  id postgres >/dev/null 2>&1 || die "postgres: system user 'postgres' missing"
  mkdir -p "$ROOT"
  chmod 755 "$ROOT"
  mkdir -p "$PG_DIR"
  chown postgres: "$PG_DIR"
  pg_as test -w "$PG_DIR" || die "postgres: user postgres cannot write $PG_DIR (check permissions of its parents)"
  if [[ ! -f "$PG_DATA/PG_VERSION" ]]; then
    log "postgres: initialising $PG_DATA"
    rm -rf "$PG_DATA"
    local loc=C.UTF-8
    locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$' || loc=C
    pg_as "$bin/initdb" -D "$PG_DATA" -A trust -E UTF8 --locale="$loc" -U postgres >"$PG_DIR/initdb.log" 2>&1 \
      || { tail_log "$PG_DIR/initdb.log"; die "initdb failed"; }
  fi
  ensure_tls
  # PostgreSQL wants its key owned by its user with mode 0600.
  install -o postgres -m 600 "$TLS_DIR/server.key" "$PG_DIR/server.key"
  install -o postgres -m 644 "$TLS_DIR/server.pem" "$PG_DIR/server.pem"
  local crash=off
  [[ "${SLUICE_POSTGRES_DURABLE:-0}" == 1 ]] && crash=on
  if ! pg_as "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
    port_open "$PG_PORT" && die "postgres: port $PG_PORT is already taken by another process"
    log "postgres: starting on $HOST:$PG_PORT (fsync=$crash)"
    pg_as "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$START_TIMEOUT" \
      -o "-p $PG_PORT -k $PG_DATA -c listen_addresses=$HOST -c fsync=$crash -c synchronous_commit=off -c full_page_writes=$crash -c max_connections=200 -c ssl=on -c ssl_cert_file=$PG_DIR/server.pem -c ssl_key_file=$PG_DIR/server.key" \
      start >"$PG_DIR/pg_ctl.out" 2>&1 9>&- \
      || { tail_log "$PG_DIR/pg_ctl.out" "$PG_LOG"; die "postgres did not start"; }
  fi
  local i ok=0
  for ((i = 0; i < START_TIMEOUT * 5; i++)); do
    if pg_psql -d postgres -tAc 'SELECT 1' >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
  done
  ((ok)) || { tail_log "$PG_LOG"; die "postgres does not answer over TCP $HOST:$PG_PORT"; }
  [[ "$crash" == off || "$(pg_psql -d postgres -tAc 'SHOW fsync')" == on ]] \
    || die "postgres: SLUICE_POSTGRES_DURABLE=1 but the running server has fsync=off: stop postgres, then start it again"
  pg_psql -d postgres <<'SQL' || { tail_log "$PG_LOG"; die "postgres: creating role/database failed"; }
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sluice') THEN
    CREATE ROLE sluice LOGIN SUPERUSER PASSWORD 'sluice';
  END IF;
END $$;
SQL
  if [[ "$(pg_psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'sluice'")" != 1 ]]; then
    pg_psql -d postgres -c 'CREATE DATABASE sluice OWNER sluice' || die "postgres: CREATE DATABASE failed"
  fi
  PGPASSWORD=sluice psql -X -h "$HOST" -p "$PG_PORT" -U sluice -d sluice -tAc 'SELECT 1' >/dev/null \
    || { tail_log "$PG_LOG"; die "postgres: sluice cannot connect to database sluice"; }
  env_set SLUICE_PG_HOST=$HOST SLUICE_PG_PORT="$PG_PORT" SLUICE_PG_USER=sluice SLUICE_PG_PASSWORD=sluice \
    SLUICE_PG_DATABASE=sluice SLUICE_PG_DURABLE="$(pg_psql -d postgres -tAc 'SHOW fsync')" SLUICE_PG_DATA="$PG_DATA" SLUICE_PG_BIN="$bin" \
    "SLUICE_PG_DSN=postgres://sluice:sluice@$HOST:$PG_PORT/sluice?sslmode=disable"
  tls_env
  [[ "$(pg_psql -d postgres -tAc 'SHOW ssl')" == on ]] \
    || log "postgres: WARNING: TLS is off: it was started before TLS was set up; restart it"
  log "postgres: ready on $HOST:$PG_PORT ($(pg_psql -d postgres -tAc 'SHOW server_version')) in $(elapsed "$t0")s"
}

stop_postgres() {
  local bin; bin="$(pg_bindir)" || true
  if [[ -z "$bin" || ! -f "$PG_DATA/PG_VERSION" ]] || ! pg_as "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
    log "postgres: not running"; return 0
  fi
  log "postgres: stopping"
  pg_as "$bin/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null
  log "postgres: stopped"
}

status_postgres() {
  local bin; bin="$(pg_bindir)" || true
  if [[ -n "$bin" && -f "$PG_DATA/PG_VERSION" ]] && pg_as "$bin/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
    local pid; pid="$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null || echo '?')"
    if pg_psql -d postgres -tAc 'SELECT 1' >/dev/null 2>&1; then echo "postgres  running  pid $pid  $HOST:$PG_PORT  ready"
    else echo "postgres  running  pid $pid  $HOST:$PG_PORT  NOT answering"; fi
  else echo "postgres  stopped"; fi
}

# ---------------------------------------------------------------- RocketMQ --
RMQ_DIR="$ROOT/rocketmq"
RMQ_HOME="$RMQ_DIR/home"          # rocketmq.home.dir and user.home (logs: $RMQ_HOME/logs/rocketmqlogs)
RMQ_NS_PID="$RMQ_DIR/namesrv.pid"
RMQ_BR_PID="$RMQ_DIR/broker.pid"
RMQ_NS_OUT="$RMQ_DIR/namesrv.out"
RMQ_BR_OUT="$RMQ_DIR/broker.out"
RMQ_BRB_PID="$RMQ_DIR/broker-b.pid"
RMQ_BRB_OUT="$RMQ_DIR/broker-b.out"
RMQ_HOME_B="$RMQ_DIR/home-b"      # broker-b's logs: $RMQ_HOME_B/logs/rocketmqlogs
RMQ_ADMIN="$RMQ_DIR/bin/mqadmin"
RMQ_NAMESRV="$HOST:$RMQ_NAMESRV_PORT"
JDK17_OPENS=(--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED
  --add-exports=java.base/sun.nio.ch=ALL-UNNAMED)

rmq_libdir() { echo "$CACHE/rocketmq-$1/lib"; }

# maven_fetch NAME LIBDIR WANT DEP... : resolves the runtime closure of the
# DEPs (group:artifact:version) with maven into LIBDIR, once (a complete
# folder is reused); WANT lists globs of jars that must be among them.
maven_fetch() {
  local name="$1" lib="$2" tmp t0 d g art ver globs
  read -ra globs <<<"$3"
  shift 3
  [[ -f "$lib/.complete" ]] && return 0
  command -v mvn >/dev/null || ensure_apt maven
  t0="$(now)"
  log "$name: resolving $* with maven into $lib"
  mkdir -p "$CACHE"
  tmp="$(mktemp -d "$CACHE/.fetch-$name.XXXXXX")"
  {
    printf '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
    printf '  <groupId>local.sluice</groupId>\n  <artifactId>%s-fetch</artifactId>\n  <version>1</version>\n  <packaging>pom</packaging>\n  <dependencies>\n' "$name"
    for d in "$@"; do
      IFS=: read -r g art ver <<<"$d"
      printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' "$g" "$art" "$ver"
    done
    printf '  </dependencies>\n</project>\n'
  } >"$tmp/pom.xml"
  if ! (cd "$tmp" && mvn -B -q dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$tmp/lib" >"$tmp/mvn.log" 2>&1); then
    tail_log "$tmp/mvn.log"
    rm -rf "$tmp"
    return 1
  fi
  for d in "${globs[@]}"; do
    compgen -G "$tmp/lib/$d" >/dev/null || { log "$name: maven resolved no $d"; rm -rf "$tmp"; return 1; }
  done
  touch "$tmp/lib/.complete"
  rm -rf "$lib"
  mkdir -p "$(dirname "$lib")"
  mv "$tmp/lib" "$lib"
  rm -rf "$tmp"
  log "$name: jars ($(du -sh "$lib" | cut -f1)) resolved in $(elapsed "$t0")s"
}

rmq_fetch() { # rmq_fetch VERSION : resolves the jars into the cache (reused when complete)
  maven_fetch rocketmq "$(rmq_libdir "$1")" "rocketmq-broker-*.jar rocketmq-namesrv-*.jar rocketmq-tools-*.jar" \
    "org.apache.rocketmq:rocketmq-namesrv:$1" "org.apache.rocketmq:rocketmq-broker:$1" "org.apache.rocketmq:rocketmq-tools:$1"
}

rmq_resolve() { # sets RMQ_LIB; tries the requested version, then newer ones
  local v
  for v in "$RMQ_VERSION" 5.4.0 5.5.0 5.5.1; do
    if rmq_fetch "$v"; then RMQ_LIB="$(rmq_libdir "$v")"; RMQ_USED_VERSION="$v"; return 0; fi
    log "rocketmq: could not resolve version $v"
    [[ -n "${SLUICE_ROCKETMQ_VERSION:-}" ]] && break   # explicit version: no fallback
  done
  die "rocketmq: no version could be resolved with maven"
}

# loopback_shim builds (once, into the cache) the LD_PRELOAD shim that makes
# wildcard binds bind to loopback (scripts/loopback-bind.c) and prints its path.
loopback_shim() {
  local src="$SCRIPT_DIR/loopback-bind.c" so="$CACHE/loopback-bind.so"
  if [[ ! -f "$so" || "$src" -nt "$so" ]]; then
    command -v cc >/dev/null || ensure_apt gcc
    mkdir -p "$CACHE"
    cc -shared -fPIC -O2 -o "$so.tmp" "$src" -ldl && mv "$so.tmp" "$so" || die "cannot build $so from $src"
  fi
  echo "$so"
}

rmq_java() { # rmq_java LOGBACK_XML JVM_OPTS... -- MAINCLASS ARGS...
  local logback="$1"; shift
  command -v java >/dev/null || ensure_apt openjdk-17-jre-headless
  # The broker binds its HA port (listenPort+1) to the wildcard address with
  # no setting to change it; the shim keeps every listener on loopback.
  export LD_PRELOAD="$RMQ_SHIM"
  # tls.server.mode=disabled: in the default "permissive" mode every server start generates a
  # self-signed RSA certificate, which took 45 s on a loaded 2-core machine.
  exec java "${JDK17_OPENS[@]}" -XX:+UseSerialGC \
    -Dtls.server.mode=disabled -Djava.security.egd=file:/dev/./urandom \
    -Drocketmq.home.dir="$RMQ_HOME" -Duser.home="$RMQ_HOME" \
    -Drmq.logback.configurationFile="$logback" \
    -Drocketmq.namesrv.addr="$RMQ_NAMESRV" -Drocketmq.namesrv.domain="$HOST" \
    -cp "$RMQ_LIB/*" "$@"
}

rmq_write_admin() {
  mkdir -p "$RMQ_DIR/bin"
  cat >"$RMQ_ADMIN.tmp" <<EOF
#!/usr/bin/env bash
# generated by scripts/servers.sh: RocketMQ admin tool (MQAdminStartup) for the local name server.
# -n $RMQ_NAMESRV is added unless given. NOTE: the tool exits 0 even on failure, read its output.
set -euo pipefail
args=("\$@")
need_n=1
for a in "\$@"; do [[ "\$a" == -n || "\$a" == --namesrvAddr ]] && need_n=0; done
if ((\$# > 0)) && ((need_n)); then args+=(-n "$RMQ_NAMESRV"); fi
export NAMESRV_ADDR="$RMQ_NAMESRV"
exec java ${JDK17_OPENS[*]} -XX:+UseSerialGC -Xmx256m -XX:TieredStopAtLevel=1 \\
  -Dtls.enable=false -Djava.security.egd=file:/dev/./urandom \\
  -Drocketmq.home.dir="$RMQ_HOME" -Duser.home="$RMQ_HOME" \\
  -Drmq.logback.configurationFile=rmq.tools.logback.xml \\
  -Drocketmq.namesrv.addr="$RMQ_NAMESRV" -Drocketmq.namesrv.domain=$HOST \\
  -cp "$RMQ_LIB/*" org.apache.rocketmq.tools.command.MQAdminStartup "\${args[@]}"
EOF
  chmod 755 "$RMQ_ADMIN.tmp"
  mv -f "$RMQ_ADMIN.tmp" "$RMQ_ADMIN"
}

rmq_write_conf() {
  cat >"$RMQ_DIR/namesrv.conf" <<EOF
# generated by scripts/servers.sh
listenPort=$RMQ_NAMESRV_PORT
bindAddress=$HOST
rocketmqHome=$RMQ_HOME
EOF
  rmq_broker_conf broker-a "$RMQ_BROKER_PORT" "$RMQ_STORE" "$RMQ_HOME" >"$RMQ_DIR/broker.conf"
  rmq_broker_conf broker-b "$RMQ_BROKER_B_PORT" "$RMQ_STORE-b" "$RMQ_HOME_B" >"$RMQ_DIR/broker-b.conf"
}

rmq_broker_conf() { # rmq_broker_conf NAME PORT STORE HOME : prints a master broker's config
  cat <<EOF
# generated by scripts/servers.sh
brokerClusterName=DefaultCluster
brokerName=$1
brokerId=0
brokerRole=ASYNC_MASTER
namesrvAddr=$RMQ_NAMESRV
brokerIP1=$HOST
brokerIP2=$HOST
bindAddress=$HOST
listenPort=$2
rocketmqHome=$4
storePathRootDir=$3
storePathCommitLog=$3/commitlog
flushDiskType=ASYNC_FLUSH
mappedFileSizeCommitLog=67108864
mappedFileSizeConsumeQueue=300000
mappedFileSizeTimerLog=16777216
maxHashSlotNum=50000
maxIndexNum=200000
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
defaultTopicQueueNums=8
registerNameServerPeriod=10000
deleteWhen=04
fileReservedTime=24
# A pull may return a whole consumer batch (sluice pulls batch_size, at most
# 1024 messages) instead of the default 32 messages / 256 KiB.
maxTransferCountOnMessageInMemory=1024
maxTransferBytesOnMessageInMemory=4194304
# No timer-message store: sluice sends no delayed or timed messages, and an
# idle broker's TimerFlushService alone took 5% of a core (about half the
# idle broker's CPU; December 7, six brokers in a CI run on two cores).
timerWheelEnable=false
EOF
}

rmq_cluster_ok() { # rmq_cluster_ok [NAME PORT] : the broker (default broker-a) is registered
  local out
  out="$("$RMQ_ADMIN" clusterList 2>&1)" || return 1
  grep -q "${1:-broker-a}" <<<"$out" && grep -q "$HOST:${2:-$RMQ_BROKER_PORT}" <<<"$out"
}

# rmq_launch_broker NAME PORT CONF PIDFILE OUT HOME : starts a broker unless
# running; returns 0 when it started one, 1 when it was running already.
rmq_launch_broker() {
  local name="$1" port="$2" conf="$3" pidfile="$4" out="$5" home="$6" p
  pid_alive "$pidfile" && return 1
  for p in "$port" $((port - 2)) $((port + 1)); do
    port_open "$p" && die "rocketmq: $name port $p is already taken"
  done
  mkdir -p "$home"
  log "rocketmq: starting $name on $HOST:$port"
  # shellcheck disable=SC2086 # RMQ_BROKER_HEAP is a list of JVM options
  (RMQ_HOME="$home" rmq_java rmq.broker.logback.xml ${RMQ_BROKER_HEAP:--Xms512m -Xmx512m -Xmn256m -XX:MaxDirectMemorySize=512m} \
     org.apache.rocketmq.broker.BrokerStartup -c "$conf") >>"$out" 2>&1 </dev/null 9>&- &
  echo $! >"$pidfile"
}

# rmq_wait_broker NAME PORT PIDFILE OUT HOME : waits until the name server
# lists the broker.
rmq_wait_broker() {
  local name="$1" port="$2" pidfile="$3" out="$4" home="$5" t0 ok=0
  t0="$(now)"
  local deadline=$(( $(date +%s) + START_TIMEOUT ))
  while (( $(date +%s) < deadline )); do
    pid_alive "$pidfile" || break
    if port_open "$port" && rmq_cluster_ok "$name" "$port"; then ok=1; break; fi
    sleep 1
  done
  ((ok)) || { tail_log "$out" "$home/logs/rocketmqlogs/broker.log"; die "rocketmq: $name not visible in clusterList on $RMQ_NAMESRV"; }
  log "rocketmq: $name registered after $(elapsed "$t0")s"
}

# rmq_start_namesrv JVM_OPTS... : starts the name server ($RMQ_DIR/namesrv.conf)
# unless running, and waits until it listens.
rmq_start_namesrv() {
  local tns i ok=0; tns="$(now)"
  if ! pid_alive "$RMQ_NS_PID"; then
    port_open "$RMQ_NAMESRV_PORT" && die "rocketmq: name server port $RMQ_NAMESRV_PORT is already taken"
    log "rocketmq: starting name server on $RMQ_NAMESRV"
    (rmq_java rmq.namesrv.logback.xml "$@" \
       org.apache.rocketmq.namesrv.NamesrvStartup -c "$RMQ_DIR/namesrv.conf") >>"$RMQ_NS_OUT" 2>&1 </dev/null 9>&- &
    echo $! >"$RMQ_NS_PID"
  fi
  for ((i = 0; i < START_TIMEOUT * 5; i++)); do
    port_open "$RMQ_NAMESRV_PORT" && { ok=1; break; }
    pid_alive "$RMQ_NS_PID" || break
    sleep 0.2
  done
  ((ok)) || { tail_log "$RMQ_NS_OUT" "$RMQ_HOME/logs/rocketmqlogs/namesrv.log"; die "rocketmq: name server not listening on $RMQ_NAMESRV"; }
  log "rocketmq: name server listening after $(elapsed "$tns")s"
}

start_rocketmq() {
  local t0 tns tbr i ok; t0="$(now)"
  rmq_resolve
  RMQ_SHIM="$(loopback_shim)" && [[ -f "$RMQ_SHIM" ]] || die "rocketmq: no loopback-bind shim"
  mkdir -p "$RMQ_DIR" "$RMQ_HOME"
  rmq_write_conf
  rmq_write_admin
  # The store goes to tmpfs when it has room; the broker refuses writes above 90% disk use.
  local storeparent; storeparent="$(dirname "$RMQ_STORE")"
  if [[ -z "${SLUICE_ROCKETMQ_STORE:-}" ]] && { [[ ! -d "$storeparent" ]] || \
      (( $(df -Pm "$storeparent" | awk 'NR==2 {print $4}') < 1024 )); }; then
    RMQ_STORE="$RMQ_DIR/store"
    log "rocketmq: $storeparent missing or under 1 GiB free; store goes to $RMQ_STORE"
    rmq_write_conf
  fi
  mkdir -p "$RMQ_STORE"
  local pct; pct="$(df -P "$RMQ_STORE" | awk 'NR==2 {sub("%", "", $5); print $5}')"
  (( pct < 80 )) || die "rocketmq: filesystem of $RMQ_STORE is ${pct}% full; the broker rejects writes above 90%"

  rmq_start_namesrv -Xms256m -Xmx256m -Xmn128m

  # Both brokers start at once (each takes 15-25 s), then both are awaited.
  local started_broker=0
  if rmq_launch_broker broker-a "$RMQ_BROKER_PORT" "$RMQ_DIR/broker.conf" "$RMQ_BR_PID" "$RMQ_BR_OUT" "$RMQ_HOME"; then started_broker=1; fi
  local brokers="$HOST:$RMQ_BROKER_PORT" bvars=(SLUICE_ROCKETMQ_BROKER_B= SLUICE_ROCKETMQ_BROKER_B_ADDR=)
  if [[ "$RMQ_BROKER_B" != 0 ]]; then
    mkdir -p "$RMQ_STORE-b"
    if rmq_launch_broker broker-b "$RMQ_BROKER_B_PORT" "$RMQ_DIR/broker-b.conf" "$RMQ_BRB_PID" "$RMQ_BRB_OUT" "$RMQ_HOME_B"; then started_broker=1; fi
    brokers+=" and $HOST:$RMQ_BROKER_B_PORT"
    bvars=(SLUICE_ROCKETMQ_BROKER_B=broker-b SLUICE_ROCKETMQ_BROKER_B_ADDR="$HOST:$RMQ_BROKER_B_PORT")
  fi
  rmq_wait_broker broker-a "$RMQ_BROKER_PORT" "$RMQ_BR_PID" "$RMQ_BR_OUT" "$RMQ_HOME"
  if [[ "$RMQ_BROKER_B" != 0 ]]; then
    rmq_wait_broker broker-b "$RMQ_BROKER_B_PORT" "$RMQ_BRB_PID" "$RMQ_BRB_OUT" "$RMQ_HOME_B"
  fi

  # First start of this broker: prove a topic can be created and a message written.
  if ((started_broker)) && [[ "${SLUICE_ROCKETMQ_PROBE:-1}" != 0 ]]; then
    local tp out; tp="$(now)"
    # On a loaded machine a broker that has just registered may still time
    # out the admin tool's first calls (its route lookup waits 3 s): each
    # step is tried until START_TIMEOUT has passed.
    local deadline=$(( $(date +%s) + START_TIMEOUT )) ok=0
    while :; do
      out="$("$RMQ_ADMIN" updateTopic -c DefaultCluster -t sluice_probe -r 4 -w 4 2>&1)" || true
      if grep -q 'create topic to .* success' <<<"$out"; then ok=1; break; fi
      (( $(date +%s) < deadline )) || break
      sleep 2
    done
    ((ok)) || { echo "$out" >&2; tail_log "$RMQ_HOME/logs/rocketmqlogs/broker.log"; die "rocketmq: updateTopic sluice_probe failed"; }
    ok=0
    while :; do
      out="$("$RMQ_ADMIN" sendMessage -t sluice_probe -p "probe $(date +%s)" -k probe 2>&1)" || true
      if grep -q 'SEND_OK' <<<"$out"; then ok=1; break; fi
      (( $(date +%s) < deadline )) || break
      sleep 2
    done
    ((ok)) || { echo "$out" >&2; tail_log "$RMQ_HOME/logs/rocketmqlogs/broker.log"; die "rocketmq: sendMessage to sluice_probe failed"; }
    log "rocketmq: probe topic created and message sent (SEND_OK) in $(elapsed "$tp")s"
  fi
  env_set SLUICE_ROCKETMQ_NAMESRV="$RMQ_NAMESRV" SLUICE_ROCKETMQ_CLUSTER=DefaultCluster \
    SLUICE_ROCKETMQ_BROKER=broker-a SLUICE_ROCKETMQ_BROKER_ADDR="$HOST:$RMQ_BROKER_PORT" \
    SLUICE_ROCKETMQ_ADMIN="$RMQ_ADMIN" SLUICE_ROCKETMQ_VERSION="$RMQ_USED_VERSION" "${bvars[@]}"
  log "rocketmq: ready (name server $RMQ_NAMESRV, brokers $brokers) in $(elapsed "$t0")s"
}

stop_rocketmq() {
  if ! pid_alive "$RMQ_BR_PID" && ! pid_alive "$RMQ_BRB_PID" && ! pid_alive "$RMQ_NS_PID"; then
    rm -f "$RMQ_BR_PID" "$RMQ_BRB_PID" "$RMQ_NS_PID"; log "rocketmq: not running"; return 0
  fi
  log "rocketmq: stopping brokers, then name server"
  # A clean shutdown joins many service threads (20-30 s): both brokers at once.
  kill_pidfile "$RMQ_BRB_PID" rocketmq-broker-b 90 &
  kill_pidfile "$RMQ_BR_PID" rocketmq-broker 90
  wait
  kill_pidfile "$RMQ_NS_PID" rocketmq-namesrv 20
  log "rocketmq: stopped"
}

status_rocketmq() {
  local s
  if pid_alive "$RMQ_NS_PID"; then s="running  pid $(cat "$RMQ_NS_PID")  $RMQ_NAMESRV"; else s="stopped"; fi
  echo "rmq-ns    $s"
  if pid_alive "$RMQ_BR_PID"; then
    s="running  pid $(cat "$RMQ_BR_PID")  $HOST:$RMQ_BROKER_PORT"
    if [[ -x "$RMQ_ADMIN" ]] && rmq_cluster_ok; then
      s="$s  registered"
    else s="$s  NOT registered"; fi
  else s="stopped"; fi
  echo "rmq-br    $s"
  if pid_alive "$RMQ_BRB_PID"; then
    s="running  pid $(cat "$RMQ_BRB_PID")  $HOST:$RMQ_BROKER_B_PORT"
    if [[ -x "$RMQ_ADMIN" ]] && rmq_cluster_ok broker-b "$RMQ_BROKER_B_PORT"; then
      s="$s  registered"
    else s="$s  NOT registered"; fi
  else s="stopped"; fi
  echo "rmq-br-b  $s"
}

# ------------------------------------------------------- RocketMQ with ACL --
# A separate name server and broker with authentication and authorization on
# (RocketMQ 5.x "ACL 2.0": broker.conf authenticationEnabled/authorizationEnabled
# with the local metadata providers). initAuthenticationUser makes the super
# user at the broker's first start. It reuses the functions above with the
# RMQ_* globals pointed at the ACL instance (each function runs in a subshell).
RMQ_ACL_NAMESRV_PORT="${SLUICE_ROCKETMQ_ACL_NAMESRV_PORT:-17876}"
RMQ_ACL_BROKER_PORT="${SLUICE_ROCKETMQ_ACL_BROKER_PORT:-17911}"   # also port-2 and port+1
# Its store lives under the root, like the main one: a `clean` of another root (scripts/bench.sh runs one) must not delete it under a running broker.
RMQ_ACL_STORE="${SLUICE_ROCKETMQ_ACL_STORE:-$ROOT/rocketmq-acl-store}"
# The super user, made by the broker at its first start (initAuthenticationUser);
# tests make the normal users they need with it. A throwaway credential of a
# throwaway test broker.
RMQ_ACL_USER=sluice-acl
RMQ_ACL_SECRET=sluice-acl-Secret-9d41c7

rmq_acl_globals() { # points the RMQ_* globals at the ACL instance (call in a subshell)
  RMQ_DIR="$ROOT/rocketmq-acl"
  RMQ_HOME="$RMQ_DIR/home"
  RMQ_NS_PID="$RMQ_DIR/namesrv.pid"; RMQ_NS_OUT="$RMQ_DIR/namesrv.out"
  RMQ_BR_PID="$RMQ_DIR/broker.pid"; RMQ_BR_OUT="$RMQ_DIR/broker.out"
  RMQ_ADMIN="$RMQ_DIR/bin/mqadmin"
  RMQ_NAMESRV_PORT="$RMQ_ACL_NAMESRV_PORT"
  RMQ_NAMESRV="$HOST:$RMQ_ACL_NAMESRV_PORT"
  RMQ_BROKER_PORT="$RMQ_ACL_BROKER_PORT"
  RMQ_STORE="$RMQ_ACL_STORE"
  RMQ_BROKER_HEAP="-Xms256m -Xmx256m -Xmn96m -XX:MaxDirectMemorySize=256m"
}

start_rocketmq_acl() (
  rmq_acl_globals
  local t0; t0="$(now)"
  rmq_resolve
  RMQ_SHIM="$(loopback_shim)" && [[ -f "$RMQ_SHIM" ]] || die "rocketmq-acl: no loopback-bind shim"
  mkdir -p "$RMQ_DIR" "$RMQ_HOME/conf" "$RMQ_STORE"
  printf '# generated by scripts/servers.sh\nlistenPort=%s\nbindAddress=%s\nrocketmqHome=%s\n' \
    "$RMQ_NAMESRV_PORT" "$HOST" "$RMQ_HOME" >"$RMQ_DIR/namesrv.conf"
  { rmq_broker_conf broker-acl "$RMQ_BROKER_PORT" "$RMQ_STORE" "$RMQ_HOME"
    printf '%s\n' "authenticationEnabled=true" \
      "authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider" \
      "authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider" \
      "initAuthenticationUser={\"username\":\"$RMQ_ACL_USER\",\"password\":\"$RMQ_ACL_SECRET\"}" \
      "innerClientAuthenticationCredentials={\"accessKey\":\"$RMQ_ACL_USER\",\"secretKey\":\"$RMQ_ACL_SECRET\"}" \
      "authorizationEnabled=true" \
      "authorizationProvider=org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider" \
      "authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider" \
      "authConfigPath=$RMQ_DIR/auth"
  } >"$RMQ_DIR/broker.conf"
  chmod 600 "$RMQ_DIR/broker.conf"
  # The admin tool signs its requests with conf/tools.yml under rocketmq.home.dir.
  printf 'accessKey: %s\nsecretKey: %s\n' "$RMQ_ACL_USER" "$RMQ_ACL_SECRET" >"$RMQ_HOME/conf/tools.yml"
  chmod 600 "$RMQ_HOME/conf/tools.yml"
  rmq_write_admin
  rmq_start_namesrv -Xms96m -Xmx96m -Xmn48m
  rmq_launch_broker broker-acl "$RMQ_BROKER_PORT" "$RMQ_DIR/broker.conf" "$RMQ_BR_PID" "$RMQ_BR_OUT" "$RMQ_HOME" || true
  rmq_wait_broker broker-acl "$RMQ_BROKER_PORT" "$RMQ_BR_PID" "$RMQ_BR_OUT" "$RMQ_HOME"
  env_set SLUICE_ROCKETMQ_ACL_NAMESRV="$RMQ_NAMESRV" SLUICE_ROCKETMQ_ACL_BROKER_ADDR="$HOST:$RMQ_BROKER_PORT" \
    SLUICE_ROCKETMQ_ACL_ACCESS_KEY="$RMQ_ACL_USER" SLUICE_ROCKETMQ_ACL_SECRET_KEY="$RMQ_ACL_SECRET" \
    SLUICE_ROCKETMQ_ACL_ADMIN="$RMQ_ADMIN"
  log "rocketmq-acl: ready (name server $RMQ_NAMESRV, broker $HOST:$RMQ_BROKER_PORT, authentication and authorization on) in $(elapsed "$t0")s"
)

# rmq_single_stop NAME : stops the broker, then the name server, of a
# one-broker instance whose globals are set (rmq_acl_globals, rmq_b_globals).
rmq_single_stop() {
  if ! pid_alive "$RMQ_BR_PID" && ! pid_alive "$RMQ_NS_PID"; then
    rm -f "$RMQ_BR_PID" "$RMQ_NS_PID"; log "$1: not running"; return 0
  fi
  log "$1: stopping broker, then name server"
  kill_pidfile "$RMQ_BR_PID" "$1-broker" 90
  kill_pidfile "$RMQ_NS_PID" "$1-namesrv" 20
  log "$1: stopped"
}

# rmq_single_status LABEL BROKER : status lines of such an instance.
rmq_single_status() {
  [[ -f "$RMQ_NS_PID" || -f "$RMQ_BR_PID" ]] || return 0   # never started under this root
  local s
  if pid_alive "$RMQ_NS_PID"; then s="running  pid $(cat "$RMQ_NS_PID")  $RMQ_NAMESRV"; else s="stopped"; fi
  printf '%-9s %s\n' "$1-ns" "$s"
  if pid_alive "$RMQ_BR_PID"; then
    s="running  pid $(cat "$RMQ_BR_PID")  $HOST:$RMQ_BROKER_PORT"
    if [[ -x "$RMQ_ADMIN" ]] && rmq_cluster_ok "$2" "$RMQ_BROKER_PORT"; then s="$s  registered"
    else s="$s  NOT registered"; fi
  else s="stopped"; fi
  printf '%-9s %s\n' "$1-br" "$s"
}

stop_rocketmq_acl() ( rmq_acl_globals; rmq_single_stop rocketmq-acl )
status_rocketmq_acl() ( rmq_acl_globals; rmq_single_status acl broker-acl )

# ---------------------------------------------- a second RocketMQ cluster --
# An independent cluster (own name server, one broker, own store), the
# replicator's target. It reuses the functions above with the RMQ_* globals
# pointed at it (each function runs in a subshell), as rocketmq-acl does.
RMQ_B_NAMESRV_PORT="${SLUICE_ROCKETMQ_B_NAMESRV_PORT:-19976}"
RMQ_B_BROKER_PORT="${SLUICE_ROCKETMQ_B_BROKER_PORT:-21911}"   # also port-2 and port+1
RMQ_B_STORE="${SLUICE_ROCKETMQ_B_STORE:-$ROOT/rocketmq-b-store}"

rmq_b_globals() { # points the RMQ_* globals at the second cluster (call in a subshell)
  RMQ_DIR="$ROOT/rocketmq-cluster-b"
  RMQ_HOME="$RMQ_DIR/home"
  RMQ_NS_PID="$RMQ_DIR/namesrv.pid"; RMQ_NS_OUT="$RMQ_DIR/namesrv.out"
  RMQ_BR_PID="$RMQ_DIR/broker.pid"; RMQ_BR_OUT="$RMQ_DIR/broker.out"
  RMQ_ADMIN="$RMQ_DIR/bin/mqadmin"
  RMQ_NAMESRV_PORT="$RMQ_B_NAMESRV_PORT"
  RMQ_NAMESRV="$HOST:$RMQ_B_NAMESRV_PORT"
  RMQ_BROKER_PORT="$RMQ_B_BROKER_PORT"
  RMQ_STORE="$RMQ_B_STORE"
  RMQ_BROKER_HEAP="-Xms256m -Xmx256m -Xmn96m -XX:MaxDirectMemorySize=256m"
}

start_rocketmq_b() (
  rmq_b_globals
  local t0; t0="$(now)"
  rmq_resolve
  RMQ_SHIM="$(loopback_shim)" && [[ -f "$RMQ_SHIM" ]] || die "rocketmq-b: no loopback-bind shim"
  mkdir -p "$RMQ_DIR" "$RMQ_HOME" "$RMQ_STORE"
  printf '# generated by scripts/servers.sh\nlistenPort=%s\nbindAddress=%s\nrocketmqHome=%s\n' \
    "$RMQ_NAMESRV_PORT" "$HOST" "$RMQ_HOME" >"$RMQ_DIR/namesrv.conf"
  rmq_broker_conf broker-b1 "$RMQ_BROKER_PORT" "$RMQ_STORE" "$RMQ_HOME" |
    sed 's/^brokerClusterName=.*/brokerClusterName=ClusterB/' >"$RMQ_DIR/broker.conf"
  rmq_write_admin
  rmq_start_namesrv -Xms96m -Xmx96m -Xmn48m
  rmq_launch_broker broker-b1 "$RMQ_BROKER_PORT" "$RMQ_DIR/broker.conf" "$RMQ_BR_PID" "$RMQ_BR_OUT" "$RMQ_HOME" || true
  rmq_wait_broker broker-b1 "$RMQ_BROKER_PORT" "$RMQ_BR_PID" "$RMQ_BR_OUT" "$RMQ_HOME"
  env_set SLUICE_ROCKETMQ_B_NAMESRV="$RMQ_NAMESRV" SLUICE_ROCKETMQ_B_CLUSTER=ClusterB \
    SLUICE_ROCKETMQ_B_BROKER_ADDR="$HOST:$RMQ_BROKER_PORT" SLUICE_ROCKETMQ_B_ADMIN="$RMQ_ADMIN"
  log "rocketmq-b: ready (name server $RMQ_NAMESRV, broker $HOST:$RMQ_BROKER_PORT, cluster ClusterB) in $(elapsed "$t0")s"
)

stop_rocketmq_b() ( rmq_b_globals; rmq_single_stop rocketmq-b )
status_rocketmq_b() ( rmq_b_globals; rmq_single_status b broker-b1 )

# ------------------------------------------------------------------- Kafka --
# A single-node Apache Kafka 4.x in KRaft mode (one process is broker and
# controller), from the org.apache.kafka:kafka_2.13 jars and their closure,
# resolved with maven into the cache like RocketMQ's. Broker on KAFKA_PORT,
# controller on KAFKA_PORT+1, both on 127.0.0.1 only.
KAFKA_PORT="${SLUICE_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT=$((KAFKA_PORT + 1))
KAFKA_VERSION="${SLUICE_KAFKA_VERSION:-4.4.0}"
KAFKA_DIR="$ROOT/kafka"
KAFKA_PID="$KAFKA_DIR/kafka.pid"
KAFKA_OUT="$KAFKA_DIR/kafka.out"
KAFKA_BROKERS="$HOST:$KAFKA_PORT"
KAFKA_SSL_PORT=$((KAFKA_PORT + 2)) KAFKA_SASL_SSL_PORT=$((KAFKA_PORT + 3)) KAFKA_SASL_PORT=$((KAFKA_PORT + 4))
KAFKA_MTLS_PORT=$((KAFKA_PORT + 5))
KAFKA_SASL_USER=sluice
KAFKA_SASL_SECRET=sluice-kafka-Secret-5c08e1

kafka_libdir() { echo "$CACHE/kafka-$1/lib"; }

kafka_fetch() { # kafka_fetch VERSION : resolves the jars into the cache (reused when complete)
  # The broker logs through slf4j 2 to log4j2, as kafka-server-start.sh's classpath has it
  # (without slf4j-api 2, maven's nearest version is a 1.7 that binds to nothing).
  maven_fetch kafka "$(kafka_libdir "$1")" "kafka_2.13-*.jar" "org.apache.kafka:kafka_2.13:$1" \
    org.slf4j:slf4j-api:2.0.17 org.apache.logging.log4j:log4j-slf4j2-impl:2.24.3 org.apache.logging.log4j:log4j-core:2.24.3
}

# Kafka Connect, for the interop tests (integration/kafkaconnect_test.go): a
# worker's jars (org.apache.kafka:connect-runtime, resolved like the broker's)
# and, under one plugin path, Debezium's JDBC sink and MySQL connector as
# Debezium publishes them for Connect (the "plugin" tar.gz of each, one
# folder per plugin: Connect loads each in a class loader of its own; the
# JDBC sink's pom alone does not resolve, it names a hibernate-agroal under
# a group that has no such version). Fetched with the broker, once;
# servers.env gets SLUICE_KAFKA_CONNECT_LIB (the worker's class path folder)
# and SLUICE_KAFKA_CONNECT_PLUGINS (its plugin.path).
# The JDBC sink is taken at 3.6.0.Final: 3.6.1.Final of it is not published
# (the MySQL connector's is).
KAFKA_CONNECT_JDBC="${SLUICE_KAFKA_CONNECT_JDBC:-3.6.0.Final}"
KAFKA_CONNECT_DEBEZIUM="${SLUICE_KAFKA_CONNECT_DEBEZIUM:-3.6.1.Final}"

# maven_plugin_fetch DIR GROUP:ARTIFACT:VERSION : unpacks the artifact's Kafka
# Connect plugin archive (classifier plugin, tar.gz; its one folder is named
# after the artifact) into DIR, once.
maven_plugin_fetch() {
  local dir="$1" gav="$2" art tmp t0
  IFS=: read -r _ art _ <<<"$gav"
  [[ -f "$dir/$art/.complete" ]] && return 0
  command -v mvn >/dev/null || ensure_apt maven
  t0="$(now)"
  log "kafka-connect: fetching the plugin $gav with maven into $dir"
  mkdir -p "$dir"
  tmp="$(mktemp -d "$dir/.fetch-$art.XXXXXX")"
  if ! mvn -B -q dependency:copy -Dartifact="$gav:tar.gz:plugin" -DoutputDirectory="$tmp" >"$tmp/mvn.log" 2>&1 ||
    ! tar xzf "$tmp/$art"-*-plugin.tar.gz -C "$tmp" || [[ ! -d "$tmp/$art" ]]; then
    tail_log "$tmp/mvn.log"
    rm -rf "$tmp"
    return 1
  fi
  touch "$tmp/$art/.complete"
  rm -rf "${dir:?}/$art"
  mv "$tmp/$art" "$dir/$art"
  rm -rf "$tmp"
  log "kafka-connect: plugin $art ($(du -sh "$dir/$art" | cut -f1)) fetched in $(elapsed "$t0")s"
}

# kafka_connect_fetch KAFKA_VERSION : sets KAFKA_CONNECT_LIB and KAFKA_CONNECT_PLUGINS
# (the worker's plugin.path: the two plugin folders' parents, comma-separated)
kafka_connect_fetch() {
  local jdbc="$CACHE/kafka-connect-plugins/jdbc-$KAFKA_CONNECT_JDBC" mysql="$CACHE/kafka-connect-plugins/mysql-$KAFKA_CONNECT_DEBEZIUM"
  KAFKA_CONNECT_LIB="$CACHE/kafka-connect-$1/lib"
  KAFKA_CONNECT_PLUGINS="$jdbc,$mysql"
  maven_fetch kafka-connect "$KAFKA_CONNECT_LIB" "connect-runtime-*.jar connect-json-*.jar" \
    "org.apache.kafka:connect-runtime:$1" "org.apache.kafka:connect-json:$1" \
    org.slf4j:slf4j-api:2.0.17 org.apache.logging.log4j:log4j-slf4j2-impl:2.24.3 org.apache.logging.log4j:log4j-core:2.24.3 &&
    maven_plugin_fetch "$jdbc" "io.debezium:debezium-connector-jdbc:$KAFKA_CONNECT_JDBC" &&
    maven_plugin_fetch "$mysql" "io.debezium:debezium-connector-mysql:$KAFKA_CONNECT_DEBEZIUM"
}

kafka_java() { # kafka_java JVM_OPTS... -- MAINCLASS ARGS...
  command -v java >/dev/null || ensure_apt openjdk-17-jre-headless
  exec java -XX:+UseSerialGC -Djava.awt.headless=true -Djava.security.egd=file:/dev/./urandom \
    -Dlog4j2.configurationFile="$KAFKA_DIR/log4j2.properties" -Dkafka.logs.dir="$KAFKA_DIR/logs" \
    -cp "$KAFKA_LIB/*" "$@"
}

kafka_write_conf() {
  mkdir -p "$KAFKA_DIR/logs"
  local l m jaas="" listeners="SSL://$HOST:$KAFKA_SSL_PORT,SASL_SSL://$HOST:$KAFKA_SASL_SSL_PORT,SASL_PLAINTEXT://$HOST:$KAFKA_SASL_PORT,MTLS://$HOST:$KAFKA_MTLS_PORT"
  for l in sasl_ssl sasl_plaintext; do
    jaas+="listener.name.$l.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$KAFKA_SASL_USER=\"$KAFKA_SASL_SECRET\";"$'\n'
    for m in scram-sha-256 scram-sha-512; do
      jaas+="listener.name.$l.$m.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"$'\n'
    done
  done
  (umask 077 && cat "$TLS_DIR/server.key" "$TLS_DIR/server.pem" >"$KAFKA_DIR/keystore.pem")
  # Small segments and one partition replica: a test broker that writes little.
  cat >"$KAFKA_DIR/server.properties" <<EOF
# generated by scripts/servers.sh
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT,$listeners
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT,$listeners
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,MTLS:SSL
# TLS with the throwaway CA's server certificate (PEM: key and chain in one file)
ssl.keystore.type=PEM
ssl.keystore.location=$KAFKA_DIR/keystore.pem
ssl.client.auth=none
# MTLS: SSL that requires a client certificate signed by the throwaway CA
listener.name.mtls.ssl.client.auth=required
listener.name.mtls.ssl.truststore.type=PEM
listener.name.mtls.ssl.truststore.location=$TLS_DIR/ca.pem
# SASL: PLAIN's user in its JAAS entry, SCRAM's in the metadata (StorageTool format --add-scram)
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
$jaas
log.dirs=$KAFKA_DIR/data
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.segment.bytes=16777216
log.retention.hours=24
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
EOF
  cat >"$KAFKA_DIR/log4j2.properties" <<EOF
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
}

kafka_ready() { # kafka_ready OFFSET : the broker listens and logged its start (after it was
  # unfenced by the controller) past byte OFFSET of its output
  # grep -c reads to the end: grep -q would stop early and tail's SIGPIPE fail the pipe
  port_open "$KAFKA_PORT" && (( $(tail -c +"$(($1 + 1))" "$KAFKA_OUT" 2>/dev/null | grep -c 'Kafka Server started') > 0 ))
}

start_kafka() {
  local t0 ok=0 from=0; t0="$(now)"
  kafka_fetch "$KAFKA_VERSION" || die "kafka: could not resolve kafka_2.13 $KAFKA_VERSION with maven"
  KAFKA_LIB="$(kafka_libdir "$KAFKA_VERSION")"
  if ! pid_alive "$KAFKA_PID"; then
    local p
    for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
      port_open "$p" && die "kafka: port $p is already taken"
    done
    for p in "$KAFKA_SSL_PORT" "$KAFKA_SASL_SSL_PORT" "$KAFKA_SASL_PORT" "$KAFKA_MTLS_PORT"; do
      port_open "$p" && die "kafka: port $p (a TLS or SASL listener) is already taken"
    done
    ensure_tls
    kafka_write_conf
    # A storage formatted before the SASL listeners has no SCRAM users (they
    # are written only by format): a throwaway broker's data is formatted anew.
    if [[ -f "$KAFKA_DIR/data/meta.properties" && ! -f "$KAFKA_DIR/scram-users" ]]; then
      log "kafka: the storage predates the SCRAM users: formatting it anew"
      rm -rf "$KAFKA_DIR/data"
    fi
    if [[ ! -f "$KAFKA_DIR/data/meta.properties" ]]; then
      local id; id="$( (kafka_java kafka.tools.StorageTool random-uuid) 2>>"$KAFKA_OUT")" || die "kafka: random-uuid failed"
      (kafka_java kafka.tools.StorageTool format --standalone -t "$id" -c "$KAFKA_DIR/server.properties" \
        --add-scram "SCRAM-SHA-256=[name=$KAFKA_SASL_USER,password=$KAFKA_SASL_SECRET]" \
        --add-scram "SCRAM-SHA-512=[name=$KAFKA_SASL_USER,password=$KAFKA_SASL_SECRET]") >>"$KAFKA_OUT" 2>&1 \
        || { tail_log "$KAFKA_OUT"; die "kafka: formatting the storage failed"; }
      touch "$KAFKA_DIR/scram-users"
    fi
    from="$(stat -c %s "$KAFKA_OUT" 2>/dev/null || echo 0)"
    log "kafka: starting on $KAFKA_BROKERS (controller $HOST:$KAFKA_CONTROLLER_PORT)"
    # shellcheck disable=SC2086 # SLUICE_KAFKA_HEAP is a list of JVM options
    (kafka_java ${SLUICE_KAFKA_HEAP:--Xms256m -Xmx256m} kafka.Kafka "$KAFKA_DIR/server.properties") \
      >>"$KAFKA_OUT" 2>&1 </dev/null 9>&- &
    echo $! >"$KAFKA_PID"
  fi
  local deadline=$(( $(date +%s) + START_TIMEOUT ))
  while (( $(date +%s) < deadline )); do
    pid_alive "$KAFKA_PID" || break
    if kafka_ready "$from"; then ok=1; break; fi
    sleep 0.5
  done
  ((ok)) || { tail_log "$KAFKA_OUT"; die "kafka: broker not ready on $KAFKA_BROKERS"; }
  # A broker started by an older servers.sh has no mutual-TLS listener: its
  # tests then fail (in CI) or skip on the missing SLUICE_KAFKA_MTLS_BROKERS.
  local mtls=SLUICE_KAFKA_MTLS_BROKERS=
  if port_open "$KAFKA_MTLS_PORT"; then
    mtls+="$HOST:$KAFKA_MTLS_PORT"
  else
    log "kafka: no mutual-TLS listener on port $KAFKA_MTLS_PORT (a broker started by an older servers.sh): stop and start kafka to get it"
  fi
  kafka_connect_fetch "$KAFKA_VERSION" || die "kafka: could not fetch Kafka Connect $KAFKA_VERSION and Debezium's plugins with maven"
  env_set SLUICE_KAFKA_BROKERS="$KAFKA_BROKERS" SLUICE_KAFKA_VERSION="$KAFKA_VERSION" \
    SLUICE_KAFKA_SSL_BROKERS="$HOST:$KAFKA_SSL_PORT" SLUICE_KAFKA_SASL_SSL_BROKERS="$HOST:$KAFKA_SASL_SSL_PORT" \
    SLUICE_KAFKA_SASL_BROKERS="$HOST:$KAFKA_SASL_PORT" SLUICE_KAFKA_CA="$TLS_DIR/ca.pem" "$mtls" \
    SLUICE_KAFKA_CLIENT_CERT="$TLS_DIR/client.pem" SLUICE_KAFKA_CLIENT_KEY="$TLS_DIR/client.key" \
    SLUICE_KAFKA_SASL_USER="$KAFKA_SASL_USER" SLUICE_KAFKA_SASL_PASSWORD="$KAFKA_SASL_SECRET" \
    SLUICE_KAFKA_CONNECT_LIB="$KAFKA_CONNECT_LIB" SLUICE_KAFKA_CONNECT_PLUGINS="$KAFKA_CONNECT_PLUGINS"
  log "kafka: ready ($KAFKA_BROKERS) in $(elapsed "$t0")s"
}

stop_kafka() {
  if ! pid_alive "$KAFKA_PID"; then rm -f "$KAFKA_PID"; log "kafka: not running"; return 0; fi
  log "kafka: stopping"
  kill_pidfile "$KAFKA_PID" kafka 60
  log "kafka: stopped"
}

status_kafka() {
  local s
  if pid_alive "$KAFKA_PID"; then s="running  pid $(cat "$KAFKA_PID")  $KAFKA_BROKERS"; else s="stopped"; fi
  echo "kafka     $s"
}

# -------------------------------------------------------------------- main --
targets() { # expands "all"/empty into the list of servers, validates names
  local t out=()
  (($#)) || set -- all
  for t in "$@"; do
    case "$t" in
      all) out+=(mariadb mysql postgres rocketmq kafka) ;;
      mariadb) out+=(mariadb) ;;
      mysql) out+=(mysql) ;;
      mysql-scratch) out+=(mysql_scratch) ;;
      postgres|postgresql|pg) out+=(postgres) ;;
      rocketmq|rmq) out+=(rocketmq) ;;
      rocketmq-acl|rmq-acl) out+=(rocketmq_acl) ;;
      rocketmq-b|rmq-b) out+=(rocketmq_b) ;;
      kafka) out+=(kafka) ;;
      *) die "unknown server '$t' (mariadb|mysql|mysql-scratch|postgres|rocketmq|rocketmq-acl|rocketmq-b|kafka|all)" ;;
    esac
  done
  printf '%s\n' "${out[@]}" | awk '!seen[$0]++'
}

with_lock() { # serialise concurrent start/stop calls on the same root
  mkdir -p "$ROOT"
  # fd 9 is closed for every server process started below (9>&-): a server must not keep the lock.
  exec 9>"$ROOT/.servers.lock"
  if ! flock -w 600 9; then die "could not lock $ROOT/.servers.lock (another servers.sh start/stop is running?)"; fi
}

usage() { sed -n '2,29p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

cmd="${1:-}"; shift || true
case "$cmd" in
  start)
    with_lock
    t_all="$(now)"
    for s in $(targets "$@"); do "start_$s"; done
    log "all requested servers ready in $(elapsed "$t_all")s; env file: $ENV_FILE"
    ;;
  stop)
    with_lock
    for s in $(targets "$@" | tac); do "stop_$s"; done
    ;;
  status)
    status_mariadb; status_mysql; status_postgres; status_rocketmq; status_rocketmq_acl; status_rocketmq_b; status_kafka
    [[ -f "$ENV_FILE" ]] && echo "env file: $ENV_FILE"
    ;;
  env) echo "$ENV_FILE" ;;
  mysql-client) # mysql-client ARGS... : the unpacked MySQL client (e.g. -h127.0.0.1 -P16306 -uroot -proot)
    my_run usr/bin/mysql --no-defaults "$@" ;;
  clean)
    with_lock
    for s in kafka rocketmq_b rocketmq_acl rocketmq postgres mysql mariadb; do "stop_$s"; done
    # The ACL store's default path is not under the root (it names only the
    # ACL broker's port): remove it only when this root ran that instance,
    # never the store of another root's ACL broker on the same port.
    acl_store=""
    [[ -d "$ROOT/rocketmq-acl" ]] && acl_store="$RMQ_ACL_STORE"
    rm -rf "$RMQ_STORE" "$RMQ_STORE-b" "$RMQ_B_STORE" ${acl_store:+"$acl_store"} "$ROOT"
    log "removed $ROOT, $RMQ_STORE, $RMQ_STORE-b${acl_store:+ and $acl_store}"
    ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
