package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/kafka"
	kafkarawbench "github.com/sluicecdc/sluice/runtime/kafka/rawbench"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/rocketmq/rawbench"
	"github.com/sluicecdc/sluice/schema"
)

// rawBroker measures the broker's raw round trip: sluice's source reads the
// first events of the load (before the clock), then brokerRoundTrip sends
// the messages sluice would send to a fresh topic and reads them back.
// With rep nil it measures nothing (the brokers' warm-up). perSend is
// RocketMQ's RawRoundTrip's maxPerSend: 0 sends batches as the publisher
// does.
// atClock, when not nil, is called right before the round trip's clock
// starts (rawAtOnce starts the other raw sides with it); with atClock nil
// the CPU of the round trip is cpuPhase's "raw broker".
func rawBroker(ctx context.Context, env benchEnv, o benchOpts, bcfg binlog.Config, start []byte, events, perSend int, rep *benchReport,
	cpuPhase func(string) func(), atClock func(), log *slog.Logger) error {
	// The baseline holds every record and every message at once (they are
	// built before its clock starts), several times sluice's memory limit,
	// which the bench sets before sluice's phase: under it the collector
	// would run without pause and the baseline would measure the collector
	// (300,000 messages: 18-20k msg/s and 138 CPU s per million messages
	// in the client under the limit, 36-50k msg/s and 26-48 s without).
	defer withoutMemoryLimit()()
	recs, err := benchRecords(ctx, bcfg, start, events, log)
	if err != nil {
		return err
	}
	done := func() {}
	clock := atClock
	const try = "raw broker try"
	if rep != nil && atClock == nil {
		// From the clock on, as sluice's phase: not the messages' building
		// nor the consumer's start wait.
		clock = func() { done = cpuPhase(try) }
	}
	rt, err := brokerRoundTrip(ctx, env, o, recs, perSend, clock, log.With("component", "bench-raw-broker"))
	if err != nil {
		return err
	}
	done()
	switch {
	case rep == nil:
	case atClock != nil:
		rep.RawAtOnceBrokerSeconds = rt.Elapsed.Seconds()
	default:
		// The faster of the tries is the raw limit.
		if s := rt.Elapsed.Seconds(); rep.RawBrokerSeconds == 0 || s < rep.RawBrokerSeconds {
			rep.RawBrokerSeconds, rep.RawBrokerBytes = s, rt.Bytes
			if rt.Sends > 0 {
				rep.RawBrokerSends = rocketmq.SendStats{Sends: int64(rt.Sends), Messages: int64(rt.Messages)}
			}
			rep.CPU["raw broker"] = rep.CPU[try]
		}
		rep.RawBrokerTries = append(rep.RawBrokerTries, rt.Elapsed.Seconds())
		delete(rep.CPU, try)
	}
	// The records and messages are garbage now: give their memory back.
	recs = nil
	goruntime.GC()
	debug.FreeOSMemory()
	return nil
}

// brokerRoundTrip is the transport's raw round trip of recs on a fresh
// topic: rawbench.RawRoundTrip over RocketMQ (perSend its maxPerSend),
// kafkarawbench.RawRoundTrip over Kafka (Sends left 0: its client makes
// its batches itself). atClock is called right before its clock starts.
func brokerRoundTrip(ctx context.Context, env benchEnv, o benchOpts, recs []schema.Record, perSend int, atClock func(), log *slog.Logger) (rawbench.RoundTrip, error) {
	topic := fmt.Sprintf("sluice_bench_raw_%d", rand.Uint32())
	if o.transport == "kafka" {
		cfg := kafka.Config{Brokers: env.kafkaBrokers, Pipeline: topic, Partitions: o.queues, Format: o.format}
		rt, err := kafkarawbench.RawRoundTrip(ctx, cfg, recs, atClock, log)
		return rawbench.RoundTrip{Messages: rt.Messages, Bytes: rt.Bytes, Elapsed: rt.Elapsed}, err
	}
	cfg := rocketmq.Config{NameServers: []string{env.nameServer}, Pipeline: topic, Queues: o.queues, BatchSize: benchBatchSize, Format: o.format,
		// A baseline that gives up on a busy broker measures nothing: retry
		// longer than the publisher (whose failures restart the pipeline).
		SendRetries: 12}
	return rawbench.RawRoundTrip(ctx, cfg, topic, recs, perSend, atClock, log)
}

// brokerProcs is the name prefix of the --procs processes that are the
// transport's brokers (as scripts/bench.sh names them).
func brokerProcs(transport string) string {
	if transport == "kafka" {
		return "kafka"
	}
	return "broker"
}

// pipelineWarmUp sends the load's first events through a publisher and a
// subscriber of sluice's to fresh topics, at rate records a second (0: at
// once), and reads them back (rawbench.PipelineRoundTrip): a round of the
// brokers' warm-up.
func pipelineWarmUp(ctx context.Context, env benchEnv, o benchOpts, bcfg binlog.Config, start []byte, events, rate int, log *slog.Logger) error {
	defer withoutMemoryLimit()()
	recs, err := benchRecords(ctx, bcfg, start, events, log)
	if err != nil {
		return err
	}
	cfg := rocketmq.Config{NameServers: []string{env.nameServer}, Queues: o.queues, BatchSize: benchBatchSize, Format: o.format, SendRetries: 12}
	prefix := fmt.Sprintf("sluice_bench_warm_%d", rand.Uint32())
	if _, err := rawbench.PipelineRoundTrip(ctx, cfg, prefix, recs, rate, log.With("component", "bench-warm-up")); err != nil {
		return err
	}
	recs = nil
	goruntime.GC()
	debug.FreeOSMemory()
	return nil
}

// benchBatchSize is the RocketMQ batch_size of the bench pipeline and of the
// raw round trip's consumer.
const benchBatchSize = 1024

// benchRecords reads the load's data records with sluice's source.
func benchRecords(ctx context.Context, cfg binlog.Config, start []byte, events int, log *slog.Logger) ([]schema.Record, error) {
	cfg.ServerID += 3
	src, err := binlog.NewSource(cfg, log.With("component", "bench-source"))
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := src.Open(ctx, start); err != nil {
		return nil, err
	}
	out := make([]schema.Record, 0, events)
	for len(out) < events {
		recs, err := src.Read(ctx)
		if err != nil {
			return nil, err
		}
		for i := range recs {
			if recs[i].Op.IsData() {
				out = append(out, recs[i])
			}
		}
	}
	return out, nil
}

// benchProcs are the servers whose CPU the bench reports, by name.
type benchProcs map[string]int

// parseProcs reads "name=pidfile,..." (a pid file's first number is the pid).
func parseProcs(s string) (benchProcs, error) {
	out := benchProcs{}
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		name, file, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("bench: --procs item %q is not name=pidfile: %w", item, runtime.ErrConfig)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("bench: --procs %s: %w", name, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if err != nil {
			return nil, fmt.Errorf("bench: --procs %s: pid file %s: %w", name, file, err)
		}
		out[name] = pid
	}
	return out, nil
}

func (p benchProcs) names() []string {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range p {
			if !yield(n) {
				return
			}
		}
	})
	return append([]string{"bench"}, names...)
}

// sample returns each process's CPU seconds so far (user and system, its
// own and its reaped children's, summed over its living descendants).
func (p benchProcs) sample() map[string]float64 {
	stats := readProcStats()
	out := map[string]float64{"bench": stats[os.Getpid()].cpu}
	for name, pid := range p {
		var sum float64
		var walk func(int)
		walk = func(pid int) {
			sum += stats[pid].cpu
			for _, c := range stats[pid].children {
				walk(c)
			}
		}
		walk(pid)
		out[name] = sum
	}
	return out
}

// A broker idles at about a tenth of a core (its timer and reput loops);
// compiling, it takes a third or more.
const (
	brokerQuietCores = 0.15
	brokerSettleMax  = 30 * time.Second
)

// settle waits until every process whose name starts with prefix used at
// most cores of CPU in each of two seconds running, or limit has passed (or
// ctx is done), and returns how long it waited. Without such processes it
// returns at once.
func (p benchProcs) settle(ctx context.Context, prefix string, cores float64, limit time.Duration) time.Duration {
	watched := benchProcs{}
	for name, pid := range p {
		if strings.HasPrefix(name, prefix) {
			watched[name] = pid
		}
	}
	t0 := time.Now()
	if len(watched) == 0 {
		return 0
	}
	prev := watched.sample()
	for calm := 0; calm < 2 && time.Since(t0) < limit; {
		select {
		case <-ctx.Done():
			return time.Since(t0)
		case <-time.After(time.Second):
		}
		cur := watched.sample()
		quiet := true
		for name := range watched {
			if cur[name]-prev[name] > cores {
				quiet = false
			}
		}
		if quiet {
			calm++
		} else {
			calm = 0
		}
		prev = cur
	}
	return time.Since(t0)
}

type procStat struct {
	cpu      float64
	children []int
}

// clockTicks is USER_HZ, 100 on every Linux that matters.
const clockTicks = 100

// readProcStats reads /proc/<pid>/stat of every process.
func readProcStats() map[int]procStat {
	out := map[int]procStat{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command (field 2) is in parentheses and may hold spaces.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 15 { // f[0] is field 3 (state)
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		var ticks float64
		for _, k := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			v, _ := strconv.ParseFloat(f[k], 64)
			ticks += v
		}
		out[pid] = procStat{cpu: ticks / clockTicks}
		parent[pid] = ppid
	}
	for pid, pp := range parent {
		if st, ok := out[pp]; ok {
			st.children = append(st.children, pid)
			out[pp] = st
		}
	}
	return out
}

// withoutMemoryLimit lifts the Go memory limit and returns what puts the
// limit in force before back.
func withoutMemoryLimit() (restore func()) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	return func() { debug.SetMemoryLimit(prev) }
}

const (
	rawTargetBatch = 2048 // the rows of a raw target transaction
	rawBrokerTries = 2    // measured raw broker round trips, the fastest counts
)

// rawAtOnce runs the raw sides at the same time, each from its own start:
// go-mysql reading the binlog, lib/pq writing the rows into an emptied raw
// table and, over a broker, the broker round trip (its messages built and
// its consumer started first; the others start at its clock). On two
// cores shared by the servers, the client and sluice, no pipeline that
// reads the binlog, carries the records and writes them can be faster
// than the last of them to finish: the catch-up's ratio to it is what
// sluice's own work costs on this machine, where the ratio to the slowest
// raw side alone also counts the sides' competing for the cores. Its CPU
// is cpuPhase's "raw at once".
func rawAtOnce(ctx context.Context, env benchEnv, o benchOpts, bcfg binlog.Config, start []byte, tgt *sql.DB, rep *benchReport,
	cpuPhase func(string) func(), log *slog.Logger) error {
	// Its values are made before its clock, more than sluice's memory
	// limit for a large load: under it the collector would run without
	// pause (1,000,000 rows: the target 17.3 s at once against 4.4 alone).
	defer withoutMemoryLimit()()
	if _, err := tgt.ExecContext(ctx, "TRUNCATE "+benchDB+"_raw.events"); err != nil {
		return fmt.Errorf("empty the raw table: %w", err)
	}
	chunks := rawTargetChunks(rep.Rows, rep.Updates, rawTargetBatch)
	rcfg := bcfg
	rcfg.ServerID += 3 // the raw source's own (rawBinlogRead adds 2)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	begin := make(chan struct{})
	var (
		once           sync.Once
		done           func()
		wg             sync.WaitGroup
		srcErr, tgtErr error
	)
	release := func() {
		once.Do(func() {
			done = cpuPhase("raw at once")
			close(begin)
		})
	}
	// side runs f once every side may start, and stops the others if it
	// fails.
	side := func(seconds *float64, errp *error, f func() (float64, error)) {
		wg.Go(func() {
			select {
			case <-begin:
			case <-ctx.Done():
				*errp = ctx.Err()
				return
			}
			if *seconds, *errp = f(); *errp != nil {
				cancel()
			}
		})
	}
	side(&rep.RawAtOnceSourceSeconds, &srcErr, func() (float64, error) { return rawBinlogRead(ctx, rcfg, start, rep.Events) })
	side(&rep.RawAtOnceTargetSeconds, &tgtErr, func() (float64, error) { return rawTargetWrite(ctx, tgt, chunks) })
	var brokerErr error
	if o.transport != "embedded" {
		brokerErr = rawBroker(ctx, env, o, bcfg, start, rep.Events, 0, rep, cpuPhase, release, log)
		if brokerErr != nil {
			cancel()
		}
	} else {
		release()
	}
	wg.Wait()
	if done != nil {
		done()
	}
	if err := errors.Join(brokerErr, srcErr, tgtErr); err != nil {
		return err
	}
	rep.RawAtOnceSeconds = max(rep.RawAtOnceSourceSeconds, rep.RawAtOnceTargetSeconds, rep.RawAtOnceBrokerSeconds)
	return nil
}
