package rocketmq

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// Message properties of a dead letter (besides KeyProperty, the converter's
// key, as on every message).
const (
	DeadLetterErrorProperty  = "sluice_error"  // why the sink left the record out
	DeadLetterTableProperty  = "sluice_table"  // db.table
	DeadLetterTopicProperty  = "sluice_topic"  // where the record was consumed from, if known
	DeadLetterQueueProperty  = "sluice_queue"  // its queue id
	DeadLetterBrokerProperty = "sluice_broker" // the broker of that queue
	DeadLetterOffsetProperty = "sluice_offset" // its queue offset
	// maxErrorProperty bounds sluice_error: the broker limits a message's
	// properties to 32 KiB in all.
	maxErrorProperty = 4096
)

// DeadLetterTopic is the dead-letter topic of a topic prefix: prefix_dlq,
// made a valid topic name.
func DeadLetterTopic(prefix string) string { return sanitizeName(prefix + "_dlq") }

// DeadLetter publishes the records a sink rejects for good to the topic
// DeadLetterTopic(cfg.TopicPrefix), one message per record: the body and
// sluice_key are the codec's, as on the pipeline's topics (so Tail and the
// codec read them back), plus the properties above. Its Send fits
// sink.Config.DeadLetter. Safe for concurrent use.
type DeadLetter struct {
	cfg    Config
	log    *slog.Logger
	topic  string
	prod   rmq.Producer
	adm    interface{ Close() error }
	topics *topicCache
	once   sync.Once
}

// NewDeadLetter starts a producer and creates the dead-letter topic.
func NewDeadLetter(ctx context.Context, cfg Config, log *slog.Logger) (*DeadLetter, error) {
	cfg, log, adm, err := setup(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	d := &DeadLetter{cfg: cfg, log: log, topic: DeadLetterTopic(cfg.TopicPrefix), adm: adm, topics: newTopicCache(cfg, adm)}
	if _, err := d.topics.queues(ctx, d.topic); err != nil {
		_ = adm.Close()
		return nil, fmt.Errorf("rocketmq: dead-letter topic: %w", err)
	}
	prod, err := startProducer(cfg, "dlq", "dlq")
	if err != nil {
		_ = adm.Close()
		return nil, err
	}
	d.prod = prod
	return d, nil
}

// Topic is the dead-letter topic.
func (d *DeadLetter) Topic() string { return d.topic }

// Send stores rec with the cause of its rejection and returns once the
// broker confirmed it (retrying SendRetries times with a backoff). A record
// the codec cannot encode is stored with its table, key and the encoding
// error as its body, so that it is never lost silently.
func (d *DeadLetter) Send(ctx context.Context, rec schema.Record, cause error) error {
	msg := d.message(&rec, cause)
	qs, err := d.topics.queues(ctx, d.topic)
	if err != nil {
		return err
	}
	if len(qs) == 0 {
		return fmt.Errorf("rocketmq: dead-letter topic %q has no writable queue", d.topic)
	}
	q := qs[runtime.QueueFor(&rec, len(qs))]
	msg.Queue = &primitive.MessageQueue{Topic: d.topic, BrokerName: q.Broker, QueueId: q.ID}
	delay := firstRetryDelay
	var last error
	for attempt := 0; attempt <= d.cfg.SendRetries; attempt++ {
		res, err := d.prod.SendSync(ctx, msg)
		if err == nil && res != nil && res.Status == primitive.SendOK {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("broker answered status %d", sendStatus(res))
		}
		last = err
		if attempt == d.cfg.SendRetries {
			break
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return fmt.Errorf("%w: dead letter of %s key %q to %q: %w", ErrSend, rec.Table, rec.KeyString(), d.topic, ctx.Err())
		}
		delay = min(2*delay, maxRetryDelay)
	}
	return fmt.Errorf("%w: dead letter of %s key %q to %q after %d attempts: %w", ErrSend, rec.Table, rec.KeyString(), d.topic, d.cfg.SendRetries+1, last)
}

func (d *DeadLetter) message(rec *schema.Record, cause error) *primitive.Message {
	key, val := runtime.DeadLetterPayload(d.cfg.Codec.Encode, rec)
	msg := primitive.NewMessage(d.topic, val)
	if ks := rec.KeyString(); ks != "" && len(ks) <= maxIndexKey {
		msg.WithKeys([]string{ks})
	}
	if rec.Table.Table != "" {
		msg.WithTag(rec.Table.Table)
	}
	if key != nil {
		msg.WithProperty(KeyProperty, string(key))
	}
	text := runtime.DeadLetterCause(cause, maxErrorProperty)
	// \x01 and \x02 separate properties on the wire.
	text = strings.Map(func(r rune) rune {
		if r == 1 || r == 2 {
			return ' '
		}
		return r
	}, text)
	msg.WithProperty(DeadLetterErrorProperty, text)
	if messageSize(msg)+len(rec.Table.String())+64 > d.cfg.MaxMessageBytes {
		// Too large for the broker itself: keep what finds the row again.
		msg.Body = runtime.DeadLetterSummary(rec, text)
		if len(key) > maxIndexKey {
			msg.RemoveProperty(KeyProperty)
		}
	}
	msg.WithProperty(DeadLetterTableProperty, rec.Table.String())
	if !rec.ID.IsZero() {
		msg.WithProperty(IDProperty, rec.ID.String())
	}
	if dl := rec.Delivery; dl != nil {
		msg.WithProperty(DeadLetterTopicProperty, dl.Topic)
		msg.WithProperty(DeadLetterQueueProperty, strconv.Itoa(dl.Queue))
		if dl.Broker != "" {
			msg.WithProperty(DeadLetterBrokerProperty, dl.Broker)
		}
		msg.WithProperty(DeadLetterOffsetProperty, strconv.FormatInt(dl.Offset, 10))
	}
	return msg
}

// Close shuts the producer down. Safe to call more than once.
func (d *DeadLetter) Close() error {
	d.once.Do(func() {
		_ = d.prod.Shutdown()
		_ = d.adm.Close()
	})
	return nil
}
