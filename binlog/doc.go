// Package binlog is sluice's MySQL/MariaDB source: it connects as a replica
// (go-mysql's replication package), reads row events and turns them into
// schema.Records in source order.
//
// What the caller must do:
//
//  1. Run the server with binlog_format=ROW, binlog_row_image=FULL and
//     binlog_row_metadata=FULL (column names, primary key, signedness and
//     ENUM/SET labels come from the binlog itself), and connect with an
//     account granted REPLICATION SLAVE, REPLICATION CLIENT (BINLOG MONITOR)
//     and SELECT. Open refuses other settings with a message naming them.
//  2. NewSource, then Open with the last stored position (nil: the server's
//     current position), then Read until done, then Close (idempotent).
//  3. Store only the Position of OpCommit records, and only once every
//     record before it is delivered. Data records carry no position; an
//     OpBegin marker opens each transaction and an OpCommit marker ends it.
//     Statements logged as their own transaction (DDL) give an
//     OpSchemaChange record (its Table the first captured table it names,
//     or only the database for DDL of no table), with the statement's
//     structured changes in Change.Tables (see "DDL" below), followed by an
//     OpCommit; TRUNCATE gives an
//     OpTruncate record for the table (with its schemas when a row event
//     showed them) and an OpCommit. DDL naming tables (CREATE/ALTER/DROP/
//     RENAME TABLE, CREATE/DROP INDEX, TRUNCATE) is kept only when one of
//     them passes Include/Exclude; other DDL when its database may. Commit
//     markers come for every transaction, also those of tables that are not
//     captured, so that positions advance, and while the server is idle an
//     OpHeartbeat record every Config.Heartbeat (default 10 s, from the
//     server's heartbeat events) carries the current position.
//  4. Treat ErrPositionPurged as fatal: the binlog at the stored position is
//     gone and the tables must be snapshotted again.
//
// Positions (MySQL): a position carries the server's whole executed GTID
// set (tagged GTIDs included) when the source knows it, and always the
// binlog file and offset. The stream starts by GTID set only while
// @@gtid_mode is ON (read at every connect); with OFF, OFF_PERMISSIVE or
// ON_PERMISSIVE it starts by file and offset. Anonymous transactions
// belong to no set. A source that started from a file and offset without
// a set learns it from the next binlog file's Previous_gtids event.
//
// XA (xa.go): a prepared branch's records are held (bounded) until its XA
// COMMIT, where they are emitted, or its XA ROLLBACK, where they are
// dropped; meanwhile the positions handed on stay at the branch's start.
//
// Initial snapshot (Config.Snapshot "initial", "when_needed",
// "initial_only"; the default "never" only streams): Open with a nil
// position starts a REPEATABLE READ transaction WITH CONSISTENT SNAPSHOT and
// takes the binlog position it is consistent with. On MariaDB that position
// comes from SHOW STATUS LIKE 'binlog_snapshot_%' inside the transaction
// (plus BINLOG_GTID_POS), so no global lock is taken; on MySQL FLUSH TABLES
// WITH READ LOCK is held only while the position is read. Each included
// table is read in primary-key order, in chunks of Config.SnapshotChunk rows
// and about Config.SnapshotChunkBytes bytes (keyset pagination), by
// Config.SnapshotThreads connections that share the one snapshot
// (parallel.go), giving OpRead records with the same schemas and Go
// values as the stream (column metadata from information_schema is turned
// into the table map's type and metadata, text values go through the same
// conversion). The last record of each chunk carries a version-2 position
// (SnapshotProgress: table, last key, rows numbered); resuming there opens a
// new consistent snapshot, streams the changes from the interrupted run's
// position up to the new snapshot's (so what was read before moves forward),
// then reads the rest at the new point and streams on from there.
//
// Every record carries a schema.ID that is a pure function of the binlog:
// (epoch, file number, end position of the event, phase, index in the
// event); snapshot rows have the snapshot's position, PhaseSnapshot and
// their number. The epoch is begun from the clock by a start without a
// saved position, a position without one, and a fresh snapshot, and is
// saved in Position, so a replay from any position repeats the IDs. The very last snapshot record (source.snapshot "last")
// carries the plain streaming position; with nothing to read a heartbeat
// carries it. Tables without a primary key are read in one pass (a crash
// reads them again). "initial_only" ends with ErrSnapshotDone.
//
// Incremental snapshots (Config.SignalTable; incremental.go and
// docs/incremental-snapshots.md): an execute-snapshot row inserted into the
// signal table makes the source read the named tables while it streams, in
// chunks between a low and a high watermark it writes into that table (DBLog).
// Chunk rows whose key changed between the watermarks are dropped; the rest
// are emitted at the high watermark's commit as OpRead records with
// source.snapshot "incremental" and PhaseSnapshot IDs at that commit's
// position. Positions carry the progress (IncrementalProgress).
//
// Column exclusion and masking (Config.ExcludeColumns, Config.Mask, for
// audit and PII): excluded columns disappear from the value schema and from
// every row; masked columns keep their type and carry a hex SHA-256 of salt
// and value ("hash"), a constant ("fixed") or their first Length characters
// ("truncate"). Both apply identically to snapshot and streamed records,
// after the values are decoded. Excluding a primary-key column, masking a
// column that is not a string or binary column, and a fixed/truncate mask
// on a key column stop the source with ErrConfig when the table is first
// seen.
//
// Delivery is at least once: after a lost connection the source reconnects
// (bounded exponential backoff) from the last commit it read, so records of a
// transaction cut short are read again.
//
// Values follow package schema. Choices the binlog forces: a primary-key
// change is a delete of the old key and a create of the new one (headers
// __debezium.newkey/__debezium.oldkey link them); BINARY(n) values get back
// the trailing 0x00 bytes the binlog drops; MariaDB's JSON (a LONGTEXT with a
// json_valid CHECK), UUID, INET6 and INET4 (BINARY(16), BINARY(16),
// BINARY(4) in the binlog) are json and string values in the server's text
// form (MySQL's JSON the server's text without the spaces after ',' and
// ':', the same by snapshot and stream; a partial JSON update, with
// binlog_row_value_options=PARTIAL_JSON, applied to the before image), their types read from the schema history or, without it, from
// information_schema when a table map is first seen; GEOMETRY values are
// schema.Geom, the WKB and the SRID of the server's 4-byte prefix; zero dates are NULL (or the epoch
// in NOT NULL columns, and everywhere with ZeroDateAsNull=false); text is
// converted to UTF-8 from the column's charset (package charset: every charset
// golang.org/x/text has, corrected to the server's tables; latin1 is
// Windows-1252, as in MySQL; invalid bytes become U+FFFD); a captured column
// in another charset stops Open with a fatal error. The table shape is the
// one in each TABLE_MAP event, completed from the schema history when
// Config.HistoryFile (or Config.History) is set.
//
// Schema history (Config.HistoryFile, yaml history_file): a file of JSON
// lines {"position":{...},"db":"...","ddl":"..."}. At first start (empty or
// missing file) it records SHOW CREATE TABLE of every included table at the
// start position; then every DDL statement on included tables (and DROP
// DATABASE) with the commit position just after it, written and synced
// before any later position is handed on. Open replays the entries up to
// the resume position, so events decode with the shape in force when they
// were written. Column types always come from the table map; names,
// primary key, signedness, charsets and ENUM/SET labels come from the
// table map's metadata when present (a different column count from the
// history's is logged as a warning) and from the history otherwise, so
// binlog_row_metadata MINIMAL or NO_LOG (and MariaDB before 10.5) work.
// A statement the stream meets again after a restart from an older
// position is taken from the file, not parsed again. The file is one
// HistoryStore (FileHistory); Config.History takes another with the same
// entries, such as the runtime's table in the positions database (yaml
// history_store: database), whose appends a cluster lease fences: a fatal
// error from a store's Append stops the source before anything after the
// statement is handed on.
//
// DDL: every statement is read by one parser (package binlog/ddl), the
// TiDB parser (MySQL's grammar), into the structured changes of schema.SchemaChange (create,
// drop, rename table; add, drop, rename, modify column with type,
// nullability and default), which the schema history applies too. MariaDB
// forms with a MySQL equivalent are rewritten first (/*M!NNNNNN … */,
// CREATE OR REPLACE, ALTER ONLINE; spatial, INET4/INET6/UUID column types
// and unknown collations on a retry). A statement it still rejects (e.g.
// ALTER TABLE … WAIT n, WITH SYSTEM VERSIONING) that runs in an included
// database or names one stops the source with ErrUnparsedDDL, quoting the
// statement and its position; it is never skipped silently, since no
// consumer could apply it. To continue, either (a) with a history file,
// append to it a line with the position given in the message and an
// equivalent statement the parser understands, and restart: the stream
// then takes that line instead of parsing the statement; or (b) once its
// effect is in the target (or when it does not change the shape of a
// captured table), add its exact text or its GTID to Config.SkipDDL (yaml
// skip_ddl) and restart: the record then carries the text and no changes.
package binlog
