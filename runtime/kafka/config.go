package kafka

import (
	"crypto/tls"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// Defaults applied by Config.withDefaults.
const (
	DefaultPartitions = 4
	DefaultMaxBatch   = 2048
	// DefaultMaxInFlightBytes bounds the records the subscriber holds
	// fetched and not yet applied (and the producer's buffer).
	DefaultMaxInFlightBytes = 16 << 20
	// DefaultMaxInFlight bounds the producer's buffered records.
	DefaultMaxInFlight = 8192
	// DefaultSessionTimeout is how long the group waits for a sink process
	// that stopped heartbeating (killed) before it hands the process's
	// partitions to the others: the group stands still that long. Kafka's
	// consumers default to 45s; its brokers accept 6s to 30 min
	// (group.min.session.timeout.ms, group.max.session.timeout.ms).
	DefaultSessionTimeout = 10 * time.Second
	// IDHeader carries the record's identity (schema.ID.String), set by the
	// source; the sink orders and deduplicates by it.
	IDHeader = "sluice_id"
	// HeaderPrefix prefixes the Kafka headers that carry Record.Headers.
	HeaderPrefix = "sluice_h_"
	// FormatJSON: every value is the codec's envelope, its schema
	// included (Kafka Connect's JsonConverter with schemas.enable=true),
	// the format Debezium's JDBC sink and other Connect sinks read.
	FormatJSON = "json"
	// FormatCompact: schemas by reference. The value is the envelope's
	// payload only (JsonConverter's schemas.enable=false), the key the
	// key's payload; header SchemaHeader names the key and value schemas,
	// which the publisher stores once, before the first record naming
	// them, in SchemaTopic(topic_prefix), a compacted topic keyed by the
	// schema ID. A record of a narrow table is about a fifth of json's
	// size. Records without a value schema stay in the JSON format.
	FormatCompact = "compact"
	// SchemaHeader names a compact record's schemas: 24 hex digits of the
	// SHA-256 of its key schema JSON, a newline and its value schema JSON
	// (converter.SchemaID).
	SchemaHeader = "sluice_schema"
	// DefaultCompression is the producer's compression when Compression is
	// not set: franz-go's default, as before the key existed.
	DefaultCompression = "snappy"
	// maxTopicLen is Kafka's limit on topic names.
	maxTopicLen = 249
)

// ErrConfig is wrapped by every configuration error; it is fatal.
var ErrConfig = schema.ConfigError("kafka: invalid config")

// Codec turns records into Kafka keys and values and back; converter.JSON
// satisfies it.
type Codec interface {
	Encode(r *schema.Record) (key, value []byte, err error)
	Decode(key, value []byte) (schema.Record, error)
}

// Config configures both sides of the transport. Its yaml tags are the keys
// of a pipeline's transport section of type kafka.
type Config struct {
	Brokers     []string `yaml:"brokers" sluice:"required"` // "127.0.0.1:9092"
	TopicPrefix string   `yaml:"topic_prefix"`              // default: the pipeline name
	// Partitions of the topics the publisher creates, default 4. A topic
	// that exists keeps its own count.
	Partitions int `yaml:"partitions"`
	// ReplicationFactor of created topics; 0 takes the broker's default.
	ReplicationFactor int    `yaml:"replication_factor"`
	Group             string `yaml:"group"` // consumer group, default "<pipeline>-sink"
	// Topics the subscriber consumes; empty: every topic of the pipeline
	// (those named "<topic_prefix>.<db>.<table>").
	Topics []string `yaml:"topics"`
	Format string   `yaml:"format"` // "json" (default) or "compact"
	// Compression of the producer's batches: one of Compressions, default
	// DefaultCompression. Consumers read every codec whatever theirs.
	Compression string `yaml:"compression"`
	// MaxBatch is the most records of one partition handed to one Handler
	// call, default 2048.
	MaxBatch int `yaml:"max_batch"`
	// MaxInFlight and MaxInFlightBytes are the memory limits of every
	// transport (engine.Pipeline's records read and not yet acknowledged);
	// here they also bound the producer's buffer and, in bytes, what the
	// consumer fetches ahead of the sink.
	MaxInFlight      int              `yaml:"max_in_flight"`
	MaxInFlightBytes runtime.ByteSize `yaml:"max_in_flight_bytes"`
	// SessionTimeout is the consumer group's session timeout, default
	// DefaultSessionTimeout; members heartbeat every tenth of it.
	SessionTimeout time.Duration `yaml:"session_timeout"`

	// TLSMode is TLS to the brokers, in the source's and sink's words
	// (MySQL's ssl-mode): "disabled" (the default, also ""), "required"
	// (TLS, the certificate is not checked), "verify_ca" (signed by a CA in
	// TLS.RootCAs) or "verify_identity" (verify_ca, and the certificate
	// names the broker's host). A Kafka listener speaks TLS or not, so
	// "preferred" is refused.
	TLSMode string `yaml:"ssl_mode"`
	// TLS holds RootCAs (nil: the system's roots) and Certificates (a
	// client certificate); nil: loaded from SSLCA, SSLCert and SSLKey (see
	// secure.LoadClientTLS).
	TLS     *tls.Config `yaml:"-"`
	SSLCA   string      `yaml:"ssl_ca"`
	SSLCert string      `yaml:"ssl_cert"`
	SSLKey  string      `yaml:"ssl_key"`
	// SASLMechanism authenticates the clients: SASLPlain, SASLScramSHA256
	// or SASLScramSHA512 (any case); "" for none. SASLUsername and
	// SASLPassword are the user's name and password.
	SASLMechanism string `yaml:"sasl_mechanism"`
	SASLUsername  string `yaml:"sasl_username"`
	SASLPassword  string `yaml:"sasl_password"`

	Pipeline string `yaml:"-"`
	Codec    Codec  `yaml:"-"`
	// OnTopic, when set, is told each topic the publisher creates or first
	// sends to: a sink in the same process looks for it at once.
	OnTopic func(topic string) `yaml:"-"`
}

// Validate reports the first setting the constructors would refuse,
// without contacting any server.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// setup is c with its defaults, the JSON codec unless one is set, and log
// or the default logger: what every constructor starts with.
func (c Config) setup(log *slog.Logger) (Config, *slog.Logger, error) {
	c, err := c.withDefaults()
	if err != nil {
		return c, nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	if c.Codec == nil {
		c.Codec = converter.NewJSON(converter.DefaultOptions())
	}
	return c, log, nil
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Brokers) == 0 {
		return c, fmt.Errorf("%w: brokers: at least one broker address (host:port) is needed", ErrConfig)
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			return c, fmt.Errorf("%w: brokers: %q is not host:port", ErrConfig, b)
		}
	}
	if c.Partitions < 0 || c.Partitions > 10000 {
		return c, fmt.Errorf("%w: partitions: %d is out of range (1 to 10000)", ErrConfig, c.Partitions)
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.ReplicationFactor < 0 {
		return c, fmt.Errorf("%w: replication_factor: %d is negative", ErrConfig, c.ReplicationFactor)
	}
	switch c.Format {
	case "", FormatJSON:
		c.Format = FormatJSON
	case FormatCompact:
	default:
		return c, fmt.Errorf("%w: format: %q is not known (known: json, Debezium's JSON with schemas in every record; compact, payloads with schemas by reference)", ErrConfig, c.Format)
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	c.Compression = strings.ToLower(strings.TrimSpace(c.Compression))
	if _, ok := compressions[c.Compression]; !ok {
		return c, fmt.Errorf("%w: compression: %q is not known (known: %s)", ErrConfig, c.Compression, strings.Join(Compressions(), ", "))
	}
	if c.MaxBatch < 0 || c.MaxInFlight < 0 || c.MaxInFlightBytes < 0 {
		return c, fmt.Errorf("%w: max_batch, max_in_flight and max_in_flight_bytes must not be negative", ErrConfig)
	}
	if c.SessionTimeout < 0 {
		return c, fmt.Errorf("%w: session_timeout: %s is negative", ErrConfig, c.SessionTimeout)
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.TopicPrefix == "" {
		c.TopicPrefix = c.Pipeline
	}
	c, err := c.withSecurity()
	if err != nil {
		return c, err
	}
	if c.Group == "" {
		if c.Pipeline == "" {
			return c, fmt.Errorf("%w: group: set the consumer group (or name the pipeline)", ErrConfig)
		}
		c.Group = c.Pipeline + "-sink"
	}
	return c, nil
}

// compressions maps the compression key's values to franz-go's codecs.
var compressions = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// codec is c's compression codec (DefaultCompression's when c was not
// checked by withDefaults).
func (c Config) codec() kgo.CompressionCodec {
	if k, ok := compressions[c.Compression]; ok {
		return k
	}
	return compressions[DefaultCompression]
}

// Compressions lists the values of Config.Compression, sorted.
func Compressions() []string { return slices.Sorted(maps.Keys(compressions)) }

// TopicName is the topic of a table: "<prefix>.<db>.<table>", as Debezium
// names them, with characters Kafka refuses replaced by '_'; a name longer
// than Kafka allows is cut and given a hash of the whole.
func TopicName(prefix, db, table string) string {
	parts := make([]string, 0, 3)
	if prefix != "" {
		parts = append(parts, prefix)
	}
	s := strings.Join(append(parts, db, table), ".")
	b := make([]byte, 0, len(s))
	for _, c := range s { // per character, as Debezium replaces them
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b = append(b, byte(c))
		} else {
			b = append(b, '_')
		}
	}
	if len(b) > maxTopicLen {
		h := fnv.New32a()
		h.Write([]byte(s))
		b = fmt.Appendf(b[:maxTopicLen-9], "_%08x", h.Sum32())
	}
	return string(b)
}

// topicPattern is the regular expression of every topic of prefix.
func topicPattern(prefix string) string {
	p := TopicName("", prefix, "")
	p = strings.TrimSuffix(p, ".")
	return "^" + strings.ReplaceAll(p, ".", `\.`) + `\.[^.]+\..+$`
}
