// Package integration holds end-to-end tests that run sluice against real
// servers: MariaDB or MySQL as the source, PostgreSQL as the sink, Apache
// RocketMQ as the transport.
//
// The servers come from the env file that scripts/servers.sh writes
// (SLUICE_SERVERS_ENV, default /tmp/sluice-servers/servers.env) or from the
// environment. Without them, where a Docker daemon is reachable, MySQL 8.4
// and PostgreSQL are started with testcontainers. With CI=true a missing
// server fails the run; elsewhere the test is skipped with a message that
// says how to start the servers.
package integration
