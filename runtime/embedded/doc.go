// Package embedded is sluice's in-process transport: bounded queues
// between a source and a sink in one process, a sibling of runtime/rocketmq
// implementing the same contracts (runtime.Publisher, runtime.Subscriber).
//
// A record goes to queue runtime.QueueFor of the Transport's queues (every
// queue for a barrier, each copy marked with runtime.BarrierCopy), so every
// change of one row stays in order on one queue; its Delivery names Topic,
// the queue and a per-queue offset. A published batch is acknowledged only
// after the sink applied every record of it, so the source position never
// runs ahead of the target. A failing batch is retried with a backoff
// (100ms to 10s) until it succeeds, its context ends, or it fails for good
// (runtime.IsFatal), which ends Consume with that error.
//
// Config is the transport section of type embedded and Plugin its
// connector plugin, for the command to register.
package embedded
