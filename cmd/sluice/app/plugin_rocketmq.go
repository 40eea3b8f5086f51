package app

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
)

// rocketmqPlugin is the RocketMQ transport: rocketmq.Config.
func rocketmqPlugin() plugin.Plugin {
	return plugin.Spec[rocketmq.Config]{Kind: plugin.KindTransport, Name: "rocketmq", Types: []string{"rocketmq"},
		Validate: func(c *rocketmq.Config, sec *plugin.Section, doc *plugin.Config) error {
			c.Pipeline = doc.Name
			if err := plugin.CheckInFlight(sec, c.MaxCachedRecords, int64(c.MaxCachedBytes)); err != nil {
				return err
			}
			return c.Validate()
		},
		NewTransport: newRocketMQ,
		Keys:         rocketmqKeys}.Plugin()
}

// newRocketMQ is the rocketmq plugin's constructor: a producer for the
// task's source, a consumer for its sink. With both in one process and no
// topics configured, the consumer reads the topics of the tables the source
// captures at start and of every table it publishes later.
func newRocketMQ(ctx context.Context, rc *rocketmq.Config, t *plugin.Task) (runtime.Publisher, runtime.Subscriber, error) {
	c := *rc
	var sub *rocketmq.Subscriber
	if t.Sink {
		sc := c
		if t.Source && len(c.Topics) == 0 && c.TopicsRegex == "" {
			tables, err := capturedTables(ctx, t)
			if err != nil {
				return nil, nil, err
			}
			sc.Tables, sc.TopicsFromPublisher = tables, true
		}
		s, err := rocketmq.NewSubscriber(ctx, sc, t.Log.With("component", "subscriber"))
		if err != nil {
			return nil, nil, err
		}
		sub = s
		if sc.TopicsFromPublisher {
			c.OnTopic = func(topic string) { s.AddTopics(topic) }
		}
	}
	var pub runtime.Publisher
	if t.Source {
		p, err := rocketmq.NewPublisher(ctx, c, t.Log.With("component", "publisher"))
		if err != nil {
			if sub != nil {
				_ = sub.Close(ctx)
			}
			return nil, nil, err
		}
		pub = p
	}
	if sub == nil {
		return pub, nil, nil
	}
	return pub, sub, nil
}

// capturedTables lists the tables the task's source captures now.
func capturedTables(ctx context.Context, t *plugin.Task) ([]schema.TableID, error) {
	bc, ok := plugin.SectionConfig[binlog.Config](t, plugin.KindSource)
	if !ok {
		return nil, nil
	}
	lister, err := binlogTables(bc, t)
	if err != nil {
		return nil, err
	}
	tables, err := lister.CapturedTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the captured tables, whose topics the sink consumes: %w", err)
	}
	return tables, nil
}

// topicPrefix is the topic prefix of c in a pipeline named name.
func topicPrefix(c *rocketmq.Config, name string) string {
	if c.TopicPrefix != "" {
		return c.TopicPrefix
	}
	return name
}

// rocketmqKeys documents the rocketmq transport's keys (rocketmq.Config).
var rocketmqKeys = plugin.KeyDocs{
	"name_servers":   {Doc: "Name server addresses, host:port."},
	"topic_mode":     {Doc: "One topic per table, or per database.", Default: "table", Values: []string{"table", "database"}},
	"topic_prefix":   {Doc: "Prefix of the topic names, <prefix>_<database>_<table>; default: the pipeline's name."},
	"queues":         {Doc: "Queues of each topic the publisher creates.", Default: "4"},
	"cluster":        {Doc: "Broker cluster the publisher creates topics in.", Default: "DefaultCluster"},
	"group":          {Doc: "Consumer group of the sink; default: <pipeline>-sink."},
	"topics":         {Doc: "Topics the sink consumes; default: the topics of the source's tables, which a sink without its source in the process cannot know."},
	"topics_regex":   {Doc: "Instead of topics: consume every topic whose whole name matches, looking for new ones every topics_refresh."},
	"topics_refresh": {Doc: "How often the sink looks for new topics.", Default: rocketmq.DefaultTopicsRefresh.String()},
	"batch_size":     {Doc: "Messages handed to the sink at once at most (the client's limit is 1024).", Default: "256"},
	"linger":         {Doc: "Wait between two pulls of one queue, so that records arriving meanwhile form one batch; at most 65.535s.", Default: "0s"},
	"max_in_flight": {Doc: "Records read from the source and not yet acknowledged, and messages the consumer holds unapplied, at most.",
		Default: strconv.Itoa(rocketmq.DefaultMaxCachedRecords)},
	"max_in_flight_bytes": {Doc: "Bytes of the same records and messages at most (the consumer counts whole MiB).", Default: runtime.ByteSize(rocketmq.DefaultMaxCachedBytes).String()},
	"format": {Doc: "Message format: payloads with schemas by reference (Debezium's JSON without schemas, the schemas in topic <prefix>_schemas), Debezium JSON envelopes with their schemas, or several compact records per message.",
		Default: rocketmq.DefaultFormat, Values: []string{rocketmq.FormatCompact, rocketmq.FormatJSON, rocketmq.FormatPacked}},
	"max_message_bytes": {Doc: "Largest message the publisher sends, below the broker's maxMessageSize.", Default: strconv.Itoa(rocketmq.DefaultMaxMessageBytes)},
	"oversize_policy": {Doc: "What a larger record does: fail, go to the dead-letter topic, or have columns set to NULL until it fits.",
		Default: rocketmq.OversizeFail, Values: []string{rocketmq.OversizeFail, rocketmq.OversizeDLQ, rocketmq.OversizeTruncateColumns}},
	"access_key": {Doc: "ACL access key of every client, for brokers with authentication (with secret_key)."},
	"secret_key": {Doc: "ACL secret key that signs the clients' requests."},
}
