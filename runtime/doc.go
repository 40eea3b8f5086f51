// Package runtime runs connectors as tasks: it defines what it needs from a
// source, a sink and a transport (contracts.go), moves records between them
// with acknowledgements, and keeps source positions. The transports are its
// sibling packages implementing those contracts: runtime/embedded (in
// process) and runtime/rocketmq; the engine depends on neither.
//
// Duties of the pieces, in order:
//
//  1. A Source gives records in source order; only records at transaction
//     boundaries carry a Position.
//  2. The runtime hands each batch to a Publisher with an AckFunc and tracks
//     it in a bounded window; Publish blocks when the window is full, so a
//     slow transport or sink slows the source instead of growing memory.
//  3. When acks arrive, possibly out of order, only the contiguous acked
//     prefix counts: its newest Position is saved in the PositionStore.
//  4. A Subscriber hands batches of one queue, in order, to the Sink; a
//     batch is acknowledged only after Sink.Write returned nil.
//  5. On shutdown the source stops first, outstanding batches are awaited,
//     the position is saved, then the sink side stops.
//
// Errors are read with ClassOf (schema.ClassOf; connectors classify their
// errors where they make them): a source's end of input (schema.ErrEndOfInput)
// drains and saves like a shutdown and ends the pipeline as FINISHED; a
// fatal error ends it as FAILED; any other error makes the Worker rebuild
// it after a bounded backoff (RESTARTING meanwhile).
//
// Configuration: a pipeline's YAML (Config) has one section per piece; a
// Registry maps each section's type to the Plugin that owns its keys (its
// config struct's yaml tags, decoded strictly by Section.Decode), their
// checks and its constructor (NewSource, NewSink or NewTransport, given the
// decoded config and the Task), and ValidateConnector answers the REST
// validate. The command registers the connectors and builds a task by
// calling the constructors of its sections' plugins. A source task's schema history may live in a
// database (SQLHistory), its appends fenced by the task's Lease.
package runtime
