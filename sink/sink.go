package sink

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/sluicecdc/sluice/schema"
)

// Sink applies change records to PostgreSQL or MySQL/MariaDB. It is safe for
// concurrent use: the runtime may call Write for several queues at once.
type Sink struct {
	backend
	progress *progress // what is applied per queue, and the fence (progress.go)
	catalog  *catalog  // the target tables as the sink knows them, and their evolution (tables.go)
	applier  *applier  // writes a plan's rows inside a transaction (apply.go)

	bar barrierState // wakes copies of a barrier waiting here (barrier.go)

	// skipped and deadLettered count the rows LeftOut reports.
	skipped, deadLettered atomic.Int64

	mu     sync.Mutex
	closed bool

	// defaultSchema is the connection's default schema (PostgreSQL) or
	// database (MySQL): where the control tables are.
	defaultSchema string
	mapped        sync.Map // schema.TableID -> error (nil: maps onto no control table)

	// testHook, when set by tests, runs at named stages inside Write's
	// transaction ("applied": after the data statements, before progress;
	// "barrier passed": a barrier's copy is about to move its queue's
	// progress past itself).
	testHook func(ctx context.Context, stage string, tx *txn) error
}

// New connects to the target, verifies it and creates the progress table.
// For MySQL the DSN is adjusted so the session time zone is UTC: zoned
// timestamps are written as UTC wall clock.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Sink, error) {
	if err := cfg.normalize(); err != nil {
		return nil, fatal(err)
	}
	if err := CheckDSN(cfg.Dialect, cfg.DSN); err != nil {
		return nil, fatal(err)
	}
	if log == nil {
		log = slog.Default()
	}
	d, err := newDialect(&cfg)
	if err != nil {
		return nil, fatal(err)
	}
	db, err := connect(ctx, d, &cfg)
	if err != nil {
		return nil, err
	}
	b := backend{cfg: &cfg, db: db, d: d, log: log.With("component", "sink", "dialect", cfg.Dialect)}
	cat := newCatalog(b)
	s := &Sink{backend: b, progress: newProgress(b), catalog: cat, applier: newApplier(b, cat)}
	if s.defaultSchema, err = d.Verify(ctx, db.DB, cfg.ProgressTable); err != nil {
		db.Close()
		return nil, wrapDB(err)
	}
	if msg, err := d.Durability(ctx, db.DB); err != nil {
		s.log.Warn("sink: cannot tell whether the target's commits are durable", "err", err)
	} else if msg != "" {
		s.log.Warn("sink: the target's commits are not durable: " + msg)
	}
	if err := s.progress.create(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.createBarrierTables(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.catalog.createRegistry(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if s.d.TableIdentity(target{Table: "t"}) == "" {
		s.log.Warn("target tables' identities are unreadable (MySQL and MariaDB: grant the sink's user PROCESS): a table truncated behind the sink will not be noticed")
	}
	if err := s.progress.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Durability connects to cfg's target and says what makes its commits not
// durable when acknowledged ("" when they are, or when the sink makes them
// so: dialect.Conn.Durability), for `sluice check`. It creates nothing.
func Durability(ctx context.Context, cfg Config) (string, error) {
	if err := cfg.normalize(); err != nil {
		return "", fatal(err)
	}
	d, err := newDialect(&cfg)
	if err != nil {
		return "", fatal(err)
	}
	db, err := connect(ctx, d, &cfg)
	if err != nil {
		return "", err
	}
	defer db.Close()
	return d.Durability(ctx, db.DB)
}

// Close releases the connection pool. It is safe to call more than once.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.progress.close() // the pool's close says what matters
	return s.db.Close()
}

// SplitsQueues reports whether Write applies each queue of a batch in a
// transaction of its own (runtime.QueueSplitter): in transactional mode it
// does, so the runtime does not join queues' batches into one Write.
func (s *Sink) SplitsQueues() bool { return s.cfg.Transactional }

// CheckShapes makes checkKeyless's check at start (runtime.ShapeChecker),
// before anything is written, for the source tables without primary key
// whose target table exists: the runtime calls it with the shapes the
// source captures. A table the sink would create is checked when it is
// created, at its first row: the server decides the types it stores
// (MariaDB makes JSON a LONGTEXT, MySQL keeps a JSON the dialect cannot
// compare), and every type the sink creates on PostgreSQL compares
// exactly. The error names every refused
// table and is fatal; another error says a target table's columns could
// not be read. Column rules (Config.Columns) apply to the shapes first; a
// rule dropping a key column is refused here, fatal.
func (s *Sink) CheckShapes(ctx context.Context, tables []schema.Table) error {
	tables, err := s.cfg.routing.routeTables(tables)
	if err != nil {
		return err
	}
	return s.catalog.checkShapes(ctx, tables)
}

// WantsShapes reports whether CheckShapes checks anything: under
// keyless_mode before_image, and with column rules (a rule dropping a key
// column is refused at start), so the source need not read its catalogue
// at start otherwise.
func (s *Sink) WantsShapes() bool {
	return s.cfg.KeylessMode == KeylessBeforeImage || (s.cfg.routing != nil && len(s.cfg.routing.cols) > 0)
}

func isFatal(err error) bool { return schema.ClassOf(err) == schema.ClassFatal }

// ---- errors from the database ----

// wrapDB classifies a driver error where the sink meets it: fatal when the
// same statement would fail the same way (permanentDBError), else
// retriable. The driver's own words are not the verdict: lib/pq's *Error
// has a Fatal method meaning "severity FATAL" (a terminated connection,
// which is retriable). An error classified already keeps its class.
func wrapDB(err error) error {
	if err == nil || schema.ClassOf(err) != schema.ClassUnknown {
		return err
	}
	return classifyDB(err, permanentDBError(err))
}

// classifyDB marks a driver error fatal when terminal, else retriable.
func classifyDB(err error, terminal bool) error {
	if terminal {
		return schema.Fatal(err)
	}
	return schema.Retriable(err)
}

// permanentDBError reports errors that the same statement would hit again:
// bad data, constraint violations, syntax, missing privileges.
func permanentDBError(err error) bool {
	return explainErr(err).Class == schema.ClassFatal
}
