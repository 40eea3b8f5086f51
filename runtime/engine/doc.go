// Package engine runs connectors as tasks: it moves records from a Source
// through a transport to a Sink with acknowledgements, and keeps source
// positions. It depends only on the contracts of package runtime, never on
// a transport, a store or a connector.
//
// Duties of the pieces, in order:
//
//  1. A Source gives records in source order; only records at transaction
//     boundaries carry a Position.
//  2. The Pipeline hands each batch to a Publisher with an AckFunc and
//     tracks it in a bounded window; Publish blocks when the window is
//     full, so a slow transport or sink slows the source instead of growing
//     memory.
//  3. When acks arrive, possibly out of order, only the contiguous acked
//     prefix counts: its newest Position is saved in the PositionStore.
//  4. A Subscriber hands batches of one queue, in order, to the Sink; a
//     batch is acknowledged only after Sink.Write returned nil.
//  5. On shutdown the source stops first, outstanding batches are awaited,
//     the position is saved, then the sink side stops.
//
// A Worker runs pipelines, restarts a failed one after a bounded backoff
// (RESTARTING meanwhile) unless its error is fatal, and reports status and
// metrics (Prometheus text, Kafka Connect's shapes through runtime/admin).
package engine
