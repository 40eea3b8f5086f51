// Package kafka is sluice's Apache Kafka transport: a Publisher that sends
// records to one topic per table and a Subscriber that hands them, in order
// per partition, to a sink. It runs on franz-go (pure Go, idempotent
// producer by default, cooperative consumer groups).
//
// Layout on the cluster:
//   - topic: TopicName(prefix, database, table), "<prefix>.<db>.<table>" as
//     Debezium names them (characters outside [A-Za-z0-9._-] become '_');
//     missing topics are created with Config.Partitions partitions when
//     first used;
//   - partition: runtime.QueueFor (the one partitioner of every transport:
//     a hash of table and key) modulo the topic's partitions, so every
//     change of one row lands on one partition, in source order;
//   - record: key and value are the converter's (Debezium JSON with
//     schemas, as Kafka Connect's JsonConverter with schemas.enable=true);
//     header "sluice_id" carries Record.ID, headers "sluice_h_<name>" carry
//     Record.Headers; a record without the header (written by Debezium's
//     own binlog connectors) gets an ID derived from its source block
//     (schema.IDFromSource) or is refused, and tombstones are skipped;
//   - barriers (TRUNCATE, schema changes) go as copies to every partition
//     of the topic of each table they are ordered with;
//   - dead letters (the sink's on_error: dlq): DeadLetter stores a rejected
//     record on DeadLetterTopic(prefix), "<prefix>_dlq", with its cause in
//     header "sluice_error".
//
// The sink's effect is exactly once through its progress rows, keyed by
// topic and partition (schema.Delivery); Kafka's consumer offsets only
// say where a restarted consumer resumes, and are committed after the sink
// applied a batch.
//
// Security (security.go): Config's ssl_* keys give every client TLS, its
// sasl_* keys SASL PLAIN or SCRAM-SHA-256/512; a client checks them when it
// starts, and a broker that refuses the password is a fatal ErrAuth.
//
// Duties of the caller are those of the other transports: publish in source
// order, advance the source position only from ack(nil) (acks come in
// Publish order; after a failed batch every later one fails too), and
// close both sides.
package kafka
