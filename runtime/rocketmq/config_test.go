package rocketmq

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

var validName = regexp.MustCompile(`^[%|a-zA-Z0-9_-]+$`)

func TestTopicName(t *testing.T) {
	long := strings.Repeat("t", 200)
	cases := []struct {
		prefix, db, table, mode, want string
	}{
		{"shop", "inventory", "orders", "table", "shop_inventory_orders"},
		{"shop", "inventory", "orders", "", "shop_inventory_orders"},
		{"shop", "inventory", "orders", "database", "shop_inventory"},
		{"", "inventory", "orders", "table", "inventory_orders"},
		{"p.1", "my-db", "ta ble$", "table", "p_1_my-db_ta_ble_"},
		{"p", "db", "naïve", "table", "p_db_na__ve"}, // each byte of a multi-byte rune
		{"p", "db", "a|b%c", "table", "p_db_a|b%c"},
	}
	for _, c := range cases {
		got := TopicName(c.prefix, c.db, c.table, c.mode)
		if got != c.want {
			t.Errorf("TopicName(%q,%q,%q,%q) = %q, want %q", c.prefix, c.db, c.table, c.mode, got, c.want)
		}
	}
	a := TopicName("p", "db", long, "table")
	b := TopicName("p", "db", long+"x", "table")
	if len(a) != maxNameLen || len(b) != maxNameLen || a == b || !validName.MatchString(a) {
		t.Errorf("long names: %q (%d) and %q (%d): want distinct valid names of %d characters", a, len(a), b, len(b), maxNameLen)
	}
	if !strings.HasPrefix(a, "p_db_ttt") {
		t.Errorf("long name %q lost its readable prefix", a)
	}
}

func TestRegistryCollision(t *testing.T) {
	r := NewRegistry("p", TopicPerTable)
	t1, err := r.Topic(schema.TableID{Database: "a.b", Table: "c"})
	if err != nil || t1 != "p_a_b_c" {
		t.Fatalf("first table: %q, %v", t1, err)
	}
	if again, err := r.Topic(schema.TableID{Database: "a.b", Table: "c"}); err != nil || again != t1 {
		t.Fatalf("same table again: %q, %v", again, err)
	}
	_, err = r.Topic(schema.TableID{Database: "a", Table: "b.c"})
	if !errors.Is(err, ErrTopicCollision) {
		t.Fatalf("colliding table: err = %v, want ErrTopicCollision", err)
	}
	for _, want := range []string{`"a.b"."c"`, `"a"."b.c"`, "p_a_b_c"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("collision error %q does not name %s", err, want)
		}
	}

	d := NewRegistry("p", TopicPerDatabase)
	if _, err := d.Topic(schema.TableID{Database: "x.y", Table: "t1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Topic(schema.TableID{Database: "x.y", Table: "t2"}); err != nil {
		t.Fatalf("two tables of one database share its topic: %v", err)
	}
	if _, err := d.Topic(schema.TableID{Database: "x_y", Table: "t1"}); !errors.Is(err, ErrTopicCollision) {
		t.Fatalf("databases x.y and x_y: err = %v, want ErrTopicCollision", err)
	}
}

func TestQueueIndex(t *testing.T) {
	id := schema.TableID{Database: "db", Table: "t"}
	counts := make([]int, 4)
	for i := range 4000 {
		k := strings.Repeat("k", i%7) + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
		q := runtime.QueueForKey(id, k, 4)
		if q2 := runtime.QueueForKey(id, k, 4); q2 != q {
			t.Fatalf("key %q: queue %d then %d", k, q, q2)
		}
		counts[q]++
	}
	for q, n := range counts {
		if n < 700 {
			t.Errorf("queue %d got %d of 4000 keys: distribution %v", q, n, counts)
		}
	}
	// The table is part of the hash: one key of two tables need not share a queue.
	differ := false
	for i := range 50 {
		k := strings.Repeat("x", i)
		if runtime.QueueForKey(schema.TableID{Database: "db", Table: "a"}, k, 8) != runtime.QueueForKey(schema.TableID{Database: "db", Table: "b"}, k, 8) {
			differ = true
		}
	}
	if !differ {
		t.Error("the table does not change the queue of any key")
	}
	if q := runtime.QueueForKey(id, "k", 1); q != 0 {
		t.Errorf("one queue: got %d", q)
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{NameServers: []string{"127.0.0.1:9876"}, Pipeline: "pipe.1", Codec: testCodec{}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.TopicMode != TopicPerTable || c.TopicPrefix != "pipe.1" || c.Queues != 4 || c.Cluster != "DefaultCluster" ||
		c.Group != "pipe_1-sink" || c.SendRetries != 3 || c.MaxInFlight != 4096 || c.BatchSize != 256 {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []Config{
		{Pipeline: "p"},
		{NameServers: []string{"127.0.0.1"}, Pipeline: "p"},
		{NameServers: []string{"127.0.0.1:1"}},
		{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", TopicMode: "tables"},
		{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", Queues: -1},
		{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", Linger: -time.Millisecond},
		{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", Linger: 66 * time.Second},
	} {
		bad.Codec = testCodec{}
		if _, err := bad.withDefaults(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err = %v, want ErrConfig", bad, err)
		}
	}
	if _, err := (Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p"}).topics(); !errors.Is(err, ErrConfig) {
		t.Errorf("subscriber without topics or tables: err = %v", err)
	}
	topics, err := Config{TopicPrefix: "p", TopicMode: "database", Tables: []schema.TableID{{Database: "d", Table: "a"}, {Database: "d", Table: "b"}}}.topics()
	if err != nil || len(topics) != 1 || topics[0] != "p_d" {
		t.Errorf("topics of two tables in database mode: %v, %v", topics, err)
	}
}

func TestInstanceNamesAreUnique(t *testing.T) {
	a, b := instanceName("pipe.x", "pub"), instanceName("pipe.x", "pub")
	if a == b || !validName.MatchString(a) || !strings.HasPrefix(a, "pipe_x-pub-") {
		t.Errorf("instance names %q and %q", a, b)
	}
}

func TestRegistrySchemaChangesGoToPrefixTopic(t *testing.T) {
	r := NewRegistry("shop", TopicPerTable)
	got, err := r.Topic(schema.TableID{Database: "db"})
	if err != nil || got != "shop" {
		t.Fatalf("schema-change topic %q %v, want shop", got, err)
	}
	if got, _ := r.Topic(schema.TableID{Database: "db", Table: "orders"}); got != "shop_db_orders" {
		t.Fatalf("table topic %q", got)
	}
}

// A configuration error the publisher finds is fatal where it is made, so
// the worker stops the task as FAILED instead of restarting it for ever
// (rocketmq.ErrConfig was unclassified, so retriable); it is also the
// project's one ErrConfig, so `sluice` exits with the config code.
func TestPublisherConfigErrorIsFatal(t *testing.T) {
	for _, bad := range []Config{
		{Pipeline: "p", Codec: testCodec{}},
		{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", Codec: testCodec{}, TopicMode: "tables"},
	} {
		_, err := NewPublisher(t.Context(), bad, nil)
		if !errors.Is(err, ErrConfig) {
			t.Fatalf("%+v: err = %v, want ErrConfig", bad, err)
		}
		if !runtime.IsFatal(err) || schema.ClassOf(err) != schema.ClassFatal {
			t.Errorf("%v: class %v, want fatal", err, schema.ClassOf(err))
		}
		if !errors.Is(err, schema.ErrConfig) || !errors.Is(err, runtime.ErrConfig) {
			t.Errorf("%v does not match schema.ErrConfig", err)
		}
	}
}
