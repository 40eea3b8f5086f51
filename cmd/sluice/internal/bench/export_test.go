package bench

import (
	"strconv"
	"time"
)

// For the external tests (package bench_test): they build sluice with
// app.Build, and package app imports this one.
var (
	EnvFromOS   = benchEnvFromOS
	RunBench    = runBench
	PrintReport = printBenchReport
	Verify      = benchVerify
)

// Tables the bench loads.
const (
	DB    = benchDB
	Table = benchTable
)

// SmallOptions are the options of a small run on the embedded transport.
func SmallOptions(build BuildFunc) benchOpts {
	return benchOpts{rows: 3000, txn: 50, updates: 0.5, queues: 2, transport: "embedded", liveRates: []int{500}, liveFor: time.Second,
		incrRows: 10000, incrRate: 500, build: build}
}

// IncrementalRows is --incremental-rows.
func (o benchOpts) IncrementalRows() int { return o.incrRows }

// Rows is --rows.
func (o benchOpts) Rows() int { return o.rows }

// DSNs are the source's (MariaDB, its root user) and the target's.
func (e benchEnv) DSNs() (source, target string) {
	return e.user + ":" + e.password + "@tcp(" + e.host + ":" + strconv.Itoa(e.port) + ")/", e.pgDSN
}
