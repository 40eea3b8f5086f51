// Package bench is the harness of `sluice bench`: it loads the source,
// measures the raw baselines (go-mysql reading the binlog, lib/pq writing
// the rows, the plain RocketMQ or Kafka client's round trip), sluice catching up and
// under a steady load, and compares source and target. The command's entry
// (cmd/sluice/app) hands it the function that builds a pipeline as `sluice
// run` does; nothing of a pipeline's own code imports it.
package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/lib/pq"
	"gopkg.in/yaml.v3"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/rocketmq/rawbench"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// benchDB and benchTable are what sluice bench loads; the database is
// dropped and created again on every run.
const (
	benchDB    = "sluice_bench"
	benchTable = "events"
)

type benchOpts struct {
	rows, txn, queues int
	updates           float64 // updated rows as a fraction of rows
	transport         string
	format            string // rocketmq message format
	liveRates         []int
	liveFor           time.Duration
	debezium          string // folder of scripts/debezium-fixture; "" skips Debezium
	jsonOut           string
	cpuProfile        string // CPU profile of the catch-up phase
	heapProfile       string // heap profile taken when half the catch-up is applied
	tracePath         string // execution trace of the catch-up phase
	procs             string // name=pidfile,... of the servers, for CPU per process
	timeout           time.Duration
	warmUp            int // rocketmq, kafka: messages of the brokers' warm-up before measuring
	incrRows          int // rows of the incremental snapshot phase's table; 0 skips it
	incrRate          int // rows/s streamed during that phase
	incrChunk         int // the source's snapshot_chunk in that phase; 0: the default
	build             BuildFunc
}

// benchEnv is where the servers are: the variables of scripts/servers.sh's
// env file.
type benchEnv struct {
	host, user, password, cdcUser, cdcPassword, flavor, pgDSN, nameServer string
	kafkaBrokers                                                          []string
	port                                                                  int
}

func benchEnvFromOS() (benchEnv, error) {
	e := benchEnv{host: os.Getenv("SLUICE_MYSQL_HOST"), user: os.Getenv("SLUICE_MYSQL_USER"), password: os.Getenv("SLUICE_MYSQL_PASSWORD"),
		cdcUser: os.Getenv("SLUICE_MYSQL_CDC_USER"), cdcPassword: os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"), flavor: os.Getenv("SLUICE_MYSQL_FLAVOR"),
		pgDSN: os.Getenv("SLUICE_PG_DSN"), nameServer: os.Getenv("SLUICE_ROCKETMQ_NAMESRV")}
	e.port, _ = strconv.Atoi(os.Getenv("SLUICE_MYSQL_PORT"))
	if v := os.Getenv("SLUICE_KAFKA_BROKERS"); v != "" {
		e.kafkaBrokers = strings.Split(v, ",")
	}
	if e.host == "" || e.port == 0 || e.user == "" || e.cdcUser == "" || e.pgDSN == "" {
		return e, fmt.Errorf("sluice bench reads the servers from SLUICE_MYSQL_HOST, SLUICE_MYSQL_PORT, SLUICE_MYSQL_USER, SLUICE_MYSQL_CDC_USER and SLUICE_PG_DSN (and their passwords): source the env file of scripts/servers.sh, or run scripts/bench.sh: %w", runtime.ErrConfig)
	}
	if e.flavor == "" {
		e.flavor = binlog.FlavorMariaDB
	}
	return e, nil
}

// benchReport is what sluice bench prints, and writes as JSON with --json.
type benchReport struct {
	Rows        int     `json:"rows"`
	Updates     int     `json:"updates"`
	Events      int     `json:"events"`
	TxnRows     int     `json:"txn_rows"`
	Transport   string  `json:"transport"`
	Format      string  `json:"format,omitempty"` // rocketmq message format
	Queues      int     `json:"queues"`
	LoadSeconds float64 `json:"load_seconds"`

	RawSourceSeconds float64 `json:"raw_source_seconds"` // go-mysql reading and decoding the same events
	RawTargetSeconds float64 `json:"raw_target_seconds"` // lib/pq COPY and COPY merge of the same rows
	// RawBrokerSeconds: the plain RocketMQ client sending the messages
	// sluice sends and an orderly consumer reading them back, or the plain
	// franz-go client sending the Kafka records sluice sends and another
	// reading them back (rocketmq and kafka only).
	RawBrokerSeconds float64 `json:"raw_broker_seconds,omitempty"`
	RawBrokerBytes   int64   `json:"raw_broker_bytes,omitempty"` // bodies and properties (Kafka: keys, values, headers)
	// RawBrokerSends and SluiceSends: the send calls and messages of the
	// raw round trip and of sluice's catch-up (rocketmq only).
	RawBrokerSends rocketmq.SendStats `json:"raw_broker_sends,omitzero"`
	RawBrokerTries []float64          `json:"raw_broker_tries_seconds,omitempty"` // each round trip's; the fastest counts
	// RawAtOnceSeconds: the raw sides above run at the same time on this
	// machine (source, target and, over a broker, the broker round trip),
	// until the last is done; each one's own time beside it. A pipeline
	// does at least their work, so on a shared machine its rate is at most
	// Events/RawAtOnceSeconds.
	RawAtOnceSeconds       float64 `json:"raw_at_once_seconds"`
	RawAtOnceSourceSeconds float64 `json:"raw_at_once_source_seconds"`
	RawAtOnceTargetSeconds float64 `json:"raw_at_once_target_seconds"`
	RawAtOnceBrokerSeconds float64 `json:"raw_at_once_broker_seconds,omitempty"`
	// WarmUpSettleSeconds: how long the brokers took after the warm-up to
	// go quiet (their JIT compilers done), before sluice's phase.
	WarmUpSettleSeconds float64            `json:"warm_up_settle_seconds,omitempty"`
	SluiceSends         rocketmq.SendStats `json:"sluice_sends,omitzero"`
	SluiceSeconds       float64            `json:"sluice_seconds"` // end to end, catching up on the loaded binlog
	SluicePeakRSSMiB    float64            `json:"sluice_peak_rss_mib"`
	SluicePeakHeap      float64            `json:"sluice_peak_heap_mib"`
	SluiceBatches       int64              `json:"sluice_sink_batches"`      // sink transactions while catching up
	SluiceSinkBusy      float64            `json:"sluice_sink_busy_seconds"` // summed over queues
	// SluiceFirstHandled: from the catch-up's start to the transport's first
	// handler call (over RocketMQ, the consumer started before the clock).
	SluiceFirstHandled float64 `json:"sluice_first_handled_seconds"`

	SourceJSONSeconds float64         `json:"source_json_seconds"` // sluice's source and JSON converter alone
	Debezium          *debeziumResult `json:"debezium,omitempty"`

	LiveRows  int                `json:"live_rows,omitempty"` // of the first lag phase
	LiveRate  int                `json:"live_rate,omitempty"`
	LagMillis map[string]float64 `json:"lag_ms,omitempty"` // p50, p95, p99, max
	Live      []liveResult       `json:"live,omitempty"`   // every lag phase, with its stages
	// Incremental is the incremental snapshot phase (--incremental-rows)
	Incremental *incrementalResult `json:"incremental,omitempty"`

	// CPU is, per phase, the CPU seconds per million events of each
	// process: "bench" is this process (sluice itself in the catch-up, the
	// raw client in a raw phase), the others the servers of --procs with
	// their children.
	CPU      map[string]map[string]float64 `json:"cpu_s_per_m_events,omitempty"`
	cpuNames []string

	Verified string `json:"verified"` // what was compared between source and target
}

type debeziumResult struct {
	Events          int     `json:"events"`
	Expected        int     `json:"expected"`
	SecondsFirstTo  float64 `json:"seconds_first_to_last"`
	SecondsStartTo  float64 `json:"seconds_start_to_last"`
	EventsPerSecond float64 `json:"events_per_second"`
	PeakRSSKiB      float64 `json:"peak_rss_kib"`
}

// BuildFunc builds the pipeline a config describes, as `sluice run` builds
// it (the command's app.Build); the bench runs sluice through it.
type BuildFunc func(ctx context.Context, cfg *plugin.Config, log *slog.Logger) (*engine.Pipeline, error)

// Command is `sluice bench`: its flags, defined on a flag set by NewCommand,
// and Run.
type Command struct {
	o        benchOpts
	liveRate *string
}

// NewCommand defines the flags of `sluice bench` on fs; parse fs, then Run.
func NewCommand(fs *flag.FlagSet) *Command {
	c := &Command{}
	o := &c.o
	fs.IntVar(&o.rows, "rows", 200000, "rows inserted into the source table")
	fs.Float64Var(&o.updates, "updates", 0.5, "rows then updated, as a fraction of --rows")
	fs.IntVar(&o.txn, "txn", 100, "rows per source transaction")
	fs.StringVar(&o.transport, "transport", "embedded", "embedded, rocketmq or kafka (kafka reads the broker from SLUICE_KAFKA_BROKERS)")
	fs.IntVar(&o.queues, "queues", 4, "queues of the transport (kafka: partitions of the topic)")
	fs.StringVar(&o.format, "format", "", "message format, default the transport's: rocketmq compact (schemas by reference, its default), json (schema in every message) or packed (compact records, several a message); kafka json (its default) or compact")
	c.liveRate = fs.String("live-rate", "2000", "rows/s written while measuring lag, or several separated by commas, one lag phase each (0 skips the lag phase)")
	fs.DurationVar(&o.liveFor, "live-for", 10*time.Second, "how long each lag phase writes")
	fs.StringVar(&o.debezium, "debezium", "", "folder of scripts/debezium-fixture: also run Debezium on the same binlog (fair only on a fresh server)")
	fs.StringVar(&o.jsonOut, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of sluice catching up to this file")
	fs.StringVar(&o.heapProfile, "heapprofile", "", "write a heap profile (live objects) of sluice to this file when half the catch-up is applied")
	fs.StringVar(&o.tracePath, "trace", "", "write an execution trace (go tool trace) of sluice catching up to this file")
	fs.StringVar(&o.procs, "procs", "", "name=pidfile,... of the servers (scripts/bench.sh sets it): report their CPU seconds per million events")
	fs.IntVar(&o.warmUp, "warm-up", 1200000, "rocketmq and kafka: send and read back this many messages before measuring, so that no phase meets cold brokers (rocketmq: the load's, in rounds: the raw client one message a send, sluice's publisher and subscriber at full speed, then 50,000 at 10,000 a second; kafka: raw round trips of the load's records; a topic of their own per round; 0 skips)")
	fs.IntVar(&o.incrRows, "incremental-rows", 0, "after the lag phases, snapshot incrementally a second table of this many rows while --incremental-rate rows/s stream, and report the stream's lag during the snapshot against its lag for --live-for without it (0 skips)")
	fs.IntVar(&o.incrRate, "incremental-rate", 5000, "rows/s streamed during the incremental snapshot phase and its baseline")
	fs.IntVar(&o.incrChunk, "incremental-chunk", 0, "the source's snapshot_chunk (rows a chunk) with --incremental-rows (0: its default)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	return c
}

// Run runs the benchmark with the parsed flags on the servers of the
// environment (scripts/servers.sh's env file), sluice built by build,
// and prints the report to stdout.
func (c *Command) Run(stdout io.Writer, log *slog.Logger, build BuildFunc) error {
	o := c.o
	o.build = build
	var err error
	if o.liveRates, err = parseRates(*c.liveRate); err != nil {
		return err
	}
	if o.rows <= 0 || o.txn <= 0 || o.updates < 0 || o.updates > 1 || o.queues <= 0 || !slices.Contains([]string{"embedded", "rocketmq", "kafka"}, o.transport) ||
		o.incrRows < 0 || o.incrRows > 0 && (o.incrRate <= 0 || o.liveFor <= 0) {
		return fmt.Errorf("bench: need --rows > 0, --txn > 0, 0 <= --updates <= 1, --queues > 0, --transport embedded|rocketmq|kafka, and with --incremental-rows, --incremental-rate > 0 and --live-for > 0: %w", runtime.ErrConfig)
	}
	switch {
	case o.format == "" && o.transport == "rocketmq":
		o.format = rocketmq.DefaultFormat
	case o.format == "" && o.transport == "kafka":
		o.format = kafka.FormatJSON
	}
	env, err := benchEnvFromOS()
	if err != nil {
		return err
	}
	if o.transport == "rocketmq" && env.nameServer == "" {
		return fmt.Errorf("bench: --transport rocketmq needs SLUICE_ROCKETMQ_NAMESRV: %w", runtime.ErrConfig)
	}
	if o.transport == "kafka" && len(env.kafkaBrokers) == 0 {
		return fmt.Errorf("bench: --transport kafka needs SLUICE_KAFKA_BROKERS: %w", runtime.ErrConfig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	rep, err := runBench(ctx, env, o, log)
	if err != nil {
		return err
	}
	printBenchReport(stdout, rep)
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("bench: write %s: %w", o.jsonOut, err)
		}
	}
	return nil
}

// benchRun is one run of the bench: its options, servers, connections and
// report, shared by the steps of runBench.
type benchRun struct {
	env      benchEnv
	o        benchOpts
	log      *slog.Logger
	rep      *benchReport
	src, tgt *sql.DB
	bcfg     binlog.Config
	start    []byte // the binlog position before the load
	procs    benchProcs
	written  int // rows the lag and incremental phases inserted (ids after --rows)
}

// runBench runs the phases in order: the load, the raw baselines, the
// brokers' warm-up (rocketmq), sluice's catch-up, the lag phases, the
// comparison of source and target, the raw broker round trips (rocketmq),
// the raw sides at once and Debezium.
func runBench(ctx context.Context, env benchEnv, o benchOpts, log *slog.Logger) (*benchReport, error) {
	updates := int(float64(o.rows) * o.updates)
	b := &benchRun{env: env, o: o, log: log,
		rep: &benchReport{Rows: o.rows, Updates: updates, Events: o.rows + updates, TxnRows: o.txn, Transport: o.transport, Queues: o.queues}}
	if o.transport != "embedded" {
		b.rep.Format = o.format
	}
	var err error
	if b.src, err = sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s:%d)/?interpolateParams=true&multiStatements=false", env.user, env.password, env.host, env.port)); err != nil {
		return nil, err
	}
	defer b.src.Close()
	if b.tgt, err = sql.Open("postgres", env.pgDSN); err != nil {
		return nil, err
	}
	defer b.tgt.Close()
	if err := b.load(ctx); err != nil {
		return nil, err
	}
	if err := b.rawBaselines(ctx); err != nil {
		return nil, err
	}
	if err := b.warmUpBrokers(ctx); err != nil {
		return nil, err
	}
	if err := b.sluice(ctx); err != nil {
		return nil, err
	}
	if err := b.rawAfter(ctx); err != nil {
		return nil, err
	}
	return b.rep, nil
}

// load makes the tables, notes the binlog position and loads the source.
func (b *benchRun) load(ctx context.Context) error {
	if err := benchSetup(ctx, b.src, b.tgt); err != nil {
		return err
	}
	b.bcfg = binlog.Config{Host: b.env.host, Port: b.env.port, User: b.env.cdcUser, Password: b.env.cdcPassword, Flavor: b.env.flavor,
		ServerID: 5000 + rand.Uint32N(10000), ServerName: "sluice-bench", Include: []string{benchDB + "." + benchTable}}
	if b.o.incrRows > 0 {
		// before the start position: only the incremental snapshot reads it
		b.log.Info("bench: loading the table of the incremental snapshot", "rows", b.o.incrRows)
		if err := loadSnapTable(ctx, b.src, b.o.incrRows); err != nil {
			return err
		}
	}
	var err error
	if b.start, err = binlog.CurrentPosition(ctx, b.bcfg); err != nil {
		return err
	}
	b.log.Info("bench: loading the source", "rows", b.o.rows, "updates", b.rep.Updates, "txn", b.o.txn)
	t0 := time.Now()
	if err := benchLoad(ctx, b.src, b.o.rows, b.rep.Updates, b.o.txn); err != nil {
		return err
	}
	b.rep.LoadSeconds = time.Since(t0).Seconds()
	if b.procs, err = parseProcs(b.o.procs); err != nil {
		return err
	}
	b.rep.cpuNames = b.procs.names()
	return nil
}

// cpuPhase samples the CPU of the processes; the function it returns
// samples them again and records, under phase, each one's CPU seconds
// per million events in between.
func (b *benchRun) cpuPhase(phase string) func() {
	before := b.procs.sample()
	return func() {
		after := b.procs.sample()
		if b.rep.CPU == nil {
			b.rep.CPU = map[string]map[string]float64{}
		}
		per := map[string]float64{}
		for name, s := range after {
			per[name] = (s - before[name]) / float64(b.rep.Events) * 1e6
		}
		b.rep.CPU[phase] = per
	}
}

// rawBaselines measures the raw source and target and sluice's source with
// the JSON converter.
func (b *benchRun) rawBaselines(ctx context.Context) error {
	b.log.Info("bench: raw baselines")
	rep := b.rep
	var err error
	done := b.cpuPhase("raw source")
	if rep.RawSourceSeconds, err = rawBinlogRead(ctx, b.bcfg, b.start, rep.Events); err != nil {
		return fmt.Errorf("bench: raw binlog read: %w", err)
	}
	done()
	done = b.cpuPhase("raw target")
	if rep.RawTargetSeconds, err = rawTargetWrite(ctx, b.tgt, rawTargetChunks(b.o.rows, rep.Updates, rawTargetBatch)); err != nil {
		return fmt.Errorf("bench: raw target write: %w", err)
	}
	done()
	if rep.SourceJSONSeconds, err = sourceJSONRead(ctx, b.bcfg, b.start, rep.Events, b.log); err != nil {
		return fmt.Errorf("bench: source with JSON: %w", err)
	}
	return nil
}

// warmUpBrokers sends o.warmUp messages through fresh RocketMQ brokers
// before anything is measured on them, then waits until they are quiet;
// nothing without RocketMQ or with --warm-up 0.
//
// Fresh brokers run their first messages at about half speed (JIT, page
// cache of new commit log files): whichever phase came first would pay for
// it. 50,000 messages were not enough: after them the brokers still spent
// 32 CPU s per million messages in sluice's phase against 14 in the raw
// round trip that follows it, and 7-10 in both on servers warmed by
// earlier runs.
//
// A fresh broker's JIT compilers take a third of a core for about the
// first minute of load (a per-thread CPU sample of one fresh broker: its
// C2 threads through the warm-up, sluice's phase and the lag phases, about
// 10 CPU s; on warm servers, none in the catch-up), and each kind of
// traffic has code of its own to compile. So the warm-up rounds go through
// the kinds of traffic the bench measures, until o.warmUp messages are
// sent: the raw round trip sending one message a time (sluice's phase
// sends three, the raw round trip's batches 31: these ran the brokers'
// per-request code a few hundred times only), then, every other time, in
// the measured round trip's batches, so that their code is warm too (it
// did not make the first measured round trip after sluice's phase as fast
// as a later one: see rawBrokerTries), the load's records through a
// publisher and a subscriber of sluice's as fast as they go
// (rawbench.PipelineRoundTrip: sluice's requests without source or sink),
// and 50,000 of them at 10,000 records a second (the lag phases' stream).
// Then sluice's phase waits until the brokers are quiet.
//
// A fresh Kafka broker compiles too; its warm-up is raw round trips of the
// load's records only (the publisher's records, sent by the plain client),
// then sluice's phase waits until the broker is quiet.
func (b *benchRun) warmUpBrokers(ctx context.Context) error {
	o, rep := b.o, b.rep
	if o.transport == "embedded" || o.warmUp <= 0 {
		return nil
	}
	b.log.Info("bench: warming the brokers up", "messages", o.warmUp)
	for round, left := 0, o.warmUp; left > 0; round++ {
		n := min(left, rep.Events)
		var err error
		switch {
		case o.transport == "kafka" || round%3 == 0:
			perSend := 1
			if round%2 == 1 {
				perSend = 0 // the measured round trip's batches
			}
			err = rawBroker(ctx, b.env, o, b.bcfg, b.start, n, perSend, nil, nil, nil, b.log)
		case round%3 == 1:
			err = pipelineWarmUp(ctx, b.env, o, b.bcfg, b.start, n, 0, b.log)
		default:
			n = min(n, 50000)
			err = pipelineWarmUp(ctx, b.env, o, b.bcfg, b.start, n, 10000, b.log)
		}
		if err != nil {
			return fmt.Errorf("bench: broker warm-up: %w", err)
		}
		left -= n
	}
	rep.WarmUpSettleSeconds = b.procs.settle(ctx, brokerProcs(o.transport), brokerQuietCores, brokerSettleMax).Seconds()
	b.log.Info("bench: brokers quiet after the warm-up", "waited", time.Duration(rep.WarmUpSettleSeconds*float64(time.Second)))
	return nil
}

// sluice runs sluice on the loaded binlog: the catch-up, then the lag
// phases, then compares source and target.
func (b *benchRun) sluice(ctx context.Context) error {
	b.log.Info("bench: sluice end to end", "transport", b.o.transport)
	live, err := startBenchPipeline(ctx, b.env, b.o, b.bcfg, b.start, b.log)
	if err != nil {
		return err
	}
	defer live.stop()
	if err := b.catchUp(ctx, live); err != nil {
		return err
	}
	if err := b.lagPhases(ctx, live); err != nil {
		return err
	}
	if err := b.incrementalPhase(ctx, live); err != nil {
		return err
	}
	live.stop()
	if b.rep.Verified, err = benchVerify(ctx, b.src, b.tgt); err != nil || b.o.incrRows <= 0 {
		return err
	}
	snap, err := verifyTable(ctx, b.src, b.tgt, snapTable)
	b.rep.Verified += "; " + snapTable + ": " + snap
	return err
}

// catchUp measures sluice applying the load, with the profiles asked for.
func (b *benchRun) catchUp(ctx context.Context, live *benchPipeline) error {
	o, rep := b.o, b.rep
	// Measured as `sluice run` runs: under the default memory limit, from
	// an RSS without the garbage of the raw baselines above.
	runtime.ApplyMemoryLimit(0, os.Getenv)
	debug.FreeOSMemory()
	mem := watchMemory()
	switch o.transport {
	case "rocketmq":
		select {
		case <-time.After(rawbench.ConsumerStartWait):
		case <-ctx.Done():
			return ctx.Err()
		}
	case "kafka":
		// The group's join and assignment are a start-up cost, as the
		// raw round trip's consumer start is: before the clock.
		if err := live.awaitAssigned(ctx, o.queues*live.topics); err != nil {
			return err
		}
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	stopTrace, err := startTrace(o.tracePath)
	if err != nil {
		stopProfile()
		return err
	}
	if o.transport != "embedded" {
		if err := live.w.Resume(live.name); err != nil {
			stopTrace()
			stopProfile()
			return fmt.Errorf("bench: resume sluice after its consumer's start: %w", err)
		}
	}
	done := b.cpuPhase("sluice")
	t0 := time.Now()
	if o.heapProfile != "" {
		if err := live.sink.await(ctx, int64(rep.Events/2)); err != nil {
			return fmt.Errorf("bench: sluice catching up: %w (%s)", err, live.status())
		}
		if err := writeHeapProfile(o.heapProfile); err != nil {
			return err
		}
	}
	err = live.sink.await(ctx, int64(rep.Events))
	rep.SluiceSeconds = time.Since(t0).Seconds()
	if first := live.trace.firstHandled.Load(); first > 0 {
		rep.SluiceFirstHandled = time.Duration(first - t0.UnixNano()).Seconds()
	}
	done()
	rep.SluiceBatches = live.sink.batches.Load()
	rep.SluiceSends = live.sends()
	rep.SluiceSinkBusy = time.Duration(live.sink.busy.Load()).Seconds()
	stopProfile()
	stopTrace()
	if err != nil {
		return fmt.Errorf("bench: sluice catching up: %w (%s)", err, live.status())
	}
	rep.SluicePeakRSSMiB, rep.SluicePeakHeap = mem.stop()
	return nil
}

// lagPhases writes rows at each --live-rate for --live-for and measures
// their lag through sluice.
func (b *benchRun) lagPhases(ctx context.Context, live *benchPipeline) error {
	for _, rate := range b.o.liveRates {
		if b.o.liveFor <= 0 {
			break
		}
		b.log.Info("bench: lag under a steady load", "rate", rate, "for", b.o.liveFor)
		res, err := b.livePhase(ctx, live, rate, b.o.liveFor, nil)
		if err != nil {
			return err
		}
		b.rep.Live = append(b.rep.Live, res)
		if b.rep.LagMillis == nil {
			b.rep.LiveRows, b.rep.LiveRate, b.rep.LagMillis = res.Rows, rate, res.LagMillis
		}
	}
	return nil
}

// livePhase inserts rows at rate for d, or until stop is closed (nil:
// never), waits until sluice applied them and returns their lag.
func (b *benchRun) livePhase(ctx context.Context, live *benchPipeline, rate int, d time.Duration, stop <-chan struct{}) (liveResult, error) {
	from := int64(b.o.rows + b.written + 1)
	live.sink.startLive(from)
	live.trace.start(from)
	var probe *sleepProbe
	if b.o.transport == "rocketmq" {
		probe = startSleepProbe()
	}
	n, err := benchLive(ctx, b.src, b.o.rows+b.written, rate, d, stop)
	b.written += n
	if err == nil {
		if err = live.sink.await(ctx, int64(b.rep.Events+b.written)); err != nil {
			err = fmt.Errorf("%w (%s)", schema.Wrapf("bench", err, "sluice under live load"), live.status())
		}
	}
	var slept map[string]float64
	if probe != nil {
		slept = probe.stop()
	}
	if err != nil {
		return liveResult{}, err
	}
	lag, committed := live.sink.liveResult()
	return liveResult{Rate: rate, Rows: n, LagMillis: lag, Stages: live.trace.stages(committed), Sleep10ms: slept}, nil
}

// rawAfter runs the raw phases that follow sluice's: the raw broker round
// trips (rocketmq, kafka), the raw sides at once, and Debezium when asked.
func (b *benchRun) rawAfter(ctx context.Context) error {
	o, rep := b.o, b.rep
	if o.transport != "embedded" {
		// After sluice, so that the raw client's memory (the messages are
		// built before its clock starts) is not in sluice's peak RSS.
		// Twice: the first round trip after sluice's phase took 1.03-1.66
		// s in five runs on December 5 (waiting for the brokers to go
		// quiet first changed nothing), the same run again 0.81 s. The
		// faster counts.
		for range rawBrokerTries {
			if err := rawBroker(ctx, b.env, o, b.bcfg, b.start, rep.Events, 0, rep, b.cpuPhase, nil, b.log); err != nil {
				return fmt.Errorf("bench: raw broker round trip: %w", err)
			}
		}
	}
	b.log.Info("bench: the raw sides at once")
	if err := rawAtOnce(ctx, b.env, o, b.bcfg, b.start, b.tgt, rep, b.cpuPhase, b.log); err != nil {
		return fmt.Errorf("bench: the raw sides at once: %w", err)
	}
	if o.debezium != "" {
		b.log.Info("bench: Debezium on the same binlog", "folder", o.debezium)
		var err error
		if rep.Debezium, err = runDebezium(ctx, o.debezium, b.env, rep.Events); err != nil {
			return err
		}
	}
	return nil
}

func benchSetup(ctx context.Context, src, tgt *sql.DB) error {
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + benchDB,
		"CREATE DATABASE " + benchDB,
		"CREATE TABLE " + benchDB + "." + benchTable + " (id BIGINT PRIMARY KEY, account INT NOT NULL, amount DECIMAL(12,2) NOT NULL, note VARCHAR(64), created DATETIME(6) NOT NULL)",
	} {
		if _, err := src.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("bench: prepare the source (%s): %w", q, err)
		}
	}
	for _, q := range []string{
		"DROP SCHEMA IF EXISTS " + benchDB + " CASCADE",
		"DROP SCHEMA IF EXISTS " + benchDB + "_raw CASCADE",
		"CREATE SCHEMA " + benchDB + "_raw",
		"CREATE TABLE " + benchDB + "_raw.events (id BIGINT PRIMARY KEY, account INT NOT NULL, amount NUMERIC(12,2) NOT NULL, note TEXT, created TIMESTAMP(6) NOT NULL)",
	} {
		if _, err := tgt.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("bench: prepare the target (%s): %w", q, err)
		}
	}
	return nil
}

// benchRow is row i of the load (1-based), as the source holds it after
// the insert; round 1 is the update.
func benchRow(i, round int) (account int, amount, note string) {
	cents := (i*7919 + round) % 10_000_000
	return i % 1000, fmt.Sprintf("%d.%02d", cents/100, cents%100), fmt.Sprintf("note %d/%d", i, round)
}

// benchLoad inserts rows in transactions of txn rows, then updates the
// first updates of them, txn rows a statement.
func benchLoad(ctx context.Context, db *sql.DB, rows, updates, txn int) error {
	ins := func(from, to int) error {
		var b strings.Builder
		args := make([]any, 0, (to-from)*4)
		b.WriteString("INSERT INTO " + benchDB + "." + benchTable + " (id, account, amount, note, created) VALUES ")
		for i := from; i < to; i++ {
			if i > from {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,UTC_TIMESTAMP(6))")
			acc, amt, note := benchRow(i, 0)
			args = append(args, i, acc, amt, note)
		}
		_, err := db.ExecContext(ctx, b.String(), args...)
		return err
	}
	for from := 1; from <= rows; from += txn {
		if err := ins(from, min(from+txn, rows+1)); err != nil {
			return fmt.Errorf("bench: load rows from %d: %w", from, err)
		}
	}
	for from := 1; from <= updates; from += txn {
		to := min(from+txn, updates+1) - 1
		// One statement a transaction; amount and note become round 1's.
		q := "UPDATE " + benchDB + "." + benchTable + " SET amount = MOD(id*7919 + 1, 10000000) / 100, note = CONCAT('note ', id, '/1') WHERE id BETWEEN ? AND ?"
		if _, err := db.ExecContext(ctx, q, from, to); err != nil {
			return fmt.Errorf("bench: update rows from %d: %w", from, err)
		}
	}
	return nil
}

// benchLive inserts new rows (ids after the load) at rate rows/s for d, or
// until stop is closed (nil: never), in transactions of about rate/100
// rows every 10ms, created set to the server's UTC clock so the sink side
// can measure each row's lag.
func benchLive(ctx context.Context, db *sql.DB, after, rate int, d time.Duration, stop <-chan struct{}) (int, error) {
	per := max(1, rate/100)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	next := after + 1
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-stop:
			return next - after - 1, nil
		case <-tick.C:
		}
		var b strings.Builder
		args := make([]any, 0, per*4)
		b.WriteString("INSERT INTO " + benchDB + "." + benchTable + " (id, account, amount, note, created) VALUES ")
		for i := range per {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,UTC_TIMESTAMP(6))")
			acc, amt, note := benchRow(next, 0)
			args = append(args, next, acc, amt, note)
			next++
		}
		if _, err := db.ExecContext(ctx, b.String(), args...); err != nil {
			return 0, fmt.Errorf("bench: live insert: %w", err)
		}
	}
	return next - after - 1, nil
}

// benchVerify compares source and target row by row through a digest of
// every column sluice copied.
func benchVerify(ctx context.Context, src, tgt *sql.DB) (string, error) {
	return verifyTable(ctx, src, tgt, benchTable)
}

// verifyTable is benchVerify of table (of the bench table's columns).
func verifyTable(ctx context.Context, src, tgt *sql.DB, table string) (string, error) {
	var srcN, tgtN int
	var srcSum, tgtSum string
	conn, err := src.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION group_concat_max_len = 1073741824"); err != nil {
		return "", err
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*), MD5(GROUP_CONCAT(CONCAT_WS(':', id, account, amount, note, DATE_FORMAT(created, '%Y-%m-%d %H:%i:%s.%f')) ORDER BY id SEPARATOR ',')) FROM "+benchDB+"."+table).Scan(&srcN, &srcSum); err != nil {
		return "", fmt.Errorf("bench: digest of the source: %w", err)
	}
	if err := tgt.QueryRowContext(ctx, "SELECT COUNT(*), md5(string_agg(concat_ws(':', id, account, amount, note, to_char(created, 'YYYY-MM-DD HH24:MI:SS.US')), ',' ORDER BY id)) FROM "+benchDB+"."+table).Scan(&tgtN, &tgtSum); err != nil {
		return "", fmt.Errorf("bench: digest of the target: %w", err)
	}
	if srcN != tgtN || srcSum != tgtSum {
		return "", fmt.Errorf("bench: the target differs from the source: %d rows (digest %s) against %d (digest %s)", tgtN, tgtSum, srcN, srcSum)
	}
	return fmt.Sprintf("%d rows equal (md5 of every column: %s)", srcN, srcSum), nil
}

// sendsText is a SendStats in words.
func sendsText(s rocketmq.SendStats) string {
	if s.Sends == 0 {
		return "no sends"
	}
	return fmt.Sprintf("%d sends of %d messages (%.1f messages a send)", s.Sends, s.Messages, float64(s.Messages)/float64(s.Sends))
}

// benchPipeline is sluice running the bench table, built from a config as
// `sluice run` builds it.
type benchPipeline struct {
	w      *engine.Worker
	name   string
	sink   *countingSink
	trace  *lagTrace
	pub    atomic.Pointer[rocketmq.Publisher] // set with the RocketMQ transport
	sub    atomic.Pointer[kafka.Subscriber]   // set with the Kafka transport
	topics int                                // the transport's topics (one a table)
	// signaler is the source's snapshot signals (runtime.Signaler), for
	// the incremental snapshot phase
	signaler atomic.Value
	cancel   context.CancelFunc
	once     sync.Once
}

// sends is what the pipeline's RocketMQ publisher sent (since its last
// start); zero on the embedded transport.
func (b *benchPipeline) sends() rocketmq.SendStats {
	if p := b.pub.Load(); p != nil {
		return p.SendStats()
	}
	return rocketmq.SendStats{}
}

// awaitAssigned waits until the pipeline's Kafka subscriber holds
// partitions partitions (its group joined and assigned them).
func (b *benchPipeline) awaitAssigned(ctx context.Context, partitions int) error {
	for {
		if s := b.sub.Load(); s != nil && s.Assigned() >= partitions {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: the Kafka subscriber was not assigned its %d partitions: %w (%s)", partitions, ctx.Err(), b.status())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (b *benchPipeline) stop() {
	b.once.Do(func() {
		_ = b.w.StopAll(context.Background())
		b.cancel()
	})
}

func (b *benchPipeline) status() string {
	st, _ := b.w.Status(b.name)
	return fmt.Sprintf("pipeline %s, %d records read, %d applied, error %q", st.State, st.RecordsRead, st.RecordsApplied, st.LastError)
}

func startBenchPipeline(ctx context.Context, env benchEnv, o benchOpts, bcfg binlog.Config, start []byte, log *slog.Logger) (*benchPipeline, error) {
	name := fmt.Sprintf("sluice-bench-%d", rand.Uint32())
	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return nil, err
	}
	store, err := storage.NewFileStore(dir)
	if err != nil {
		return nil, err
	}
	if err := store.Save(ctx, name, start); err != nil {
		return nil, err
	}
	tables, include := []string{benchTable}, bcfg.Include
	if o.incrRows > 0 {
		tables, include = append(tables, snapTable), append(slices.Clone(include), benchDB+"."+snapTable)
	}
	transport := map[string]any{"type": o.transport, "queues": o.queues}
	prefix := strings.ReplaceAll(name, "-", "_")
	var topics []string
	switch o.transport {
	case "kafka":
		for _, t := range tables {
			topics = append(topics, kafka.TopicName(prefix, benchDB, t))
		}
		delete(transport, "queues") // a topic's partitions are the queues
		transport["brokers"] = env.kafkaBrokers
		transport["topic_prefix"] = prefix
		transport["topics"] = topics
		transport["partitions"] = o.queues
		transport["format"] = o.format
	case "rocketmq":
		for _, t := range tables {
			topics = append(topics, rocketmq.TopicName(prefix, benchDB, t, rocketmq.TopicPerTable))
		}
		transport["name_servers"] = []string{env.nameServer}
		transport["topic_prefix"] = prefix
		transport["topics"] = topics
		transport["batch_size"] = benchBatchSize
		transport["format"] = o.format
	}
	source := map[string]any{"type": env.flavor, "host": env.host, "port": env.port, "user": bcfg.User, "password": bcfg.Password,
		"server_id": bcfg.ServerID, "include": include}
	if o.incrRows > 0 && o.incrChunk > 0 {
		source["snapshot_chunk"] = o.incrChunk
	}
	doc := map[string]any{
		"name":      name,
		"source":    source,
		"transport": transport,
		"sink":      map[string]any{"type": "postgres", "dsn": env.pgDSN},
		"positions": map[string]any{"type": "file", "dir": dir},
	}
	text, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	cfg, err := plugin.ParseConfig(text, "bench.yaml")
	if err != nil {
		return nil, err
	}
	counting := newCountingSink()
	trace := newLagTrace()
	counting.trace = trace
	quiet := log.With("component", "bench-pipeline")
	bp := &benchPipeline{name: name, sink: counting, trace: trace, topics: len(tables)}
	w := engine.NewWorker(quiet)
	var pausedOnce atomic.Bool
	w.Add(name, nil, func(ctx context.Context) (*engine.Pipeline, error) {
		p, err := o.build(ctx, cfg, quiet)
		if err != nil {
			return nil, err
		}
		counting.Sink = p.Sink
		p.Sink = counting
		if rp, ok := p.Publisher.(*rocketmq.Publisher); ok {
			bp.pub.Store(rp)
		}
		if ks, ok := p.Subscriber.(*kafka.Subscriber); ok {
			bp.sub.Store(ks)
		}
		if sg, ok := p.Source.(runtime.Signaler); ok {
			bp.signaler.Store(sg)
		}
		if p.Source != nil {
			p.Source = tracedSource{p.Source, trace}
			p.Publisher = tracedPublisher{p.Publisher, trace}
		}
		if p.Subscriber != nil {
			p.Subscriber = tracedSubscriber{p.Subscriber, trace}
		}
		if o.transport != "embedded" && !pausedOnce.Swap(true) {
			// The source waits until the consumer pulls: see
			// rawbench.ConsumerStartWait and benchPipeline.awaitAssigned
			// (resumed by the catch-up phase).
			// Only the first build: a pipeline the worker restarts later
			// must not wait for a resume that already happened.
			p.Pause()
		}
		return p, nil
	})
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if err := w.Start(wctx, name); err != nil {
		cancel()
		return nil, err
	}
	bp.w, bp.cancel = w, cancel
	return bp, nil
}

// countingSink counts the data records the real sink applied and measures,
// for rows written during the live phase, the time from their source
// commit (column created) to the sink's commit.
type countingSink struct {
	runtime.Sink
	applied  atomic.Int64 // of the bench table
	snap     atomic.Int64 // of the incremental snapshot's table
	batches  atomic.Int64
	busy     atomic.Int64 // nanoseconds inside the real sink's Write
	liveFrom atomic.Int64 // ids from here on are the live phase's; 0: none yet
	trace    *lagTrace
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every applied batch
	lagUS    []int64
	// committed: per live row, its source time and commit time (unix µs)
	committed map[int64][2]int64
	// tops: per queue (Delivery without its offset), the highest record ID
	// counted (see first).
	tops map[schema.Delivery]schema.ID
}

func newCountingSink() *countingSink { return &countingSink{changed: make(chan struct{})} }

func (c *countingSink) Write(ctx context.Context, recs []schema.Record) error {
	if c.trace != nil {
		c.trace.mark(recs, func(rt *rowTimes, now int64) {
			if rt.sinkIn == 0 { // the first delivery: a redelivery waits for nothing new
				rt.sinkIn = now
			}
		})
	}
	t0 := time.Now()
	if err := c.Sink.Write(ctx, recs); err != nil {
		return err
	}
	c.busy.Add(int64(time.Since(t0)))
	now := time.Now().UnixMicro()
	var n, snap int64
	c.mu.Lock()
	for i := range recs {
		r := &recs[i]
		if !r.Op.IsData() || !c.first(r) {
			continue
		}
		if r.Table.Table == snapTable {
			snap++
			continue
		}
		n++
		if from := c.liveFrom.Load(); from > 0 && r.Op == schema.OpCreate && len(r.After) == 5 {
			id, _ := r.After[0].(int64)
			if created, ok := r.After[4].(int64); ok && id >= from {
				c.lagUS = append(c.lagUS, now-created)
				if c.committed != nil {
					c.committed[id] = [2]int64{created, now}
				}
			}
		}
	}
	c.applied.Add(n)
	c.snap.Add(snap)
	c.batches.Add(1)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return nil
}

// first tells whether r is its record's first delivery; c.mu is held. A
// transport delivers at least once (a send retried after a timeout can
// store a batch twice on a busy broker; a consumer redelivers a batch),
// and the sink skips a record whose ID is at or below its queue's last
// applied one: counted again, such copies ended the wait for the catch-up
// before every record was applied, and verification found the target
// behind the source.
func (c *countingSink) first(r *schema.Record) bool {
	if r.Delivery == nil {
		return true
	}
	k := *r.Delivery
	k.Offset = 0
	if top, ok := c.tops[k]; ok && r.ID.Compare(top) <= 0 {
		return false
	}
	if c.tops == nil {
		c.tops = map[schema.Delivery]schema.ID{}
	}
	c.tops[k] = r.ID
	return true
}

// SplitsQueues passes the sink's answer on (runtime.QueueSplitter).
func (c *countingSink) SplitsQueues() bool {
	qs, ok := c.Sink.(runtime.QueueSplitter)
	return ok && qs.SplitsQueues()
}

// await waits until at least n data records of the bench table were
// applied.
func (c *countingSink) await(ctx context.Context, n int64) error {
	return c.awaitOf(ctx, &c.applied, n)
}

// awaitSnapshot waits until at least n records of the incremental
// snapshot's table were applied.
func (c *countingSink) awaitSnapshot(ctx context.Context, n int64) error {
	return c.awaitOf(ctx, &c.snap, n)
}

func (c *countingSink) awaitOf(ctx context.Context, count *atomic.Int64, n int64) error {
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if count.Load() >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d records applied: %w", count.Load(), n, ctx.Err())
		case <-ch:
		}
	}
}

// startLive measures the lag of the rows from id from on.
func (c *countingSink) startLive(from int64) {
	c.mu.Lock()
	c.lagUS, c.committed = nil, map[int64][2]int64{}
	c.mu.Unlock()
	c.liveFrom.Store(from)
}

// liveResult summarises the lag of the live phase's rows and returns each
// row's source and commit times.
func (c *countingSink) liveResult() (map[string]float64, map[int64][2]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return percentilesMS(c.lagUS), c.committed
}

func percentilesMS(us []int64) map[string]float64 {
	if len(us) == 0 {
		return nil
	}
	s := slices.Clone(us)
	slices.Sort(s)
	at := func(q float64) float64 { return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / 1000 }
	return map[string]float64{"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "max": float64(s[len(s)-1]) / 1000}
}

// memWatch samples the Go heap and reports the process's peak RSS since it
// started (the kernel's high-water mark is reset first where Linux allows).
type memWatch struct {
	done chan struct{}
	peak atomic.Uint64
	wg   sync.WaitGroup
}

func watchMemory() *memWatch {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM
	m := &memWatch{done: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var ms goruntime.MemStats
		for {
			goruntime.ReadMemStats(&ms)
			if ms.HeapInuse > m.peak.Load() {
				m.peak.Store(ms.HeapInuse)
			}
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// stop returns peak RSS and peak heap in MiB.
func (m *memWatch) stop() (float64, float64) {
	close(m.done)
	m.wg.Wait()
	return float64(procStatusKiB("VmHWM")) / 1024, float64(m.peak.Load()) / (1 << 20)
}

func procStatusKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// sourceJSONRead is sluice's half of the Debezium comparison: the binlog
// source reading the load and every data record encoded as Debezium JSON
// (key and value, schemas on), as Debezium's embedded engine does.
func sourceJSONRead(ctx context.Context, cfg binlog.Config, start []byte, events int, log *slog.Logger) (float64, error) {
	cfg.ServerID++
	src, err := binlog.NewSource(cfg, log.With("component", "bench-source"))
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if err := src.Open(ctx, start); err != nil {
		return 0, err
	}
	enc := converter.NewJSON(converter.DefaultOptions())
	t0 := time.Now()
	var n, bytes int
	for n < events {
		recs, err := src.Read(ctx)
		if err != nil {
			return 0, err
		}
		for i := range recs {
			if !recs[i].Op.IsData() {
				continue
			}
			k, v, err := enc.Encode(&recs[i])
			if err != nil {
				return 0, err
			}
			bytes += len(k) + len(v)
			n++
		}
	}
	if bytes == 0 {
		return 0, errors.New("encoded nothing")
	}
	return time.Since(t0).Seconds(), nil
}

// runDebezium runs scripts/debezium-fixture/bench.sh on the bench table.
func runDebezium(ctx context.Context, dir string, env benchEnv, events int) (*debeziumResult, error) {
	work, err := os.MkdirTemp("", "sluice-bench-debezium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "bench.sh"), env.host, strconv.Itoa(env.port), env.cdcUser, env.cdcPassword,
		benchDB, benchTable, strconv.Itoa(events), "600", work)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	var r debeziumResult
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		tail := errOut.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return nil, fmt.Errorf("bench: Debezium printed no result (%v): %s", runErr, tail)
	}
	if r.Events < r.Expected {
		return nil, fmt.Errorf("bench: Debezium saw %d of %d events before its timeout", r.Events, r.Expected)
	}
	return &r, nil
}

func printBenchReport(w io.Writer, r *benchReport) {
	rate := func(n int, s float64) string {
		if s <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0fk/s", float64(n)/s/1000)
	}
	transport := r.Transport
	if r.Format != "" {
		transport += " (format " + r.Format + ")"
	}
	fmt.Fprintf(w, "sluice bench: %d inserts + %d updates (%d change events) in source transactions of %d rows; transport %s, %d queues; target PostgreSQL\n\n",
		r.Rows, r.Updates, r.Events, r.TxnRows, transport, r.Queues)
	fmt.Fprintf(w, "%-44s %9s %10s\n", "phase", "seconds", "events")
	row := func(name string, s float64, extra string) {
		fmt.Fprintf(w, "%-44s %9.2f %10s  %s\n", name, s, rate(r.Events, s), extra)
	}
	row("load the source (MariaDB client)", r.LoadSeconds, "")
	row("raw source: go-mysql reads + decodes", r.RawSourceSeconds, "")
	row("raw target: lib/pq COPY + COPY merge", r.RawTargetSeconds, "")
	limit := max(r.RawSourceSeconds, r.RawTargetSeconds)
	if r.RawBrokerSeconds > 0 {
		tries := make([]string, len(r.RawBrokerTries))
		for i, t := range r.RawBrokerTries {
			tries[i] = fmt.Sprintf("%.2f", t)
		}
		name, sends := "raw broker: Go client send + orderly read", "; "+sendsText(r.RawBrokerSends)
		if r.Transport == "kafka" {
			name, sends = "raw broker: franz-go produce + fetch", ""
		}
		row(name, r.RawBrokerSeconds, fmt.Sprintf("%.0f bytes a record%s; the fastest of %s s",
			float64(r.RawBrokerBytes)/float64(r.Events), sends, strings.Join(tries, ", ")))
		limit = max(limit, r.RawBrokerSeconds)
	}
	if r.RawAtOnceSeconds > 0 {
		each := fmt.Sprintf("source %.2f s, target %.2f s", r.RawAtOnceSourceSeconds, r.RawAtOnceTargetSeconds)
		if r.RawAtOnceBrokerSeconds > 0 {
			each += fmt.Sprintf(", broker %.2f s", r.RawAtOnceBrokerSeconds)
		}
		row("raw sides at once (this machine's ceiling)", r.RawAtOnceSeconds, each)
	}
	atOnce := ""
	if r.RawAtOnceSeconds > 0 {
		atOnce = fmt.Sprintf(", %.2f of the raw sides at once", r.RawAtOnceSeconds/r.SluiceSeconds)
	}
	row("sluice end to end (catch-up)", r.SluiceSeconds, fmt.Sprintf("%.2f of the slowest raw side%s; %d sink transactions busy %.2f s; peak RSS %.0f MiB, heap %.0f MiB; first record handled after %.3f s",
		limit/r.SluiceSeconds, atOnce, r.SluiceBatches, r.SluiceSinkBusy, r.SluicePeakRSSMiB, r.SluicePeakHeap, r.SluiceFirstHandled))
	if r.SluiceSends.Sends > 0 {
		fmt.Fprintf(w, "%-44s %9s %10s  %s\n", "  sluice's sends (catch-up)", "", "", sendsText(r.SluiceSends))
	}
	row("sluice source + Debezium JSON", r.SourceJSONSeconds, "")
	if d := r.Debezium; d != nil {
		fmt.Fprintf(w, "%-44s %9.2f %10s  sluice is %.2fx its rate; Debezium peak RSS %.0f MiB (%.1f s from engine start)\n",
			"Debezium 3.4 embedded, JSON (first to last)", d.SecondsFirstTo, rate(d.Events, d.SecondsFirstTo),
			d.SecondsFirstTo/r.SourceJSONSeconds, d.PeakRSSKiB/1024, d.SecondsStartTo)
	}
	if len(r.CPU) > 0 {
		fmt.Fprintf(w, "\nCPU seconds per million events (bench: this process)\n%-14s", "phase")
		for _, n := range r.cpuNames {
			fmt.Fprintf(w, " %9s", n)
		}
		fmt.Fprintln(w)
		for _, phase := range []string{"raw source", "raw target", "raw broker", "raw at once", "sluice"} {
			per, ok := r.CPU[phase]
			if !ok {
				continue
			}
			fmt.Fprintf(w, "%-14s", phase)
			for _, n := range r.cpuNames {
				fmt.Fprintf(w, " %9.2f", per[n])
			}
			fmt.Fprintln(w)
		}
	}
	for _, l := range r.Live {
		printLive(w, l)
	}
	if r.Incremental != nil {
		printIncremental(w, r.Incremental)
	}
	fmt.Fprintf(w, "\nverified: %s\n", r.Verified)
}

// rawBinlogRead is the source's raw limit: go-mysql's own replication client
// reading the load from start and decoding every rows event, no mapping.
func rawBinlogRead(ctx context.Context, cfg binlog.Config, start []byte, events int) (float64, error) {
	pos, err := binlog.ParsePosition(start)
	if err != nil {
		return 0, err
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: cfg.ServerID + 2, Flavor: cfg.Flavor, Host: cfg.Host,
		Port: uint16(cfg.Port), User: cfg.User, Password: cfg.Password, UseDecimal: true, ParseTime: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer syncer.Close()
	t0 := time.Now()
	streamer, err := syncer.StartSync(gomysql.Position{Name: pos.File, Pos: pos.Pos})
	if err != nil {
		return 0, err
	}
	n := 0
	for n < events {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			return 0, err
		}
		re, ok := ev.Event.(*replication.RowsEvent)
		if !ok || string(re.Table.Schema) != benchDB {
			continue
		}
		switch ev.Header.EventType {
		case replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2:
			n += len(re.Rows) / 2
		default:
			n += len(re.Rows)
		}
	}
	return time.Since(t0).Seconds(), nil
}

// rawTargetChunk is a transaction of rawTargetWrite: rows copied into the
// table (merge false) or merged into it.
type rawTargetChunk struct {
	rows  [][]any
	merge bool
}

// rawTargetChunks makes the values rawTargetWrite writes: the load's final
// rows, batch rows a transaction, the inserts then the updates.
func rawTargetChunks(rows, updates, batch int) []rawTargetChunk {
	created := time.Now().UTC().Format("2006-01-02 15:04:05.999999")
	mk := func(from, to, round int) [][]any {
		out := make([][]any, 0, to-from)
		for i := from; i < to; i++ {
			acc, amt, note := benchRow(i, round)
			out = append(out, []any{int64(i), int64(acc), amt, note, created})
		}
		return out
	}
	var chunks []rawTargetChunk
	for from := 1; from <= rows; from += batch {
		chunks = append(chunks, rawTargetChunk{mk(from, min(from+batch, rows+1), 0), false})
	}
	for from := 1; from <= updates; from += batch {
		chunks = append(chunks, rawTargetChunk{mk(from, min(from+batch, updates+1), 1), true})
	}
	return chunks
}

// rawTargetWrite is the target's raw limit: the same final rows written by
// hand-written lib/pq code into an empty table (rawTargetChunks, made
// before the clock starts): plain COPY for the inserts, COPY into a
// temporary table and one INSERT … ON CONFLICT for the updates.
func rawTargetWrite(ctx context.Context, db *sql.DB, chunks []rawTargetChunk) (float64, error) {
	cols := []string{"id", "account", "amount", "note", "created"}
	t0 := time.Now()
	for _, c := range chunks {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		into := pq.CopyInSchema(benchDB+"_raw", "events", cols...)
		if c.merge {
			if _, err := tx.ExecContext(ctx, "CREATE TEMP TABLE raw_stage (LIKE "+benchDB+"_raw.events) ON COMMIT DROP"); err != nil {
				tx.Rollback()
				return 0, err
			}
			into = pq.CopyIn("raw_stage", cols...)
		}
		if err := copyRows(ctx, tx, into, c.rows); err != nil {
			tx.Rollback()
			return 0, err
		}
		if c.merge {
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+benchDB+"_raw.events SELECT * FROM raw_stage ON CONFLICT (id) DO UPDATE SET account = EXCLUDED.account, amount = EXCLUDED.amount, note = EXCLUDED.note, created = EXCLUDED.created"); err != nil {
				tx.Rollback()
				return 0, err
			}
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return time.Since(t0).Seconds(), nil
}

func copyRows(ctx context.Context, tx *sql.Tx, copyStmt string, rows [][]any) error {
	stmt, err := tx.PrepareContext(ctx, copyStmt)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r...); err != nil {
			return err
		}
	}
	_, err = stmt.ExecContext(ctx)
	return err
}

func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeapProfile writes the objects live at the last collection (the
// in-use view of `go tool pprof`), after a collection of its own.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	goruntime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	return f.Close()
}

func startTrace(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}
