package app

import (
	"context"
	"strconv"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// kafkaPlugin is the Kafka transport: kafka.Config.
func kafkaPlugin() plugin.Plugin {
	return plugin.Spec[kafka.Config]{Kind: plugin.KindTransport, Name: "kafka", Types: []string{"kafka"},
		Validate: func(c *kafka.Config, sec *plugin.Section, doc *plugin.Config) error {
			c.Pipeline = doc.Name
			if err := plugin.CheckInFlight(sec, c.MaxInFlight, int64(c.MaxInFlightBytes)); err != nil {
				return err
			}
			return c.Validate()
		},
		NewTransport: newKafka,
		Keys:         kafkaKeys}.Plugin()
}

// newKafka is the kafka plugin's constructor: a producer for the task's
// source, a consumer for its sink. With both in one process, the consumer
// looks for each topic the producer creates at once.
func newKafka(ctx context.Context, kc *kafka.Config, t *plugin.Task) (runtime.Publisher, runtime.Subscriber, error) {
	c := *kc
	var sub *kafka.Subscriber
	if t.Sink {
		s, err := kafka.NewSubscriber(ctx, c, t.Log.With("component", "subscriber"))
		if err != nil {
			return nil, nil, err
		}
		sub = s
		c.OnTopic = s.TopicAdded
	}
	if !t.Source {
		return nil, sub, nil
	}
	p, err := kafka.NewPublisher(ctx, c, t.Log.With("component", "publisher"))
	if err != nil {
		if sub != nil {
			_ = sub.Close(ctx)
		}
		return nil, nil, err
	}
	if sub == nil {
		return p, nil, nil
	}
	return p, sub, nil
}

// kafkaKeys documents the kafka transport's keys (kafka.Config).
var kafkaKeys = plugin.KeyDocs{
	"brokers":            {Doc: "Bootstrap broker addresses, host:port."},
	"topic_prefix":       {Doc: "Prefix of the topic names, <prefix>.<database>.<table> as Debezium names them; default: the pipeline's name."},
	"partitions":         {Doc: "Partitions of each topic the publisher creates; a topic that exists keeps its own count.", Default: strconv.Itoa(kafka.DefaultPartitions)},
	"replication_factor": {Doc: "Replication factor of the topics the publisher creates; 0 takes the broker's default.", Default: "0"},
	"group":              {Doc: "Consumer group of the sink; default: <pipeline>-sink."},
	"topics":             {Doc: "Topics the sink consumes; default: every topic of the pipeline, <topic_prefix>.<database>.<table>."},
	"format": {Doc: "Message format: json, Debezium JSON envelopes with their schemas in every record (Kafka Connect's JsonConverter with schemas.enable=true, what Connect sinks such as Debezium's JDBC sink read); compact, the payloads alone (schemas.enable=false) with the schemas by reference, stored once in the compacted topic <topic_prefix>_schemas and named by the sluice_schema header. The sink reads both.",
		Default: kafka.FormatJSON, Values: []string{kafka.FormatJSON, kafka.FormatCompact}},
	"compression": {Doc: "Compression of the producer's batches (a batch that does not shrink is sent as it is); the sink reads every one.",
		Default: kafka.DefaultCompression, Values: kafka.Compressions()},
	"max_batch":     {Doc: "Records of one partition handed to the sink at once at most.", Default: strconv.Itoa(kafka.DefaultMaxBatch)},
	"max_in_flight": {Doc: "Records read from the source and not yet acknowledged (and the producer's buffer) at most.", Default: strconv.Itoa(kafka.DefaultMaxInFlight)},
	"session_timeout": {Doc: "How long the sink's consumer group waits for a sink process that stopped answering (killed) before it gives that process's partitions to the others; the broker accepts 6s to 30m by default.",
		Default: kafka.DefaultSessionTimeout.String()},
	"max_in_flight_bytes": {Doc: "Bytes of the same records, and of what the consumer fetches ahead of the sink, at most.",
		Default: runtime.ByteSize(kafka.DefaultMaxInFlightBytes).String()},
	"ssl_mode": {Doc: "TLS to the brokers (their SSL or SASL_SSL listener), in MySQL's ssl-mode words: required encrypts without checking the certificate, verify_ca checks that ssl_ca signed it, verify_identity also that it names the broker's host.",
		Default: "disabled", Values: []string{"disabled", "required", "verify_ca", "verify_identity"}},
	"ssl_ca":         {Doc: "PEM file of the CA that signs the brokers' certificates; default: the system's roots."},
	"ssl_cert":       {Doc: "PEM file of a client certificate, for brokers that ask for one (ssl.client.auth)."},
	"ssl_key":        {Doc: "PEM file of the client certificate's key."},
	"sasl_mechanism": {Doc: "SASL authentication (the broker's SASL_SSL or SASL_PLAINTEXT listener); unset: none.", Values: []string{kafka.SASLPlain, kafka.SASLScramSHA256, kafka.SASLScramSHA512}},
	"sasl_username":  {Doc: "The SASL user."},
	"sasl_password":  {Doc: "The SASL user's password; masked in the REST API's answers; use ${ENV} to keep it out of the file."},
}
