// Package sink applies sluice change records to PostgreSQL or MySQL/MariaDB,
// like a JDBC sink connector in upsert mode. It satisfies runtime.Sink by
// shape (Write, Close) and imports only package schema.
//
// What one Write does, in order:
//
//  1. Drops records already applied: each record with a Delivery whose offset
//     is at or below the last offset committed for its (topic, queue) in the
//     progress table (sluice_progress: pipeline, topic, queue, last_offset,
//     updated_at). Offsets are read once per queue and then cached.
//  2. Reduces the rest per target table and key: the last change of a key
//     wins; an update that changes the key deletes the old key; a TRUNCATE
//     discards the table's earlier changes in the batch. Applying the result
//     gives the same rows as applying the records one by one.
//  3. Creates missing schemas/tables (AutoCreate) and adds missing columns
//     (AutoEvolve), outside the data transaction (MySQL commits on DDL).
//  4. In ONE transaction: TRUNCATE (PostgreSQL) or DELETE FROM (MySQL, where
//     TRUNCATE would commit), deletes by key (PostgreSQL single-column keys:
//     DELETE … WHERE k = ANY($1); else row-value IN lists), multi-row upserts
//     (INSERT … ON CONFLICT … DO UPDATE, or INSERT … ON DUPLICATE KEY UPDATE)
//     chunked by BatchSize and the 65535-parameter limit, plain INSERTs for
//     tables without key, and the progress rows (which never move
//     backwards). On PostgreSQL, groups of CopyThreshold rows or more go
//     through COPY into a temporary table and one INSERT … SELECT … ON
//     CONFLICT. Values are always bound parameters (or COPY data);
//     identifiers are always quoted, embedded quote characters doubled.
//
// If a table or column vanished behind the cached metadata (undefined table
// or column), Write retries once with fresh metadata. A permanent error in a
// multi-row statement is reported with the key of the offending row, found by
// replaying the rows singly in a transaction that is rolled back.
//
// Duties of the caller:
//
//  1. Give each pipeline its own Config.Pipeline name; two pipelines sharing
//     one would skip each other's records.
//  2. Retry a failed Write with the same records unless the error exposes
//     Fatal() bool returning true (bad data, missing column with AutoEvolve
//     off, update/delete on a table without key): then stop and report.
//     A failed Write has applied nothing.
//  3. When a queue may have been written by another Sink instance meanwhile
//     (a consumer rebalance), use a fresh Sink: the offset cache of this one
//     may be stale (the progress row itself never moves backwards).
//
// Type mapping to PostgreSQL: Int8/Int16 SMALLINT, Int32 INTEGER, Int64
// BIGINT, Uint64 NUMERIC(20), Decimal NUMERIC(p,s), Float32 REAL, Float64
// DOUBLE PRECISION, Bool BOOLEAN, String/Enum/Set TEXT, Bytes/Geometry
// BYTEA, Date DATE, Time TIME(6) (values outside 0..24h are an error naming
// the column; with Config.TimeAsInterval, INTERVAL, which holds MySQL's
// whole -838:59:59..838:59:59 range and more), Timestamp TIMESTAMP(6), ZonedTimestamp TIMESTAMPTZ(6), Json
// JSONB, Year SMALLINT, Bits BIT VARYING(n) written as a string of exactly n
// bits (kept over BIGINT so the width reads back). To MySQL: the source type
// (Param "source.type") when it is a plain type (checked by a small lexer),
// else BIGINT UNSIGNED, DECIMAL(p,s), DATETIME(6), TIMESTAMP(6), JSON,
// LONGTEXT, LONGBLOB, BIT(n)…; key columns get VARCHAR/VARBINARY(255).
// Geometry always goes to a blob column as WKB. Created tables have NOT NULL
// only on key columns.
//
// Dates and times travel as text in the server's input format, so that no
// driver applies a time zone; for MySQL the session time zone is set to UTC
// and zoned timestamps are written as UTC.
package sink
