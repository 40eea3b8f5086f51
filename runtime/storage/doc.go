// Package storage keeps what outlives a run, as Kafka Connect's storage
// does: source positions in a folder (FileStore, locked per pipeline) or a
// database table (SQLStore, claimed per run so that an older run's saves
// are fenced), a source's schema history in a database table (SQLHistory),
// and the Lease that fences a cluster task's durable writes.
package storage
