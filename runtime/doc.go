// Package runtime holds the contracts between the engine and the pieces it
// runs, all in contracts.go: what it needs from a Source, a Sink, a
// Publisher and a Subscriber (a transport), a PositionStore, and the
// optional capabilities a piece may add (progress, backlog, topics, groups,
// signals, claims). Beside them are the small tools every transport shares:
// the queue a record's key maps to (QueueFor), barrier copies, transaction
// ends, pending acknowledgements, dead-letter payloads, byte sizes and the
// error classification (ClassOf, IsFatal).
//
// The rest of the runtime lives in packages of their own, each importing
// this one and never each other except as shown:
//
//   - runtime/engine runs a source, a transport and a sink as a pipeline
//     with a bounded in-flight window, saves positions, and restarts or
//     stops failed pipelines (Worker); it keeps status and metrics.
//   - runtime/storage keeps positions (files or a database table), a
//     source's schema history in a database, and the Lease that fences a
//     cluster task's writes.
//   - runtime/plugin reads a pipeline's YAML (Config), maps each section's
//     type to the Plugin that owns its keys and constructors (Registry),
//     and documents every key; it imports runtime/storage for the Lease.
//   - runtime/embedded, runtime/rocketmq and runtime/kafka are transports;
//     runtime/admin serves REST; runtime/cluster shares tasks between
//     workers through leases in a database.
//
// Errors are read with ClassOf (schema.ClassOf; connectors classify their
// errors where they make them): a source's end of input (schema.ErrEndOfInput)
// drains and saves like a shutdown and ends the pipeline as FINISHED; a
// fatal error ends it as FAILED; any other error makes the engine's Worker
// rebuild it after a bounded backoff (RESTARTING meanwhile).
package runtime
