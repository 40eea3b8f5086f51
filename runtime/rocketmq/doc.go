// Package rocketmq is sluice's Apache RocketMQ transport: a Publisher that
// sends records to one topic per table (or per database) and a Subscriber
// that hands them, in order per queue, to a sink.
//
// Layout on the broker:
//   - topic: TopicName(prefix, database, table, mode); topics are created with
//     Config.Queues queues when first used (or at start for Config.Tables);
//   - queue: runtime.QueueFor (fnv32a of database.table NUL key) modulo the
//     number of queues of the topic's queue set (every write queue of every
//     broker it was created on, recorded on the name servers when first
//     used: see queueSet), so every change of one row lands on one queue, in
//     source order, whichever brokers are up;
//   - message: key = Record.KeyString(), tag = table name, body = the
//     converter's value, property "sluice_key" = the converter's key,
//     property "sluice_id" = Record.ID (required: the subscriber refuses a
//     message without it); Delivery names topic, broker, queue and offset;
//   - FormatCompact (DefaultFormat): body and sluice_key are the payloads
//     only, property "sluice_schema" names the schemas, stored in
//     SchemaTopic(prefix) before the first message naming them (see
//     FormatCompact); FormatJSON sends the whole envelopes instead.
//   - FormatPacked: the compact format's records of one queue, sent
//     together in messages of about PackBytes, one JSON line a record
//     (see FormatPacked); records of a pack share its Delivery offset.
//
// Tail reads the topics for audit and debugging ("sluice tail") by pulling
// from the brokers directly: it joins no consumer group and commits no
// offset, so the sink's progress never moves. DeadLetter stores the records
// a sink rejects for good on the topic DeadLetterTopic(prefix), with the
// cause and origin in message properties.
//
// Testing: the consumer tests cannot run under -race: the client has a known
// data race in its process queue (apache/rocketmq-client-go#1213).
//
// Duties of the caller:
//  1. Publish records in source order; every data record is sent, markers
//     (BEGIN/END/heartbeat) are not, they are acked with their batch.
//  2. Advance the source position only from ack(nil). Acks come in Publish
//     order; after one batch fails every later batch is acked with an error
//     too (the publisher stops sending), so restart from the last acked
//     position. When Publish itself returns an error, ack is never called.
//  3. Make the sink idempotent: delivery is at least once. A crash redelivers
//     what the consumer had not yet committed (offsets reach the broker every
//     ~5 s and at shutdown).
//  4. Keep a topic's queues fixed: a publisher meeting queues its recorded
//     set lacks, or another count on a broker, fails with
//     ErrQueueSetChanged, at its start or, checking every 30 s, while it
//     runs; record a new set (mqadmin updateOrderConf) only once the
//     topic is drained.
//  5. Call Close on both sides: Publisher.Close waits for outstanding acks;
//     Subscriber.Close (or cancelling Consume's context) stops pulling and
//     waits for the handlers in flight.
package rocketmq
