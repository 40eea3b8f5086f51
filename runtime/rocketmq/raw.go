package rocketmq

import (
	"context"
	"fmt"
	"log/slog"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// RawSender is the transport's send path without a pipeline around it: the
// messages a Publisher would send for records (same bodies, properties,
// keys and queues), grouped per queue in the batches it would send, and
// its send with retries. It is for baselines that measure the plain client
// beside the transport (runtime/rocketmq/rawbench, `sluice bench`), not
// for pipelines: it keeps no order across calls, no acknowledgement and
// no position.
type RawSender struct {
	cfg   Config
	adm   admin.Admin
	prod  rmq.Producer
	p     *Publisher
	topic string
	qs    []queue
}

// RawBatches are the messages of RawSender.Batches.
type RawBatches struct {
	PerQueue [][][]*primitive.Message // per queue of the topic, the batches sent one after another
	Messages int                      // messages in all
	Sends    int                      // batches in all
	Bytes    int64                    // the messages' bodies and properties
}

// NewRawSender connects to the brokers of cfg and creates topic (with the
// queues cfg asks for) unless it exists. Its consumer group
// (ConsumerOptions) is named after topic, so topic should be fresh. Close
// it after use.
func NewRawSender(ctx context.Context, cfg Config, topic string, log *slog.Logger) (*RawSender, error) {
	cfg.Pipeline = sanitizeName(topic)
	cfg.Group = ""
	cfg, log, adm, err := setup(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	set, err := ensureTopic(ctx, adm, cfg, topic)
	if err != nil {
		adm.Close()
		return nil, err
	}
	prod, err := startProducer(cfg, "raw", "raw")
	if err != nil {
		adm.Close()
		return nil, err
	}
	p := &Publisher{cfg: cfg, log: log, send: prod, topics: newTopicCache(cfg, adm), sendCtx: ctx}
	if cfg.Format == FormatCompact || cfg.Format == FormatPacked {
		p.compact = newCompactEncoder(SchemaTopic(cfg.TopicPrefix), p.storeSchema)
	}
	return &RawSender{cfg: cfg, adm: adm, prod: prod, p: p, topic: topic, qs: set.queues()}, nil
}

// Close stops the producer and the admin client.
func (s *RawSender) Close() {
	_ = s.prod.Shutdown()
	s.adm.Close()
}

// ConsumerOptions are the options of a push consumer with the
// subscriber's pull settings and a group of this sender's own.
func (s *RawSender) ConsumerOptions() []consumer.Option { return consumerOptions(s.cfg) }

// Batches builds the messages Publish would send for the data records of
// recs, marked as Publish marks them (transaction ends, packing), per
// queue, in batches as large as the publisher's; maxPerSend, when above
// zero, caps the messages of a batch below that.
func (s *RawSender) Batches(ctx context.Context, recs []schema.Record, maxPerSend int) (RawBatches, error) {
	var res RawBatches
	topic, qs := s.topic, s.qs
	perQueue := make([][]*primitive.Message, len(qs))
	dest := make([]*primitive.Message, len(recs))
	for i := range recs {
		rec := &recs[i]
		if !rec.Op.IsData() {
			continue
		}
		m, _, err := s.p.message(ctx, rec, topic)
		if err != nil {
			return res, err
		}
		q := runtime.QueueFor(rec, len(qs))
		m.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: qs[q].Broker, QueueId: qs[q].ID}
		perQueue[q] = append(perQueue[q], m)
		dest[i] = m
	}
	for i := range runtime.TransactionEnds(recs, func(i int) (*primitive.MessageQueue, bool) {
		if dest[i] == nil {
			return nil, false
		}
		return dest[i].Queue, true
	}) {
		dest[i].WithProperty(HeaderPropertyPrefix+schema.HeaderTxEnd, "true")
	}
	if s.cfg.Format == FormatPacked { // as the publisher packs a queue's backlog
		for q, msgs := range perQueue {
			if len(msgs) > 0 {
				perQueue[q], _, _ = packMessages(topic, msgs, min(PackBytes, s.cfg.MaxMessageBytes))
			}
		}
	}
	for _, msgs := range perQueue {
		var bs [][]*primitive.Message
		for start := 0; start < len(msgs); {
			n, size := 0, 0
			limit := maxBatchMsgs
			if maxPerSend > 0 {
				limit = min(limit, maxPerSend)
			}
			for start+n < len(msgs) && n < limit {
				sz := messageSize(msgs[start+n]) + 64
				if n > 0 && size+sz > maxBatchBytes {
					break
				}
				size += sz
				n++
			}
			bs = append(bs, msgs[start:start+n])
			res.Bytes += int64(size - 64*n)
			start += n
		}
		res.Messages += len(msgs)
		res.Sends += len(bs)
		res.PerQueue = append(res.PerQueue, bs)
	}
	if res.Messages == 0 {
		return res, fmt.Errorf("rocketmq: raw sender: no data record to send")
	}
	return res, nil
}

// Sender returns the send of a batch to queue q (an index of
// RawBatches.PerQueue), retried with the publisher's backoff, until ctx
// ends. Call it once, before the sends; the function it returns may be
// called from several goroutines.
func (s *RawSender) Sender(ctx context.Context) func(q int, batch []*primitive.Message) error {
	s.p.sendCtx = ctx
	return func(q int, batch []*primitive.Message) error { return s.p.sendRetry(s.topic, s.qs[q], batch) }
}
