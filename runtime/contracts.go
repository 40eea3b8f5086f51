package runtime

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// Source is what the runtime needs from a source task. binlog.Source
// satisfies it by shape; connectors never import runtime.
type Source interface {
	// Open starts reading just after position; nil means "from the
	// configured start" (for the binlog: the server's current position).
	Open(ctx context.Context, position []byte) error
	// Read blocks until at least one record is ready or ctx is done. Records
	// come in source order; Record.Position is set at resumable points only.
	Read(ctx context.Context) ([]schema.Record, error)
	// Close releases the connection. It is safe to call more than once.
	Close() error
}

// Sink is what the runtime needs from a sink task.
type Sink interface {
	// Write applies recs, which come in order per queue, and returns nil
	// only once they are durably committed (all of recs or none).
	// Redelivered records (at or before what the sink already committed for
	// their queue) must be harmless. A batch holds one queue, or several
	// queues' batches of data rows that the runtime joined into one Write
	// (groupCommit; not for a QueueSplitter).
	Write(ctx context.Context, recs []schema.Record) error
	Close() error
}

// AckFunc is called exactly once per published batch: nil when every record
// of the batch is durably accepted by the transport (for the embedded
// transport: applied by the sink), or the error that stopped it.
type AckFunc func(err error)

// Publisher is the source side of a transport.
type Publisher interface {
	// Publish hands recs (data records only, in source order) to the
	// transport, keeping order per key. It may block for backpressure and
	// returns an error only when the batch cannot be taken; delivery is
	// reported through ack, possibly from another goroutine.
	Publish(ctx context.Context, recs []schema.Record, ack AckFunc) error
	// Close waits for outstanding acks (bounded by ctx) and releases resources.
	Close(ctx context.Context) error
}

// Handler applies one batch of records from one queue. Returning nil
// acknowledges them; an error makes the transport redeliver the same batch
// (in order) after a backoff.
type Handler func(ctx context.Context, recs []schema.Record) error

// Subscriber is the sink side of a transport.
type Subscriber interface {
	// Consume delivers batches to h, in order per queue, until ctx is done
	// or a fatal error; it returns after in-flight handlers have finished.
	Consume(ctx context.Context, h Handler) error
	Close(ctx context.Context) error
}

// PositionStore keeps the source position of each pipeline.
type PositionStore interface {
	Load(ctx context.Context, pipeline string) ([]byte, error) // nil, nil when none
	Save(ctx context.Context, pipeline string, pos []byte) error
}

// StartPositioner is an optional capability of a Source: after Open, a
// position to save before anything is read, or nil when the position Open
// was given stays right. binlog.Source gives the server's current position
// when it starts without one, and a fresh snapshot's start (its epoch and
// first table). The pipeline saves it before it reports RUNNING, so a stop
// before the first record resumes there instead of at a later position.
type StartPositioner interface {
	StartPosition() []byte
}

// PositionKeeper is an optional capability of a Source that sends what it
// reads by itself and saves its own position after each batch it
// completed (the RocketMQ replicator: the target cluster acknowledged the
// batch), so that a kill -9 repeats at most the batch in progress. The
// pipeline gives it the position store (claimed, in a cluster) and the
// pipeline's name before Open; the records it returns carry no position.
type PositionKeeper interface {
	KeepPositions(store PositionStore, pipeline string)
}

// Where is an optional capability of a PositionStore: where it keeps
// positions ("folder /abs/path", "table sluice_positions"), for logs.
type Where interface {
	Where() string
}

// ProgressReporter is an optional capability of a Source: named gauges of
// its progress (for the binlog source, snapshot_rows, snapshot_tables,
// snapshot_tables_done, snapshot_running, snapshot_estimated_rows,
// snapshot_elapsed_seconds). /metrics exports each key it knows
// (progressMetrics) as the gauge sluice_<key>.
type ProgressReporter interface {
	Progress() map[string]float64
}

// QueueProgressReporter is an optional capability of a Source: gauges per
// queue (key, then queue name), which /metrics exports for each key it
// knows (queueMetrics) as sluice_<key>{queue="<name>"}.
type QueueProgressReporter interface {
	QueueProgress() map[string]map[string]float64
}

// Signaler is an optional capability of a Source: it takes a snapshot
// signal in Debezium's form (type execute-snapshot, stop-snapshot,
// pause-snapshot or resume-snapshot, and its JSON data) from outside the
// source database, POST /connectors/{name}/signals, and returns its id (a
// new one when id is empty). A signal it refuses wraps schema.ErrConfig.
type Signaler interface {
	Signal(ctx context.Context, id, typ, data string) (string, error)
}

// GroupReporter is an optional capability of a Source that keeps consumer
// group checkpoints for another cluster (the RocketMQ replicator): it
// reports each group's state there and, with apply, writes its last
// checkpoints as the group's offsets there (failover), GET
// /connectors/{name}/groups and POST /connectors/{name}/groups/failover.
type GroupReporter interface {
	Groups(ctx context.Context, apply bool) (any, error)
}

// GroupSwitcher is an optional capability of a GroupReporter: a planned
// switchover of groups (none: the configured ones) to the other cluster,
// once everything is copied (waiting at most timeout), POST
// /connectors/{name}/groups/switchover.
type GroupSwitcher interface {
	Switchover(ctx context.Context, groups []string, timeout time.Duration) (any, error)
}

// IncrementalReporter is an optional capability of a Source: the progress
// of its newest incremental snapshot for status (nil: none ran).
type IncrementalReporter interface {
	IncrementalSnapshot() *IncrementalSnapshotStatus
}

// TopicReporter is an optional capability of a Publisher: the topics it
// sends to that no consumer reads (rocketmq.Publisher asks the brokers), so
// that a table published and never consumed is seen in status and metrics.
type TopicReporter interface {
	UnconsumedTopics() []string
}

// TopicTracker is an optional capability of a Publisher or a Subscriber
// on a transport with topics (RocketMQ, Kafka): the topics it has sent to
// or read from since it was made or since ResetUsedTopics, sorted, for GET
// /connectors/{name}/topics. The embedded transport has no topics and
// none of it.
type TopicTracker interface {
	UsedTopics() []string
	ResetUsedTopics()
}

// TopicSet records the topics a transport uses, for its TopicTracker: Add
// of a topic already seen is a lock-free read, cheap on every send.
type TopicSet struct{ m sync.Map }

// Add records topic.
func (s *TopicSet) Add(topic string) {
	if _, ok := s.m.Load(topic); !ok {
		s.m.Store(topic, struct{}{})
	}
}

// Topics lists the topics recorded since the last Reset, sorted.
func (s *TopicSet) Topics() []string {
	var out []string
	s.m.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	sort.Strings(out)
	return out
}

// Reset forgets the topics recorded so far.
func (s *TopicSet) Reset() { s.m.Clear() }

// OutageReporter is an optional capability of a Publisher: the brokers it
// waits for (rocketmq.Publisher: a broker with no live master holds its
// queues' records until it is back), so that an outage a running pipeline
// waits through is seen in status and metrics.
type OutageReporter interface {
	Unreachable() []Unreachable
}

// Unreachable is a broker a publisher waits for: since when, and the
// queues ("topic:id") whose records wait.
type Unreachable struct {
	Broker string    `json:"broker"`
	Since  time.Time `json:"since"`
	Queues []string  `json:"queues"`
}

// TableLister is an optional capability of a Source: the tables it
// captures now (binlog.Source lists the included base tables).
type TableLister interface {
	CapturedTables(ctx context.Context) ([]schema.TableID, error)
}

// TableChecker is an optional capability of a Sink: it refuses, before
// anything is written, tables it must not take (sink.Sink: a source table
// mapping onto one of its control tables), with a fatal error naming both.
type TableChecker interface {
	CheckTables(ids []schema.TableID) error
}

// ShapeLister is an optional capability of a TableLister: the shapes
// (columns, their value schemas as the records will carry them, primary
// key) of the tables it captures now, read from the source's catalogue
// (binlog.Source: the same shapes its snapshot reads).
type ShapeLister interface {
	CapturedShapes(ctx context.Context) ([]schema.Table, error)
}

// ShapeChecker is an optional capability of a Sink: it refuses, before
// anything is written, tables whose shape it cannot take (sink.Sink: a
// table without primary key with a column the target cannot compare
// exactly, under keyless_mode: before_image), with a fatal error naming
// them. Any other error says the check could not be made (the target is
// unreachable): the sink checks each table again at its first record.
type ShapeChecker interface {
	CheckShapes(ctx context.Context, tables []schema.Table) error
}

// Claimer is an optional capability of a PositionStore: Claim makes the
// calling run the pipeline's only writer of positions and returns the store
// that run must load and save through. Every earlier run is fenced: its
// saves fail with a fatal ErrFenced. The pipeline claims once, before it
// loads its position.
type Claimer interface {
	Claim(ctx context.Context, pipeline string) (PositionStore, error)
}

// Holder is an optional capability of a Claimer's store that can tell whether this run still holds its
// claim; the pipeline asks every claimCheckEvery.
type Holder interface {
	Held(ctx context.Context, pipeline string) error
}

// BacklogReporter is an optional capability of a Source: how far the
// server it reads is ahead of a position the source put in a record. The
// binlog source compares with SHOW MASTER STATUS and @@gtid_binlog_pos.
type BacklogReporter interface {
	// Backlog returns the bytes and the transactions the server logged
	// after position; a negative value is unknown. It may connect: the
	// runtime calls it at most once a second, with a deadline.
	Backlog(ctx context.Context, position []byte) (bytes, transactions int64, err error)
}

// QueueSplitter is an optional capability of a Sink: SplitsQueues true
// means its Write applies each queue of a batch in a transaction of its
// own (sink.Sink in transactional mode), so joining the batches of several
// queues would only run their transactions one after the other: the
// runtime then writes each batch alone.
type QueueSplitter interface {
	SplitsQueues() bool
}

// IncrementalSnapshotStatus is the progress of a source's newest
// incremental snapshot, from its IncrementalReporter.
type IncrementalSnapshotStatus struct {
	Running bool   `json:"running"`
	Paused  bool   `json:"paused"`
	Signal  string `json:"signal,omitempty"` // the id of the execute-snapshot signal
	Table   string `json:"table,omitempty"`  // the table being read
	// Tables: done and queued; TablesDone: read whole (or left out with
	// an error in the log).
	Tables     int64 `json:"tables"`
	TablesDone int64 `json:"tables_done"`
	Chunks     int64 `json:"chunks"`
	Rows       int64 `json:"rows"`
	// TableRows: rows emitted of Table; TableEstimatedRows: the server's
	// estimate of its rows (approximate), absent when unknown;
	// TablePercent: TableRows of the estimate, at most 100.
	TableRows          int64    `json:"table_rows"`
	TableEstimatedRows int64    `json:"table_estimated_rows,omitempty"`
	TablePercent       *float64 `json:"table_percent,omitempty"`
	ElapsedSeconds     float64  `json:"elapsed_seconds"`
	RowsPerSecond      float64  `json:"rows_per_second,omitempty"`
	// TableETASeconds: the rows of Table's estimate left, at the
	// snapshot's rate so far; absent when unknown or past the estimate.
	TableETASeconds *float64 `json:"table_eta_seconds,omitempty"`
}

// Derive fills TablePercent from TableRows and TableEstimatedRows,
// RowsPerSecond from Rows and ElapsedSeconds, and TableETASeconds from
// both.
func (s *IncrementalSnapshotStatus) Derive() {
	if s.Table != "" && s.TableEstimatedRows > 0 {
		p := min(100, 100*float64(s.TableRows)/float64(s.TableEstimatedRows))
		s.TablePercent = &p
	}
	if s.ElapsedSeconds > 0 {
		s.RowsPerSecond = float64(s.Rows) / s.ElapsedSeconds
	}
	if s.Running && s.RowsPerSecond > 0 && s.Table != "" && s.TableEstimatedRows > s.TableRows {
		eta := float64(s.TableEstimatedRows-s.TableRows) / s.RowsPerSecond
		s.TableETASeconds = &eta
	}
}
