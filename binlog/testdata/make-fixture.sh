#!/bin/sh
# Regenerates testdata/mariadb-10.11.binlog from fixture.sql on a throwaway
# MariaDB 10.11 (log-bin, binlog-format=ROW, binlog-row-metadata=FULL,
# time_zone irrelevant: the fixture sets it). Usage:
#   make-fixture.sh HOST PORT USER PASSWORD
# The fixture database fx is dropped first; a new binlog file is started so
# that the fixture file holds exactly these statements.
set -eu
H=$1 P=$2 U=$3 W=$4
dir=$(dirname "$0")
m() { mariadb -h"$H" -P"$P" -u"$U" -p"$W" "$@"; }
m -e "DROP DATABASE IF EXISTS fx; FLUSH BINARY LOGS"
file=$(m -N -e "SHOW MASTER STATUS" | cut -f1)
m --binary-mode < "$dir/fixture.sql"
m -e "FLUSH BINARY LOGS; DROP DATABASE fx"
tmp=$(mktemp -d)
(cd "$tmp" && mariadb-binlog --read-from-remote-server -h"$H" -P"$P" -u"$U" -p"$W" --raw "$file")
cp "$tmp/$file" "$dir/mariadb-10.11.binlog"
rm -r "$tmp"
