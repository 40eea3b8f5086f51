package binlog

import (
	"crypto/tls"
	"fmt"
	"path"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
)

// Flavors of server.
const (
	FlavorMariaDB = "mariadb"
	FlavorMySQL   = "mysql"
)

// Config configures a Source. Its yaml tags are the keys of a pipeline's
// source section (type mysql or mariadb); Validate checks it as Open would.
type Config struct {
	Host     string `yaml:"host" sluice:"required"`
	Port     int    `yaml:"port"`
	User     string `yaml:"user" sluice:"required"`
	Password string `yaml:"password"`
	// ServerID is the replica server id this source registers with; it must
	// differ from the server's and from every other replica's.
	ServerID uint32 `yaml:"server_id" sluice:"required"`
	// Flavor is "mariadb" or "mysql".
	Flavor string `yaml:"flavor"`
	// ServerName is the logical name of the server: Debezium's topic prefix
	// and the source.name of every record.
	ServerName string `yaml:"server_name"`
	// Include and Exclude are "db.table" patterns where * matches any run of
	// characters (e.g. "shop.*"). An empty Include includes every table of
	// every database except the server's own (mysql, sys,
	// information_schema, performance_schema). Exclude wins over Include.
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	// ZeroDates is the YAML form of ZeroDateAsNull and KeepZeroDates:
	// "null" (the default, also ""), "epoch" (ZeroDateAsNull false) or
	// "keep" (NULL and the original text in a header: KeepZeroDates).
	ZeroDates string `yaml:"zero_dates"`
	// ZeroDateAsNull maps zero dates ('0000-00-00', month or day 0) to NULL
	// (default true). When false they map to the epoch (0).
	ZeroDateAsNull *bool
	// KeepZeroDates keeps the original text of zero dates available: each
	// record with one gets the header sluice.zero_dates.before / .after,
	// "column=0000-00-00[;...]" (the row still holds NULL or the epoch).
	KeepZeroDates bool
	// Snapshot says when the source reads the included tables whole before
	// streaming (records with op "r"):
	//   - "never": stream only, from the server's current position when
	//     there is no saved position (rows already in the tables are not
	//     copied);
	//   - "initial" (the default, as Debezium's): with no saved position,
	//     take a consistent snapshot and then stream from exactly the binlog
	//     position it is consistent with;
	//   - "when_needed": like initial, and also when the saved position was
	//     purged from the server's binlog (ErrPositionPurged);
	//   - "initial_only": snapshot, then stop: Read returns ErrSnapshotDone.
	// A saved position taken mid-snapshot always resumes the snapshot.
	Snapshot string `yaml:"snapshot"`
	// SnapshotChunk is the number of rows read per query during a snapshot
	// (default 2048).
	SnapshotChunk int `yaml:"snapshot_chunk"`
	// SnapshotChunkBytes bounds the rows a snapshot reader holds at once
	// in bytes as well (default 1 MiB, a default chunk of rows of 512
	// bytes): a query of wide rows ends early at the bound and the
	// next one goes on from its last key, so that a chunk is at most
	// SnapshotChunk rows and about SnapshotChunkBytes bytes (one row more).
	SnapshotChunkBytes int `yaml:"snapshot_chunk_bytes" sluice:"bytes"`
	// SnapshotThreads is the number of connections that read one table of
	// the initial snapshot in parallel, each a key range of SnapshotChunk
	// rows at a time, all in the same consistent snapshot; records are
	// still emitted in key order (parallel.go). Default 1: today's single
	// reader; tables without a pageable primary key are always read by one.
	SnapshotThreads int `yaml:"snapshot_threads"`
	// SignalTable, "db.table", names a table of the source with Debezium's
	// signal columns (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32), data
	// TEXT): an INSERT of an execute-snapshot, stop-snapshot,
	// pause-snapshot or resume-snapshot row acts on an incremental
	// snapshot, and the source writes its chunk watermarks there
	// (incremental.go). Its rows are not emitted. "": no signals.
	SignalTable string `yaml:"signal_table"`
	// SnapshotNewTables (default true) snapshots incrementally, by itself
	// while the other tables stream, every table that starts being
	// captured: one renamed into Include while the source runs (a created
	// one's rows all come through the stream after its CREATE),
	// and one a changed Include or Exclude captures when the source opens
	// at a position saved under the old ones (incremental.go). False: such
	// a table's rows from before it was captured are not read.
	SnapshotNewTables *bool `yaml:"snapshot_new_tables"`
	// SnapshotTruncate makes a snapshot send a TRUNCATE record for each
	// table before its rows (one it starts reading; not a table a resumed
	// snapshot is in the middle of), so that rows deleted from the source
	// while no pipeline ran (before a re-snapshot) leave the target too. The
	// target table is empty until the snapshot rows reach it. Sinks must
	// apply a TRUNCATE at its place relative to the rows of every queue.
	SnapshotTruncate bool `yaml:"snapshot_truncate"`
	// Heartbeat is how often an idle source emits an OpHeartbeat record
	// carrying the current position (default 10s; negative disables).
	Heartbeat time.Duration `yaml:"heartbeat"`
	// ExcludeColumns are "db.table.column" patterns (* matches any run of
	// characters inside one part) of columns left out of every record:
	// they disappear from the value schema and the rows, on the streaming
	// and the snapshot path alike. Excluding a primary-key column is a
	// configuration error (reported when the table is first seen).
	ExcludeColumns []string `yaml:"exclude_columns"`
	// Mask replaces the values of matching columns (see MaskRule); the
	// first matching rule applies. An excluded column is not masked.
	Mask []MaskRule `yaml:"mask"`
	// HistoryFile, when set, keeps a schema history in that file (JSON
	// lines of HistoryEntry): the CREATE TABLE of every included table at
	// first start and every later DDL statement on them with its position.
	// Events then decode with the table shape in force when they were
	// written, also where the table map lacks column names, keys or
	// ENUM/SET labels (binlog_row_metadata MINIMAL or NO_LOG, MariaDB
	// before 10.5), and Open accepts such servers.
	HistoryFile string `yaml:"history_file"`
	// History keeps the schema history in another store than HistoryFile
	// (see HistoryStore), e.g. a database table whose appends a lease
	// fences; it wins over HistoryFile.
	History HistoryStore
	// HistoryStore is where a pipeline's config keeps the history: "file"
	// (the default, also ""; HistoryFile) or "database" (a table of the
	// positions database, HistoryTable, default sluice_schema_history).
	// The command that builds the source opens the database store and
	// sets History; Open refuses "database" without it.
	HistoryStore string `yaml:"history_store"`
	HistoryTable string `yaml:"history_table"`
	// SkipDDL lists DDL statements (their exact text, or the GTID of their
	// transaction) the DDL parser and the schema history leave out: the way
	// past a statement it cannot parse, once its effect is in the target or
	// when it changes no captured table's shape. The record still carries
	// the text, with no structured changes.
	SkipDDL []string `yaml:"skip_ddl"`
	// SkippedOperations is Debezium's skipped.operations: the ops ("c",
	// "u", "d", "t") whose records the source does not emit; "none" or
	// empty skips nothing. Debezium's default is "t" (truncates skipped);
	// sluice's is none, because a skipped TRUNCATE leaves every row of the
	// table in the target after the source emptied it.
	SkippedOperations OpList `yaml:"skipped.operations"`
	// SkipSchemaChanges is Debezium's include.schema.changes=false: no
	// OpSchemaChange records (the schema history, if any, still follows the
	// DDL). Debezium's default, true, is sluice's too.
	SkipSchemaChanges bool
	// IncludeSchemaChanges is include.schema.changes as YAML writes it:
	// false sets SkipSchemaChanges; nil leaves it.
	IncludeSchemaChanges *bool `yaml:"include.schema.changes"`
	// TLSMode is MySQL's ssl-mode for every connection to the server (the
	// replication stream, the snapshot, position and check queries):
	// "disabled" (the default, also ""), "preferred" (TLS when the server
	// offers it, else plain), "required" (TLS, the certificate is not
	// checked), "verify_ca" (TLS, the certificate must be signed by a CA in
	// TLS.RootCAs) or "verify_identity" (verify_ca and the certificate must
	// name Host).
	TLSMode string `yaml:"ssl_mode"`
	// TLS holds RootCAs (the CA to verify the server against; nil: the
	// system's roots) and Certificates (a client certificate, if the server
	// asks for one); the source applies the mode's verification to a copy
	// (for verify_identity ServerName defaults to Host). Nil is an empty
	// config; verify_ca needs RootCAs.
	TLS *tls.Config
	// SSLCA, SSLCert and SSLKey name the PEM files TLS is loaded from when
	// it is nil (see secure.LoadClientTLS): the CA that signs the server's
	// certificate, and a client certificate for servers that ask for one.
	SSLCA   string `yaml:"ssl_ca"`
	SSLCert string `yaml:"ssl_cert"`
	SSLKey  string `yaml:"ssl_key"`

	// Debezium's event format options, with Debezium's names and values.
	// The source does not read them: they choose how the transport writes
	// its records (converter.Options; the connector registration passes
	// them on) and are checked there.
	DecimalHandlingMode        string `yaml:"decimal.handling.mode"`         // precise (default) | string | double
	BigintUnsignedHandlingMode string `yaml:"bigint.unsigned.handling.mode"` // precise (sluice's default) | long (Debezium's)
	TimePrecisionMode          string `yaml:"time.precision.mode"`           // adaptive_time_microseconds (default) | connect
	BinaryHandlingMode         string `yaml:"binary.handling.mode"`          // bytes (default) | base64 | base64-url-safe | hex
	ProvideTransactionMetadata *bool  `yaml:"provide.transaction.metadata"`  // sluice's default true; Debezium's false
}

// OpList is a list of ops ("c", "u", "d", "t"); YAML may give it as a list
// or as one comma-separated string ("c,u"), as Debezium does.
type OpList []string

// UnmarshalYAML reads a list or a comma-separated string.
func (l *OpList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*l = nil
		for _, op := range strings.Split(n.Value, ",") {
			if op = strings.TrimSpace(op); op != "" {
				*l = append(*l, op)
			}
		}
		return nil
	case yaml.SequenceNode:
		var ops []string
		if err := n.Decode(&ops); err != nil {
			return fmt.Errorf("expected a list of c, u, d and t, or one string such as \"c,u\"")
		}
		*l = ops
		return nil
	}
	return fmt.Errorf("expected a list of c, u, d and t, or one string such as \"c,u\"")
}

// Where the schema history is kept (Config.HistoryStore).
const (
	HistoryInFile     = "file"
	HistoryInDatabase = "database"
)

// historyStore is the store of the schema history; nil: none.
func (c *Config) historyStore() HistoryStore {
	if c.History != nil {
		return c.History
	}
	if c.HistoryFile != "" {
		return FileHistory{c.HistoryFile}
	}
	return nil
}

// historyFile is the history file, for messages that tell how to edit it.
func (c *Config) historyFile() string {
	if f, ok := c.historyStore().(FileHistory); ok {
		return f.Path
	}
	return ""
}

// Snapshot modes (Config.Snapshot).
const (
	SnapshotNever       = "never"
	SnapshotInitial     = "initial"
	SnapshotWhenNeeded  = "when_needed"
	SnapshotInitialOnly = "initial_only"
)

func (c *Config) zeroDateAsNull() bool { return c.ZeroDateAsNull == nil || *c.ZeroDateAsNull }

// Validate checks c as Open would, without connecting, and completes it:
// defaults filled, TLS loaded from SSLCA, SSLCert and SSLKey, ZeroDates and
// IncludeSchemaChanges applied. Calling it again changes nothing.
func (c *Config) Validate() error { return c.validate() }

// validate checks c and fills defaults.
func (c *Config) validate() error {
	var missing []string
	if c.Host == "" {
		missing = append(missing, "Host")
	}
	if c.User == "" {
		missing = append(missing, "User")
	}
	if c.ServerID == 0 {
		missing = append(missing, "ServerID")
	}
	if c.ServerName == "" {
		missing = append(missing, "ServerName")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s must be set", ErrConfig, strings.Join(missing, ", "))
	}
	if c.Port == 0 {
		c.Port = 3306
	}
	switch c.ZeroDates {
	case "", "null":
	case "epoch":
		f := false
		c.ZeroDateAsNull = &f
	case "keep":
		c.KeepZeroDates = true
	default:
		return fmt.Errorf("%w: ZeroDates must be null, epoch or keep, not %q", ErrConfig, c.ZeroDates)
	}
	if c.IncludeSchemaChanges != nil && !*c.IncludeSchemaChanges {
		c.SkipSchemaChanges = true
	}
	if c.TLS == nil {
		mode, t, err := secure.LoadClientTLS(c.TLSMode, c.SSLCA, c.SSLCert, c.SSLKey)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrConfig, err)
		}
		c.TLSMode, c.TLS = mode, t
	}
	switch c.HistoryStore {
	case "", HistoryInFile:
		if c.HistoryTable != "" {
			return fmt.Errorf("%w: only HistoryStore %q has a table: remove HistoryTable", ErrConfig, HistoryInDatabase)
		}
	case HistoryInDatabase:
		if c.HistoryFile != "" {
			return fmt.Errorf("%w: HistoryStore %q keeps the history in the database, not in a file: remove HistoryFile", ErrConfig, HistoryInDatabase)
		}
	default:
		return fmt.Errorf("%w: HistoryStore %q must be %q or %q", ErrConfig, c.HistoryStore, HistoryInFile, HistoryInDatabase)
	}
	switch c.Snapshot {
	case "":
		c.Snapshot = SnapshotInitial
	case SnapshotNever, SnapshotInitial, SnapshotWhenNeeded, SnapshotInitialOnly:
	default:
		return fmt.Errorf("%w: Snapshot %q must be one of never, initial, when_needed, initial_only", ErrConfig, c.Snapshot)
	}
	for _, op := range c.SkippedOperations {
		switch op {
		case "c", "u", "d", "t", "none":
		default:
			return fmt.Errorf("%w: skipped.operations %q: use a list of c, u, d and t (create, update, delete, truncate), or none", ErrConfig, op)
		}
	}
	if c.SignalTable != "" {
		if _, err := tableName(c.SignalTable); err != nil {
			return fmt.Errorf("%w: signal_table: %v", ErrConfig, err)
		}
	}
	if c.SnapshotChunk < 0 {
		return fmt.Errorf("%w: SnapshotChunk %d must not be negative", ErrConfig, c.SnapshotChunk)
	}
	if c.SnapshotChunk == 0 {
		c.SnapshotChunk = 2048
	}
	if c.SnapshotChunkBytes < 0 || c.SnapshotThreads < 0 || c.SnapshotThreads > maxSnapshotThreads {
		return fmt.Errorf("%w: SnapshotChunkBytes %d must not be negative, SnapshotThreads %d must be 1 to %d", ErrConfig, c.SnapshotChunkBytes, c.SnapshotThreads, maxSnapshotThreads)
	}
	if c.SnapshotChunkBytes == 0 {
		c.SnapshotChunkBytes = defaultSnapshotChunkBytes
	}
	if c.SnapshotThreads == 0 {
		c.SnapshotThreads = 1
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 10 * time.Second
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("%w: Port %d is out of range 1-65535", ErrConfig, c.Port)
	}
	switch c.Flavor {
	case FlavorMariaDB, FlavorMySQL:
	default:
		return fmt.Errorf("%w: Flavor %q must be %q or %q", ErrConfig, c.Flavor, FlavorMariaDB, FlavorMySQL)
	}
	if strings.ContainsAny(c.ServerName, " \t\n/") {
		return fmt.Errorf("%w: ServerName %q must not contain spaces or '/'", ErrConfig, c.ServerName)
	}
	for _, p := range append(append([]string(nil), c.Include...), c.Exclude...) {
		if !strings.Contains(p, ".") {
			return fmt.Errorf("%w: table pattern %q must have the form db.table (use db.* for a whole database)", ErrConfig, p)
		}
		if _, err := path.Match(globToPath(p), "x.y"); err != nil {
			return fmt.Errorf("%w: table pattern %q: %v", ErrConfig, p, err)
		}
	}
	if _, err := compileColumnRules(c.ExcludeColumns, c.Mask); err != nil {
		return err
	}
	mode, err := normalizeTLSMode(c.TLSMode)
	if err != nil {
		return err
	}
	c.TLSMode = mode
	if mode == TLSVerifyCA && (c.TLS == nil || c.TLS.RootCAs == nil) {
		return fmt.Errorf("%w: TLSMode verify_ca needs the CA to verify against (TLS.RootCAs; ssl_ca in the config)", ErrConfig)
	}
	return nil
}

// globToPath turns a "db.table" pattern into a path.Match pattern where only
// * is special, so that the separator "/" lets "*" stay inside one part.
func globToPath(p string) string {
	var b strings.Builder
	for _, r := range p {
		switch r {
		case '*':
			b.WriteString("*")
		case '?', '[', ']', '\\', '/':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// filter decides which tables are captured.
type filter struct {
	include, exclude []string
}

func newFilter(include, exclude []string) filter {
	f := filter{}
	for _, p := range include {
		f.include = append(f.include, globToPath(strings.ToLower(p)))
	}
	for _, p := range exclude {
		f.exclude = append(f.exclude, globToPath(strings.ToLower(p)))
	}
	return f
}

var systemDatabases = map[string]bool{"mysql": true, "sys": true, "information_schema": true, "performance_schema": true}

func (f filter) match(db, table string) bool {
	name := strings.ToLower(db + "." + table)
	for _, p := range f.exclude {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(f.include) == 0 {
		return !systemDatabases[strings.ToLower(db)]
	}
	for _, p := range f.include {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// matchDatabase reports whether some table of db may be captured, for
// statements (DDL) that name a database but whose tables are not parsed.
func (f filter) matchDatabase(db string) bool {
	if db == "" {
		return false
	}
	name := strings.ToLower(db)
	if len(f.include) == 0 {
		return !systemDatabases[name]
	}
	for _, p := range f.include {
		dbPart, _, _ := strings.Cut(p, ".")
		if ok, _ := path.Match(dbPart, name); ok {
			return true
		}
	}
	return false
}

// mayCapture reports whether some table of database db may match the
// include patterns (exclude is left to match): db followed by a dot is a
// prefix of some name a pattern matches. It lists only the databases whose
// tables are worth listing, so it may say yes too often, never too rarely.
func (f filter) mayCapture(db string) bool {
	name := strings.ToLower(db)
	if len(f.include) == 0 {
		return !systemDatabases[name]
	}
	for _, p := range f.include {
		if globPrefix(p, name+".") {
			return true
		}
	}
	return false
}

// globPrefix reports whether the path.Match pattern p (as globToPath
// makes it: '*' and escaped literals) matches some name that starts with
// prefix.
func globPrefix(p, prefix string) bool {
	for {
		if prefix == "" {
			return true
		}
		if p == "" {
			return false
		}
		switch p[0] {
		case '*':
			if globPrefix(p[1:], prefix) {
				return true
			}
			if prefix[0] == '/' { // '*' matches no '/'
				return false
			}
			prefix = prefix[1:]
			continue
		case '\\':
			if len(p) < 2 {
				return false
			}
			p = p[1:]
		}
		if p[0] != prefix[0] {
			return false
		}
		p, prefix = p[1:], prefix[1:]
	}
}

// skippedOps is the set of ops SkippedOperations names (nil: none).
func (c *Config) skippedOps() map[schema.Op]bool {
	var m map[schema.Op]bool
	for _, op := range c.SkippedOperations {
		o, ok := map[string]schema.Op{"c": schema.OpCreate, "u": schema.OpUpdate, "d": schema.OpDelete, "t": schema.OpTruncate}[op]
		if !ok {
			continue
		}
		if m == nil {
			m = map[schema.Op]bool{}
		}
		m[o] = true
	}
	return m
}

// snapshotNewTables reports SnapshotNewTables (default true).
func (c *Config) snapshotNewTables() bool { return c.SnapshotNewTables == nil || *c.SnapshotNewTables }
