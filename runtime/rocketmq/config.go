package rocketmq

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

// Topic modes.
const (
	TopicPerTable    = "table"
	TopicPerDatabase = "database"
)

// Defaults applied by Config.withDefaults.
const (
	DefaultQueues      = 4
	DefaultCluster     = "DefaultCluster"
	DefaultSendRetries = 3
	DefaultMaxInFlight = 4096
	DefaultBatchSize   = 256
	// DefaultMaxCachedRecords and DefaultMaxCachedBytes bound the messages
	// the subscriber holds pulled but not yet applied, over all its queues.
	DefaultMaxCachedRecords = 8192
	DefaultMaxCachedBytes   = 16 << 20
	// DefaultPullCacheRecords bounds the subscriber's pull cache when
	// MaxCachedRecords is not set (an explicit MaxCachedRecords bounds both
	// the source's records in flight and the cache). A cached message takes
	// about four times its body in the heap (the pull's buffer, the client's
	// message and its property map: 45 MB of a 76 MB live heap held ~12,000
	// messages of 830 bytes), so a cache of DefaultMaxCachedRecords
	// messages was most of a process's live heap, and the collector paid
	// for it under the memory limit: in alternating runs of `sluice bench
	// --transport rocketmq` on one set of servers, 2048 against 8192 gave
	// 21-25k against 18-28k events/s (medians 24k and 22k) and 40-47
	// against 39-58 CPU s per million events in sluice.
	DefaultPullCacheRecords = 2048
	// DefaultMaxMessageBytes is the broker's default maxMessageSize (4 MiB)
	// less 64 KiB of headroom for the topic, the message header and what the
	// client adds to the properties. A message is measured as body plus
	// properties plus topic.
	DefaultMaxMessageBytes = 4<<20 - 64<<10
	// DroppedColumnsProperty lists, comma-separated, the columns that
	// OversizePolicy "truncate_columns" set to NULL in a record.
	DroppedColumnsProperty = "sluice_dropped_columns"
	// KeyProperty is the message property holding the converter's key bytes.
	KeyProperty = "sluice_key"
	// IDProperty carries the record's identity (schema.ID.String), set by
	// the source. The subscriber refuses a message without a valid one: the
	// sink orders and deduplicates by it (a record published twice after a
	// source crash has the same ID both times, and the second is skipped).
	IDProperty = "sluice_id"
	// HeaderPropertyPrefix prefixes the message properties that carry a
	// record's headers (the JSON envelope has no place for them).
	HeaderPropertyPrefix = "sluice_h_"
	// maxNameLen is RocketMQ's limit on topic and group names.
	maxNameLen = 127
)

// Oversize policies: what Publish does with a record whose message is
// larger than Config.MaxMessageBytes.
const (
	// OversizeFail (the default) makes Publish return a fatal error wrapping
	// ErrOversize that names the table, key and size; nothing of the batch is
	// published. Raise the broker's maxMessageSize and MaxMessageBytes
	// together, exclude or mask the column at the source, or pick another
	// policy, then restart.
	OversizeFail = "fail"
	// OversizeDLQ sends the record to the dead-letter topic
	// (DeadLetterTopic(TopicPrefix), as DeadLetter does) during Publish, with
	// an error naming table, key and size, and leaves it out of the
	// pipeline's topic; the batch is acked as usual. A dead letter too large
	// itself carries only the table, key, source block and error. If the
	// batch later fails, the source replays it and the dead letter may be
	// sent again (at least once).
	OversizeDLQ = "dlq"
	// OversizeTruncateColumns sets the largest string and bytes values of
	// nullable non-key columns to NULL, largest first, in both images, until
	// the message fits, and lists those columns in the message property
	// DroppedColumnsProperty (and Record.Headers). The row then lands in the
	// target with NULL in those columns. If nothing is left to drop and the
	// message is still too large, Publish fails as with OversizeFail.
	OversizeTruncateColumns = "truncate_columns"
)

// Codec turns records into message key/value bytes and back.
// converter.JSON satisfies it.
type Codec interface {
	Encode(r *schema.Record) (key, value []byte, err error)
	Decode(key, value []byte) (schema.Record, error)
}

// Config configures both sides of the transport. Its yaml tags are the keys
// of a pipeline's transport section of type rocketmq.
type Config struct {
	NameServers []string `yaml:"name_servers" sluice:"required"` // "127.0.0.1:19876"
	Pipeline    string   // used in group and instance names
	TopicMode   string   `yaml:"topic_mode"`   // "table" (default: one topic per table) or "database"
	TopicPrefix string   `yaml:"topic_prefix"` // default: the pipeline name
	Queues      int      `yaml:"queues"`       // queues per topic, default 4
	Cluster     string   `yaml:"cluster"`      // broker cluster for topic creation, default "DefaultCluster"
	Group       string   `yaml:"group"`        // consumer group, default "<pipeline>-sink"
	// Topics are what the subscriber consumes; if empty, derived from Tables.
	Topics []string `yaml:"topics"`
	// TopicsRegex, instead of Topics, makes the subscriber consume every
	// topic whose whole name matches it (as Kafka Connect's topics.regex),
	// looking for new ones on the name servers every TopicsRefresh.
	TopicsRegex string `yaml:"topics_regex"`
	// TopicsRefresh is how often the subscriber looks for new topics
	// (TopicsRegex) or adds the topics AddTopics gave it, default
	// DefaultTopicsRefresh.
	TopicsRefresh time.Duration `yaml:"topics_refresh"`
	// Tables known at start: the publisher creates their topics in
	// NewPublisher, the subscriber derives Topics from them.
	Tables      []schema.TableID
	SendRetries int // default 3
	MaxInFlight int // records in flight on the publisher, default 4096
	// BatchSize is the most records handed to one Handler call, default 256
	// (the client's limit is 1024); it counts messages, and under
	// FormatPacked a pack counts as packRecords of them: a call (and a
	// pull) gets BatchSize/packRecords packs, at least one.
	BatchSize int `yaml:"batch_size"`
	// Linger is how long the consumer waits between two pulls from one
	// queue, so that records arriving meanwhile reach the sink as one batch
	// (one target transaction) instead of many: up to Linger of extra
	// latency, and at most BatchSize records per Linger per queue. Zero
	// (the default) pulls again at once; the limit is 65.535s.
	Linger time.Duration `yaml:"linger"`
	// MaxCachedRecords and MaxCachedBytes bound the subscriber's pull cache
	// (messages pulled, not yet applied and committed) over all the queues
	// it consumes, whatever their number: the client's
	// PullThresholdForTopic and PullThresholdSizeForTopic, which it shares
	// out among the queues (each gets at least 1 message and 1 MiB, and
	// stops pulling once over its share, so a queue may hold one pull
	// more). Bytes count message bodies, in whole MiB (at least 1).
	// Defaults DefaultMaxCachedRecords (DefaultPullCacheRecords for the
	// cache: see there) and DefaultMaxCachedBytes. In YAML
	// they are max_in_flight and max_in_flight_bytes, the memory limits
	// every transport has, which bound the source's records in flight too.
	MaxCachedRecords int `yaml:"max_in_flight"`
	MaxCachedBytes   int `yaml:"max_in_flight_bytes" sluice:"bytes"`
	// OnTopic, when set, is told by the publisher each table topic the
	// first time it maps a table to it (before the table's first record
	// is sent): a sink in the same process subscribes to it.
	OnTopic func(topic string) `yaml:"-"`
	// TopicsFromPublisher: a sink in the process of the source that
	// publishes: the subscriber starts with the topics of Tables (none is
	// fine) and the publisher gives it the others (OnTopic to AddTopics).
	TopicsFromPublisher bool `yaml:"-"`
	// pullCacheRecords is the subscriber's cache bound in messages:
	// MaxCachedRecords when set, else DefaultPullCacheRecords.
	pullCacheRecords int
	// Codec encodes and decodes records; default the JSON converter with
	// schemas.
	Codec Codec
	// Format is the publisher's message format: FormatCompact (the
	// default, DefaultFormat: payloads, schemas by reference in
	// SchemaTopic(TopicPrefix); needs the JSON codec with schemas),
	// FormatJSON (the codec's envelopes, schema in every message) or
	// FormatPacked (the compact format's records, several a message). The
	// subscriber reads all three, whatever its own Format.
	Format string `yaml:"format"`
	// MaxMessageBytes is the largest message the publisher sends (body,
	// properties and topic), default DefaultMaxMessageBytes. Keep it below
	// the broker's maxMessageSize. It is measured before the client
	// zlib-compresses a body sent alone from DefaultMaxMessageBytes (the
	// broker checks the compressed size), so with it raised a
	// well-compressible record over the broker's limit may fit: the limit
	// depends on the record, not on its entropy.
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// OversizePolicy decides what a larger record does: "fail" (default),
	// "dlq" or "truncate_columns"; see OversizeFail, OversizeDLQ and
	// OversizeTruncateColumns.
	OversizePolicy string `yaml:"oversize_policy"`
	// AccessKey and SecretKey are the ACL credentials of every client
	// (producers, consumer, admin) for brokers with authentication; both or
	// neither. The client signs its requests with the secret key.
	AccessKey string `yaml:"access_key"`
	SecretKey string `yaml:"secret_key"`
}

// credentials returns the ACL credentials for the client options.
func (c Config) credentials() primitive.Credentials {
	return primitive.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}
}

func (c Config) hasCredentials() bool { return c.AccessKey != "" }

// Validate reports the first setting that NewPublisher or NewSubscriber
// would refuse, without contacting any server.
func (c Config) Validate() error {
	_, err := c.baseDefaults()
	return err
}

func (c Config) withDefaults() (Config, error) {
	c, err := c.baseDefaults()
	if err != nil {
		return c, err
	}
	if c.Codec == nil {
		c.Codec = defaultCodec()
		if c.Codec == nil {
			return c, fmt.Errorf("%w: no Codec set", ErrConfig)
		}
	}
	return c, nil
}

// baseDefaults checks and completes everything but the codec.
func (c Config) baseDefaults() (Config, error) {
	if len(c.NameServers) == 0 {
		return c, fmt.Errorf("%w: no name server given: set NameServers (e.g. 127.0.0.1:9876)", ErrConfig)
	}
	for _, a := range c.NameServers {
		if !strings.Contains(a, ":") {
			return c, fmt.Errorf("%w: name server %q is not host:port", ErrConfig, a)
		}
	}
	if c.Pipeline == "" {
		return c, fmt.Errorf("%w: Pipeline is empty: it names the consumer group and client instances", ErrConfig)
	}
	switch c.TopicMode {
	case "":
		c.TopicMode = TopicPerTable
	case TopicPerTable, TopicPerDatabase:
	default:
		return c, fmt.Errorf("%w: TopicMode %q: use %q or %q", ErrConfig, c.TopicMode, TopicPerTable, TopicPerDatabase)
	}
	if c.TopicPrefix == "" {
		c.TopicPrefix = c.Pipeline
	}
	if c.Queues == 0 {
		c.Queues = DefaultQueues
	}
	if c.Queues < 1 || c.Queues > 1024 {
		return c, fmt.Errorf("%w: Queues %d out of range [1, 1024]", ErrConfig, c.Queues)
	}
	if c.Cluster == "" {
		c.Cluster = DefaultCluster
	}
	if c.Group == "" {
		c.Group = c.Pipeline + "-sink"
	}
	c.Group = sanitizeName(c.Group)
	if c.SendRetries == 0 {
		c.SendRetries = DefaultSendRetries
	}
	if c.SendRetries < 0 {
		c.SendRetries = 0
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.pullCacheRecords <= 0 { // the first call: the field is ours
		c.pullCacheRecords = c.MaxCachedRecords
		if c.pullCacheRecords <= 0 {
			c.pullCacheRecords = DefaultPullCacheRecords
		}
		c.pullCacheRecords = min(c.pullCacheRecords, 6553500) // the client's limit
	}
	if c.MaxCachedRecords <= 0 {
		c.MaxCachedRecords = DefaultMaxCachedRecords
	}
	c.MaxCachedRecords = min(c.MaxCachedRecords, 6553500) // the client's limit
	if c.MaxCachedBytes <= 0 {
		c.MaxCachedBytes = DefaultMaxCachedBytes
	}
	if c.BatchSize > 1024 {
		c.BatchSize = 1024
	}
	if c.Linger < 0 || c.Linger > 65535*time.Millisecond {
		return c, fmt.Errorf("%w: Linger %s: use 0 to 65.535s", ErrConfig, c.Linger)
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return c, fmt.Errorf("%w: access_key and secret_key go together: set both (broker ACL) or neither", ErrConfig)
	}
	switch c.Format {
	case "":
		c.Format = DefaultFormat
	case FormatJSON, FormatCompact, FormatPacked:
	default:
		return c, fmt.Errorf("%w: Format %q: use %q, %q or %q", ErrConfig, c.Format, FormatJSON, FormatCompact, FormatPacked)
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.TopicsRegex != "" {
		if len(c.Topics) > 0 {
			return c, fmt.Errorf("%w: topics and topics_regex exclude each other: give the list or the pattern", ErrConfig)
		}
		if _, err := topicsPattern(c.TopicsRegex); err != nil {
			return c, err
		}
	}
	if c.TopicsRefresh == 0 {
		c.TopicsRefresh = DefaultTopicsRefresh
	}
	if c.TopicsRefresh < 100*time.Millisecond {
		return c, fmt.Errorf("%w: topics_refresh %s: use at least 100ms", ErrConfig, c.TopicsRefresh)
	}
	switch c.OversizePolicy {
	case "":
		c.OversizePolicy = OversizeFail
	case OversizeFail, OversizeDLQ, OversizeTruncateColumns:
	default:
		return c, fmt.Errorf("%w: OversizePolicy %q: use %q, %q or %q", ErrConfig, c.OversizePolicy, OversizeFail, OversizeDLQ, OversizeTruncateColumns)
	}
	return c, nil
}

// topics returns the subscriber's topics: Topics, or those of Tables.
func (c Config) topics() ([]string, error) {
	if len(c.Topics) > 0 {
		return c.Topics, nil
	}
	reg := NewRegistry(c.TopicPrefix, c.TopicMode)
	seen := map[string]bool{}
	var out []string
	for _, id := range c.Tables {
		t, err := reg.Topic(id)
		if err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) == 0 && c.TopicsRegex == "" && !c.TopicsFromPublisher {
		return nil, fmt.Errorf("%w: the subscriber has nothing to consume: %s", ErrConfig, TopicsHint(c.TopicPrefix, c.TopicMode))
	}
	return out, nil
}

// TopicName maps a source table to its topic. In "table" mode (the default)
// it is prefix.db.table, in "database" mode prefix.db, where an empty prefix
// is left out. Every character outside [%|a-zA-Z0-9_-] (dots included)
// becomes '_'. A name longer than 127 characters is cut to 118 and suffixed
// with '-' and the 8 hex digits of the fnv32a hash of the full name. Distinct
// tables can map to the same name ("a.b"+"c" and "a"+"b.c"): a Registry
// detects that.
func TopicName(prefix, db, table, mode string) string {
	parts := make([]string, 0, 3)
	if prefix != "" {
		parts = append(parts, prefix)
	}
	parts = append(parts, db)
	if mode != TopicPerDatabase {
		parts = append(parts, table)
	}
	return sanitizeName(strings.Join(parts, "."))
}

// sanitizeName makes s a valid RocketMQ topic or group name.
func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !validNameByte(c) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	if len(b) > maxNameLen {
		h := fnv.New32a()
		h.Write([]byte(s))
		return fmt.Sprintf("%s-%08x", b[:maxNameLen-9], h.Sum32())
	}
	return string(b)
}

func validNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '%' || c == '|'
}

// Registry maps tables to topics and refuses two sources sharing a topic.
// It is safe for concurrent use.
type Registry struct {
	prefix, mode string
	// onNew, when set, is told each table topic the first time a table
	// maps to it (outside the lock).
	onNew   func(topic string)
	mu      sync.Mutex
	owner   map[string]string // topic -> the table (or database) that owns it
	byTable map[schema.TableID]string
}

// NewRegistry returns a Registry for one prefix and mode.
func NewRegistry(prefix, mode string) *Registry {
	return &Registry{prefix: prefix, mode: mode, owner: map[string]string{}, byTable: map[schema.TableID]string{}}
}

// Topic returns the topic of id, or an error wrapping ErrTopicCollision when
// another table (in "database" mode: another database) already maps to it.
func (r *Registry) Topic(id schema.TableID) (string, error) {
	r.mu.Lock()
	if t, ok := r.byTable[id]; ok {
		r.mu.Unlock()
		return t, nil
	}
	t, fresh, err := r.add(id)
	r.mu.Unlock()
	if fresh && r.onNew != nil && id.Table != "" {
		r.onNew(t)
	}
	return t, err
}

// Topics returns the table topics mapped so far (not the topic of schema
// changes), in no order.
func (r *Registry) Topics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.owner))
	for t, src := range r.owner {
		if src != schemaChangesOwner {
			out = append(out, t)
		}
	}
	return out
}

// add maps id, which has no topic yet, under r.mu; fresh when its topic
// had no table before.
func (r *Registry) add(id schema.TableID) (t string, fresh bool, err error) {
	t = TopicName(r.prefix, id.Database, id.Table, r.mode)
	src := fmt.Sprintf("table %q.%q", id.Database, id.Table)
	switch {
	case r.mode == TopicPerDatabase:
		src = fmt.Sprintf("database %q", id.Database)
	case id.Table == "":
		// Records of no table (schema changes) go to the topic named by the
		// prefix alone, as Debezium's schema change topic is.
		t, src = sanitizeName(r.prefix), schemaChangesOwner
	}
	prev, had := r.owner[t]
	if had && prev != src {
		return "", false, fmt.Errorf("%w: %s and %s both map to topic %q: rename one, or change the transport's topic_mode or topic_prefix", ErrTopicCollision, prev, src, t)
	}
	r.owner[t] = src
	r.byTable[id] = t
	return t, !had, nil
}

// instanceName returns a unique client instance name for the pipeline.
func instanceName(pipeline, role string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := sanitizeName(pipeline + "-" + role + "-" + hex.EncodeToString(b[:]))
	return name
}

// packRecords is what a pack counts for in BatchSize. A pack holds up to
// PackBytes of records (36 of the bench's 800-byte records). Counted as
// one, a batch of 1024 packs made Handler calls of 36,000 records and
// pulls of 4 MiB: the pull cache and the decoded batches then held 48 of
// the 84 MiB live heap at half the bench's catch-up, and the collector
// took a quarter of sluice's CPU. At 1024/16 packs, two alternating runs
// on warm servers: sluice 15.8 and 19.2 CPU s per million events against
// 17.6 and 22.0, catch-up 60k and 51k events/s against 52k and 46k.
const packRecords = 16

// consumeBatch is the consumer's batch in messages (Handler call and pull)
// for c (after withDefaults).
func (c Config) consumeBatch() int {
	if c.Format == FormatPacked {
		return max(1, c.BatchSize/packRecords)
	}
	return c.BatchSize
}

// schemaChangesOwner owns the topic of records of no table in a Registry.
const schemaChangesOwner = "schema changes"
