// Package schema is sluice's record and type model: the contract between every
// source, converter, transport and sink. It imports nothing else of sluice.
//
// A Record is a value: one change to one row (or a marker) with the schemas of
// its key and row, the before and after images, source metadata and an opaque
// position. Values inside a Row follow the Go representation documented on
// each Type and Logical constant, so that every component agrees on them:
//
//   - Int8, Int16, Int32, Int64: int64 (range given by the type)
//   - Uint64: uint64 (exact, BIGINT UNSIGNED up to 18446744073709551615)
//   - Float32: float32; Float64: float64; Bool: bool
//   - String: string; Bytes: []byte
//   - Decimal: Dec (exact digits with the declared scale)
//   - Date: int32 days since 1970-01-01
//   - Time: int64 microseconds, may be negative or beyond 24 hours
//   - Timestamp: int64 microseconds since the epoch, wall clock without zone (DATETIME)
//   - ZonedTimestamp: int64 microseconds since the epoch, UTC instant (TIMESTAMP)
//   - Json, Enum, Set: string (a Set is its labels joined by ",")
//   - Bits: uint64 (the low "length" bits)
//   - Year: int64
//   - Geometry: Geom (WKB and SRID)
//
// nil is SQL NULL. A Row is aligned with the Fields of its struct Schema.
package schema
