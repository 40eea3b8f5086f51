// Package sink applies sluice change records to PostgreSQL or MySQL/MariaDB,
// like a JDBC sink connector in upsert mode. It satisfies runtime.Sink by
// shape (Write, Close) and imports only package schema.
//
// What one Write does, in order:
//
//  1. Drops records already applied: each change with a Delivery whose
//     record ID (schema.ID, set by the source) is at or below the last ID
//     committed for its (topic, broker, queue) in the progress table
//     (sluice_progress: pipeline, topic ("topic@broker" with a broker),
//     queue, last_id, updated_at), and each one at or below an earlier
//     record of its queue in the batch (a replay). Progress is read once per
//     queue and then cached. A delivered change without an ID, and one of a
//     source table that maps onto a control table, are refused.
//  2. Reduces the rest per target table and key: the last change of a key
//     wins; an update that changes the key deletes the old key; a TRUNCATE
//     discards the table's earlier changes in the batch. Applying the result
//     gives the same rows as applying the records one by one.
//  3. Creates missing schemas/tables (AutoCreate), adds missing columns and
//     widens columns whose type a record's widens safely (AutoEvolve; other
//     type differences are logged once and left alone), outside the data
//     transaction (MySQL commits on DDL).
//  4. In ONE transaction: first it locks the progress rows of its queues
//     (in topic, broker, queue order) and checks they still hold the IDs step 1
//     filtered against. Another writer of the same queue (two consumers
//     during a rebalance, a process believed dead) thus waits for the lock,
//     and a stale one finds the progress moved: it drops what the other
//     applied and filters again, instead of writing older versions over
//     newer ones. Then TRUNCATE (PostgreSQL) or DELETE FROM (MySQL, where
//     TRUNCATE would commit), deletes by key (PostgreSQL single-column keys:
//     DELETE … WHERE k = ANY($1); else row-value IN lists), multi-row upserts
//     (INSERT … ON CONFLICT … DO UPDATE, or INSERT … ON DUPLICATE KEY UPDATE)
//     chunked by BatchSize and the 65535-parameter limit, plain INSERTs for
//     tables without key, and the progress rows (which never move
//     backwards). Rows are written in key order, so Writes of several queues
//     on the same keys lock them in one order and do not deadlock. On
//     PostgreSQL, groups of CopyThreshold rows or more go in bulk: by COPY
//     straight into the table when every row is an insert (a snapshot; on a
//     key that exists it rolls back to a savepoint and that table merges
//     from then on). Otherwise a group of up to 1,000 rows merges with one
//     INSERT … SELECT … FROM json_populate_recordset($1) … ON CONFLICT,
//     the rows in one JSON parameter typed by the live table when the
//     statement runs (no staging table, nothing kept on the connection);
//     larger groups, groups with a json or jsonb column, and tables with
//     a domain-typed column the rows lack (the statement finds those in
//     the catalog and refuses, and the table merges by COPY from then on),
//     COPY into a temporary table and merge with one INSERT … SELECT … ON
//     CONFLICT. The COPY text is encoded here and streamed through the
//     driver connection in 64 KiB chunks. Values are always bound
//     parameters (or COPY data); identifiers are always quoted, embedded
//     quote characters doubled.
//
// If a table or column vanished behind the cached metadata (undefined table
// or column), Write retries once with fresh metadata: a column is added
// again; a table the sink has written and not dropped itself (listed in
// its table registry, registry.go) fails the Write with a fatal
// ErrTargetChanged rather than being created empty. So does one whose
// identity (registry.go) changed behind the sink: truncated, or dropped and
// created again, between two writes. A permanent error in a
// multi-row statement is reported with the key of the offending row, found
// after the failed transaction is rolled back by replaying the rows singly
// (each under a savepoint) in a transaction that is rolled back too.
//
// # Schema changes
//
// Config.SchemaChanges decides what OpSchemaChange records do. "ignore" (the
// default) skips them. "fail" fails the Write (fatal ErrSchemaChange, nothing
// of the batch applied). "apply" makes each one a barrier: the data before it
// commits, then the change, then the data after it, each with its progress.
// The sink never parses the DDL text: it applies the record's structure
// (schema.SchemaChange.Tables, read by the source's DDL parser), building
// each statement from identifiers, quoted, and literals it renders. Names
// map through Routes and SchemaTemplate/TableTemplate, columns through
// Columns (route.go).
//
//   - CREATE TABLE: created from the columns (OR REPLACE drops it first); a
//     change without columns is left to AutoCreate.
//   - DROP TABLE: dropped. Records arriving later re-create it (AutoCreate).
//   - RENAME TABLE: renamed, unless the target lacks the old one or has the
//     new one.
//   - ADD COLUMN: added with the type AutoEvolve would give it and its
//     default (numbers, text, temporal literals, CURRENT_TIMESTAMP), so the
//     rows already there read the default, as in the source.
//   - DROP COLUMN: dropped. RENAME COLUMN, CHANGE a b: renamed, values kept.
//   - MODIFY/CHANGE: the type widened when that is safe (as AutoEvolve),
//     NOT NULL relaxed (PostgreSQL), the default set or dropped.
//   - Primary-key changes, indexes and the like: logged, not applied.
//
// Each change looks at the target first, so a redelivered change is a no-op
// (the table or column is gone already). On PostgreSQL a change commits with
// its progress; on MySQL, where DDL commits by itself, it commits first. A
// Write whose batch holds schema changes therefore commits in steps: when it
// fails, the steps before are committed and recorded, and the retry skips
// them by offset. Apply drops tables in the target: use it only where the
// target belongs to the pipeline.
//
// # Rows the target rejects
//
// Config.OnError decides what a row the target rejects for good does (a
// constraint or type violation, a value too large, a value the sink cannot
// convert such as a TIME beyond 24 hours for TIME(6)): "fail" (the default)
// fails the Write with a fatal error naming the table and key; "skip" logs
// the table, key and database error at warning level and applies the rest of
// the batch without it; "dlq" hands the record and the cause to
// Config.DeadLetter before the batch commits, then applies the rest. The
// rows left out still count as delivered (progress moves past them). A
// failing DeadLetter fails the Write, and a retried Write may hand the same
// row again (at least once). Transient errors (a lost connection, a deadlock,
// a lock timeout) are never skipped: the Write fails, retriable, with nothing
// applied. At most 10,000 rows are left out per Write. Updates and deletes
// of tables without key are governed by KeylessMode, not OnError.
//
// # Tables without primary key
//
// Inserts and snapshot reads of a table without primary key are appended
// (plain INSERT). Config.KeylessMode decides updates and deletes:
// "before_image" (the default) applies each, in source order, to one target
// row equal to its before image in every column (NULL-safe; PostgreSQL
// compares text forms through the column's type and picks the row by ctid,
// MySQL compares text by its bytes and uses LIMIT 1; of equal rows any one is
// as good as another). A table with a column the dialect cannot compare
// exactly (Types.ExactMatch) is refused with a fatal ErrSchema before any row
// of it is written, naming the table, the columns and this option: at start
// by CheckShapes (runtime.ShapeChecker) when its target table exists, else
// at its first row. "fail"
// fails the Write at the first update or delete with a fatal ErrSchema that
// names the table and this option; "append" skips them with a warning (per
// table and Write, with the count), so the target keeps every row ever
// inserted, an append-only copy. Redelivered records are still skipped by
// their ID.
//
// # Transaction-consistent mode
//
// Records of one source transaction carry the same Transaction.ID. A Write
// applies its batch in one target transaction, so a source transaction is
// only ever split when a transport batch ends inside it. Config.Transactional
// prevents that: per queue, the records of the last transaction of a batch
// are held back unless its end is known (a record of another transaction
// follows, an OpCommit marker follows, its last record carries a Position,
// or it is a schema change). The held records are stored in the pending
// table (sluice_pending: pipeline, topic, queue, tx_id, records, data) in the
// same target transaction that applies the rest of the batch and moves the
// queue's progress past them. Write returning nil thus still means
// "durably accepted": after a crash the transport redelivers nothing the
// progress covers, and a new Sink reads the held records back from the
// pending table. The next Write of the queue applies them together with the
// rest of their transaction and deletes the pending row in that same
// transaction. Records without Transaction.ID are applied at once.
//
// Limits: the guarantee holds per queue; a source transaction whose rows a
// transport spreads over several queues (routing by key) commits per queue.
// For whole-transaction consistency route the pipeline through one queue.
// Transports drop BEGIN/COMMIT markers, but mark the last record of a
// transaction on each queue with schema.HeaderTxEnd when its commit came in
// the same batch (the binlog source ends batches at commits, up to 8,192
// records), and the embedded transport hands a commit marker to queues that
// got a transaction's records only in earlier batches. Over RocketMQ a
// longer transaction stays pending until a record of the next transaction
// arrives on that queue. A
// transaction longer than 200,000 records is applied in parts, with a
// warning. Cost, measured with BenchmarkTransactionalPostgres (10,000
// updates a Write, 7-record transactions, so every batch has a held tail):
// 0.89-1.0 of normal mode's rows/s on PostgreSQL 15 (about 67-72k rows/s
// for both), same run, on a shared 2-core machine.
//
// # Duties of the caller
//
//  1. Give each pipeline its own Config.Pipeline name; two pipelines sharing
//     one would skip each other's records.
//  2. Retry a failed Write with the same records unless the error is
//     classified fatal (schema.ClassOf; bad data under OnError "fail", missing
//     column with AutoEvolve off, update/delete on a table without key,
//     a refused schema change): then stop and report. A failed Write has
//     applied nothing, except the committed steps of a batch with applied
//     schema changes, which the retry skips by offset.
//  3. When a queue may have been written by another Sink instance meanwhile
//     (a consumer rebalance), use a fresh Sink: the offset cache (and in
//     transactional mode the pending cache) of this one may be stale (the
//     progress row itself never moves backwards).
//
// # Type mapping
//
// Dates and times travel as text in the server's input format, so that no
// driver applies a time zone; for MySQL the session time zone is set to UTC
// and zoned timestamps are written as UTC. Created tables have NOT NULL only
// on key columns. The tables below are also in docs/type-mapping.md.
//
// MySQL/MariaDB source → PostgreSQL target:
//
//	| Source column | Schema | PostgreSQL column | Notes |
//	|---|---|---|---|
//	| `TINYINT` | int8 | `SMALLINT` | `TINYINT(1)` stays a number, not a boolean |
//	| `TINYINT UNSIGNED`, `SMALLINT` | int16 | `SMALLINT` | |
//	| `SMALLINT UNSIGNED`, `MEDIUMINT [UNSIGNED]`, `INT` | int32 | `INTEGER` | |
//	| `INT UNSIGNED`, `BIGINT` | int64 | `BIGINT` | |
//	| `BIGINT UNSIGNED` | uint64 | `NUMERIC(20)` | exact up to 18446744073709551615 |
//	| `FLOAT` | float32 | `REAL` | NaN/±Infinity kept |
//	| `DOUBLE` | float64 | `DOUBLE PRECISION` | |
//	| `DECIMAL(p,s)` | decimal | `NUMERIC(p,s)` | every digit of `DECIMAL(65,30)` |
//	| `BIT(n)` | bits | `BIT VARYING(n)` | written as exactly n bits, so the width reads back |
//	| `YEAR` | year | `SMALLINT` | |
//	| `DATE` | date | `DATE` | years 1..9999 |
//	| `TIME(fsp)` | time | `INTERVAL` (DefaultConfig's TimeAsInterval); `TIME(fsp)` with TimeAsInterval off | no PostgreSQL TIME holds MySQL's −838:59:59..838:59:59; with TimeAsInterval off, values outside 00:00:00..24:00:00 are a fatal error naming the column, and with `AutoEvolve` turning it on alters TIME columns made before to INTERVAL |
//	| `DATETIME(fsp)` | timestamp | `TIMESTAMP(6)` | wall clock, no zone |
//	| `TIMESTAMP(fsp)` | zoned_timestamp | `TIMESTAMPTZ(6)` | the UTC instant |
//	| `CHAR`, `VARCHAR`, `TINYTEXT`…`LONGTEXT` | string | `TEXT` | |
//	| `BINARY`, `VARBINARY`, `TINYBLOB`…`LONGBLOB`, `VECTOR` | bytes | `BYTEA` | |
//	| `ENUM(…)` | enum | `TEXT` | the label; with EnumCheck, a CHECK constraint of the labels |
//	| `SET(…)` | set | `TEXT[]` | `{"a","c"}`; existing `text` columns get `a,c` |
//	| `JSON` (MariaDB: `LONGTEXT` with a `json_valid` check) | json | `JSONB` | |
//	| `GEOMETRY` and the other spatial types | geometry | `BYTEA` | WKB |
//	| (no MySQL source) | boolean | `BOOLEAN` | |
//
// MySQL/MariaDB source → MySQL/MariaDB target: the source column type as the
// source declared it (schema parameter "source.type") when a small lexer
// finds it safe to put into DDL; otherwise (and for geometry, always):
//
//	| Schema | MySQL column | Key column (primary key) |
//	|---|---|---|
//	| int8 / int16 / int32 / int64 | `TINYINT` / `SMALLINT` / `INT` / `BIGINT` | same |
//	| uint64 | `BIGINT UNSIGNED` | same |
//	| float32 / float64 | `FLOAT` / `DOUBLE` | same |
//	| decimal | `DECIMAL(p,s)` (p ≤ 65, s ≤ 30, else a fatal error) | same |
//	| bits | `BIT(n)` | same |
//	| year | `SMALLINT` | same |
//	| date | `DATE` | same |
//	| time | `TIME(6)` (−838:59:59..838:59:59, the whole source range) | same |
//	| timestamp | `DATETIME(6)` | same |
//	| zoned_timestamp | `TIMESTAMP(6) NULL` (written as UTC; the session zone is UTC) | same |
//	| string | `LONGTEXT` | `VARCHAR(n)` (n = declared length, ≤ 768, else 255) |
//	| bytes | `LONGBLOB` | `VARBINARY(n)` (as above) |
//	| enum / set | `TEXT` | `VARCHAR(255)` |
//	| json | `JSON` | `VARCHAR(255)` |
//	| geometry | `LONGBLOB` (always, WKB; never the source type) | `VARBINARY(255)` |
//	| boolean | `BOOLEAN` | same |
//
// Key columns never take a TEXT/BLOB/JSON source type (MySQL cannot index
// them without a prefix length); they get the bounded key column type.
package sink
