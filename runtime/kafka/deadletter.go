package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// Headers of a dead letter (besides IDHeader), named as the RocketMQ
// transport's dead-letter properties.
const (
	DeadLetterErrorHeader     = "sluice_error"     // why the sink left the record out
	DeadLetterTableHeader     = "sluice_table"     // db.table
	DeadLetterTopicHeader     = "sluice_topic"     // where the record was consumed from, if known
	DeadLetterPartitionHeader = "sluice_partition" // its partition
	DeadLetterOffsetHeader    = "sluice_offset"    // its offset
	// maxErrorHeader bounds sluice_error.
	maxErrorHeader = 4096
)

// DeadLetterTopic is the dead-letter topic of a topic prefix: prefix_dlq,
// made a valid topic name. It never matches the pipeline's own topics
// (<prefix>.<db>.<table>), so the sink does not consume it.
func DeadLetterTopic(prefix string) string {
	return strings.TrimSuffix(TopicName("", prefix+"_dlq", ""), ".")
}

// SchemaTopic is the topic holding the schemas of compact records:
// prefix_schemas, made a valid topic name, compacted, one record per
// schema pair keyed by its ID, value {"id":…,"key":<key schema>,
// "value":<value schema>} (key null when the table has none). Like the
// dead-letter topic it never matches the pipeline's own topics.
func SchemaTopic(prefix string) string {
	return strings.TrimSuffix(TopicName("", prefix+"_schemas", ""), ".")
}

// DeadLetter produces the records a sink rejects for good to the topic
// DeadLetterTopic(cfg.TopicPrefix), one Kafka record per record: key and
// value are the codec's, as on the pipeline's topics (so Tail and the codec
// read them back), plus the headers above. Its Send fits
// sink.Config.DeadLetter. Safe for concurrent use.
type DeadLetter struct {
	cfg   Config
	log   *slog.Logger
	topic string
	parts int32
	cl    *kgo.Client
	once  sync.Once
}

// NewDeadLetter connects a producer and creates the dead-letter topic.
func NewDeadLetter(ctx context.Context, cfg Config, log *slog.Logger) (*DeadLetter, error) {
	cfg, log, err := cfg.setup(log)
	if err != nil {
		return nil, err
	}
	cl, err := connect(ctx, cfg, append(clientOptions(cfg, log),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks())))
	if err != nil {
		return nil, err
	}
	d := &DeadLetter{cfg: cfg, log: log, topic: DeadLetterTopic(cfg.TopicPrefix), cl: cl}
	if d.parts, err = EnsureTopic(ctx, kadm.NewClient(cl), d.topic, int32(cfg.Partitions), int16(cfg.ReplicationFactor)); err != nil {
		cl.Close()
		return nil, schema.Wrapf("kafka", err, "dead-letter topic")
	}
	return d, nil
}

// Topic is the dead-letter topic.
func (d *DeadLetter) Topic() string { return d.topic }

// Send stores rec with the cause of its rejection and returns once the
// brokers confirmed it (the client retries until ctx is done). A record the
// codec cannot encode, or one too large for the broker, is stored with its
// table, key, source position and error as its value, so that it is never
// lost silently.
func (d *DeadLetter) Send(ctx context.Context, rec schema.Record, cause error) error {
	r := d.record(&rec, cause)
	err := d.cl.ProduceSync(ctx, r).FirstErr()
	if errors.Is(err, kerr.MessageTooLarge) {
		r.Key, r.Value = nil, runtime.DeadLetterSummary(&rec, string(r.Headers[0].Value))
		err = d.cl.ProduceSync(ctx, r).FirstErr()
	}
	if err != nil {
		return fmt.Errorf("kafka: dead letter of %s key %q to %q: %w", rec.Table, rec.KeyString(), d.topic, err)
	}
	return nil
}

func (d *DeadLetter) record(rec *schema.Record, cause error) *kgo.Record {
	key, val := runtime.DeadLetterPayload(d.cfg.Codec.Encode, rec)
	text := runtime.DeadLetterCause(cause, maxErrorHeader)
	hs := []kgo.RecordHeader{{Key: DeadLetterErrorHeader, Value: []byte(text)}, {Key: DeadLetterTableHeader, Value: []byte(rec.Table.String())}}
	if !rec.ID.IsZero() {
		hs = append(hs, kgo.RecordHeader{Key: IDHeader, Value: []byte(rec.ID.String())})
	}
	if dl := rec.Delivery; dl != nil {
		hs = append(hs, kgo.RecordHeader{Key: DeadLetterTopicHeader, Value: []byte(dl.Topic)},
			kgo.RecordHeader{Key: DeadLetterPartitionHeader, Value: []byte(strconv.Itoa(dl.Queue))},
			kgo.RecordHeader{Key: DeadLetterOffsetHeader, Value: []byte(strconv.FormatInt(dl.Offset, 10))})
	}
	part := int32(runtime.QueueFor(rec, int(d.parts)))
	return &kgo.Record{Topic: d.topic, Partition: part, Key: key, Value: val, Headers: hs}
}

// Close shuts the client down. Safe to call more than once.
func (d *DeadLetter) Close() error {
	d.once.Do(d.cl.Close)
	return nil
}
