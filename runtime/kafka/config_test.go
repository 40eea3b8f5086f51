package kafka

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestTopicNameAsDebeziumNamesThem(t *testing.T) {
	for _, c := range []struct{ prefix, db, table, want string }{
		{"shop", "inventory", "orders", "shop.inventory.orders"},
		{"", "inventory", "orders", "inventory.orders"},
		{"p", "db", "tä ble$", "p.db.t__ble_"}, // one _ a character
	} {
		if got := TopicName(c.prefix, c.db, c.table); got != c.want {
			t.Errorf("TopicName(%q, %q, %q) = %q, want %q", c.prefix, c.db, c.table, got, c.want)
		}
	}
	long := TopicName("p", "db", strings.Repeat("x", 300))
	if len(long) != maxTopicLen || long == TopicName("p", "db", strings.Repeat("x", 299)) {
		t.Errorf("a long name is %d bytes (want %d) or not told apart from another", len(long), maxTopicLen)
	}
}

func TestTopicPatternMatchesThePrefixTopicsOnly(t *testing.T) {
	re := regexp.MustCompile(topicPattern("shop"))
	for topic, want := range map[string]bool{
		"shop.db.t": true, "shop.db.a.b": true, "shop.db": false, "shopx.db.t": false, "other.shop.db.t": false,
	} {
		if re.MatchString(topic) != want {
			t.Errorf("pattern %s on %q: want %v", re, topic, want)
		}
	}
}

func TestConfigDefaultsAndRefusals(t *testing.T) {
	c, err := Config{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Partitions != DefaultPartitions || c.Group != "p-sink" || c.TopicPrefix != "p" || c.Format != FormatJSON || c.MaxBatch != DefaultMaxBatch || c.SessionTimeout != DefaultSessionTimeout {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []Config{
		{Pipeline: "p"},
		{Brokers: []string{"nohost"}, Pipeline: "p"},
		{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p", Partitions: -1},
		{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p", Format: "avro"},
		{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p", SessionTimeout: -1},
		{Brokers: []string{"127.0.0.1:9092"}},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", bad, err)
		}
	}
}
