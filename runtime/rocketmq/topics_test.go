package rocketmq

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestTopicsRegexConfig(t *testing.T) {
	base := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p"}
	c := base
	c.Topics, c.TopicsRegex = []string{"p_db_t"}, "p_.*"
	if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("topics and topics_regex together: %v", err)
	}
	c = base
	c.TopicsRegex = "p_(("
	if err := c.Validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("a bad pattern: %v", err)
	}
	c, err := base.baseDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.topics(); err == nil || !strings.Contains(err.Error(), "p_<database>_<table>") {
		t.Fatalf("no topics: the error must say how topics are named: %v", err)
	}
}

func TestMatchingTopics(t *testing.T) {
	re, err := topicsPattern("app_.*")
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"app_db_t", "app", "xapp_db_t", "app_dlq", "app_schemas", "%RETRY%app_sink", "%DLQ%app_sink", "RMQ_SYS_TRACE_TOPIC", "app_db_a", "app_db_t"}
	if got := matchingTopics(all, re, "app"); !slices.Equal(got, []string{"app_db_a", "app_db_t"}) {
		t.Fatalf("matching %v", got)
	}
}
