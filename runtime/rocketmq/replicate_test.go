package rocketmq

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

func TestReplicatorConfigValidate(t *testing.T) {
	ok := ReplicatorConfig{NameServers: []string{"127.0.0.1:9876"}, Topics: []string{"a"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.BatchSize != DefaultReplicateBatch || ok.From != ReplicateFromBeginning || ok.Cluster != "DefaultCluster" || ok.TargetTopics != TargetTopicsSync {
		t.Fatalf("defaults: %+v", ok)
	}
	for name, c := range map[string]ReplicatorConfig{
		"no name servers":   {Topics: []string{"a"}},
		"no topics":         {NameServers: []string{"x:1"}},
		"topics and regex":  {NameServers: []string{"x:1"}, Topics: []string{"a"}, TopicsRegex: "a.*"},
		"bad regex":         {NameServers: []string{"x:1"}, TopicsRegex: "("},
		"batch over 1024":   {NameServers: []string{"x:1"}, Topics: []string{"a"}, BatchSize: 1025},
		"from":              {NameServers: []string{"x:1"}, Topics: []string{"a"}, From: "yesterday"},
		"secret without ak": {NameServers: []string{"x:1"}, Topics: []string{"a"}, SecretKey: "s"},
		"prefix with a dot": {NameServers: []string{"x:1"}, Topics: []string{"a"}, TopicPrefix: "a."},
		"empty tag":         {NameServers: []string{"x:1"}, Topics: []string{"a"}, Tags: "a || "},
		"star among tags":   {NameServers: []string{"x:1"}, Topics: []string{"a"}, Tags: "a || *"},
		"target topics":     {NameServers: []string{"x:1"}, Topics: []string{"a"}, TargetTopics: "match"},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

// A source queue keeps its place when the target has as many queues or
// more; with fewer, a key always goes to the same queue, and a keyless
// message to its source queue's.
func TestReplicaTarget(t *testing.T) {
	targets := []queue{{"b1", 0}, {"b1", 1}, {"b1", 2}}
	q := &replQueue{key: "t/a/2", targets: targets, own: 2}
	m := &primitive.MessageExt{}
	if got := q.target(m); got != targets[2] {
		t.Fatalf("same count: %v", got)
	}
	q.own = -1
	m.WithKeys([]string{"k1"})
	first := q.target(m)
	other := &replQueue{key: "t/a/5", targets: targets, own: -1}
	if other.target(m) != first {
		t.Fatal("one key went to two queues")
	}
	keyless := &primitive.MessageExt{}
	if q.target(keyless) != q.target(&primitive.MessageExt{}) {
		t.Fatal("a keyless message of one queue went to two queues")
	}
}

// A tag expression is "*" (every message) or tags separated by ||;
// the loop guard drops a copy that came from the target cluster.
func TestReplicaWanted(t *testing.T) {
	cfg := ReplicatorConfig{NameServers: []string{"x:1"}, Topics: []string{"a"}, Tags: "TagA || TagB", Properties: map[string]string{"region": "eu"}}
	r, err := NewReplicator(cfg, Config{NameServers: []string{"y:1"}, Cluster: "B", Pipeline: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg := func(tag string, props ...string) *primitive.MessageExt {
		m := &primitive.MessageExt{}
		m.WithTag(tag)
		for i := 0; i < len(props); i += 2 {
			m.WithProperty(props[i], props[i+1])
		}
		return m
	}
	if r.src.TargetCluster != "B" {
		t.Fatalf("target_cluster %q, want the transport's cluster", r.src.TargetCluster)
	}
	if _, err := NewReplicator(cfg, Config{NameServers: []string{"y:1"}, Pipeline: "p"}, nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("both clusters named DefaultCluster: %v, want ErrConfig", err)
	}
	named := cfg
	named.Cluster, named.TargetCluster = "A", "B2"
	r2, err := NewReplicator(named, Config{NameServers: []string{"y:1"}, Pipeline: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.wanted(msg("TagA", "region", "eu", SrcClusterProperty, "B")) || r2.wanted(msg("TagA", "region", "eu", SrcClusterProperty, "B2")) {
		t.Fatal("target_cluster B2: the loop guard does not go by it")
	}
	if r.tags, err = replicaTags(cfg.Tags); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    *primitive.MessageExt
		want bool
	}{
		{msg("TagA", "region", "eu"), true},
		{msg("TagB", "region", "eu", SrcClusterProperty, "A"), true},
		{msg("TagB", "region", "eu", SrcClusterProperty, "B"), false},
		{msg("TagC", "region", "eu"), false},
		{msg("", "region", "eu"), false},
		{msg("TagA", "region", "us"), false},
		{msg("TagA"), false},
	} {
		if got := r.wanted(c.m); got != c.want {
			t.Errorf("%s %v: wanted %v", c.m.GetTags(), c.m.GetProperties(), got)
		}
	}
	if tags, err := replicaTags(" * "); tags != nil || err != nil {
		t.Fatalf("*: %v %v", tags, err)
	}
}

// TestSendRun: one send takes the messages born in the same millisecond
// that go to the same target queue, within the batch limits.
func TestSendRun(t *testing.T) {
	msg := func(born int64, keys string, size int) *primitive.MessageExt {
		m := &primitive.MessageExt{BornTimestamp: born, Message: primitive.Message{Body: make([]byte, size)}}
		if keys != "" {
			m.WithKeys([]string{keys})
		}
		return m
	}
	own := &replQueue{key: "t/b/0", targets: []queue{{"b", 0}, {"b", 1}}, own: 0}
	hashed := &replQueue{key: "t/b/0", targets: []queue{{"b", 0}, {"b", 1}}, own: -1}
	var many []*primitive.MessageExt
	for range maxBatchMsgs + 1 {
		many = append(many, msg(7, "", 10))
	}
	var ka, kb string // keys that hash to different target queues
	for i := 0; kb == ""; i++ {
		k := strconv.Itoa(i)
		switch {
		case ka == "":
			ka = k
		case hashed.target(msg(0, k, 0)) != hashed.target(msg(0, ka, 0)):
			kb = k
		}
	}
	for _, c := range []struct {
		name string
		q    *replQueue
		msgs []*primitive.MessageExt
		want []int
	}{
		{"born apart", own, []*primitive.MessageExt{msg(1, "", 1), msg(2, "", 1), msg(3, "", 1)}, []int{1, 1, 1}},
		{"born together", own, []*primitive.MessageExt{msg(1, "", 1), msg(1, "a", 1), msg(1, "b", 1), msg(2, "", 1), msg(2, "", 1)}, []int{3, 2}},
		{"bytes", own, []*primitive.MessageExt{msg(1, "", 600<<10), msg(1, "", 600<<10), msg(1, "", 10)}, []int{1, 2}},
		{"count", own, many, []int{maxBatchMsgs, 1}},
		{"by key", hashed, []*primitive.MessageExt{msg(1, ka, 1), msg(1, ka, 1), msg(1, kb, 1), msg(1, ka, 1)}, []int{2, 1, 1}},
	} {
		var got []int
		for msgs := c.msgs; len(msgs) > 0; {
			n := sendRun(c.q, msgs)
			got = append(got, n)
			msgs = msgs[n:]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: runs %v, want %v", c.name, got, c.want)
		}
	}
}
