package rocketmq

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Topic discovery: which topics a subscriber consumes when the list is not
// written by hand, and which topics a publisher sends to that no consumer
// group reads.

const (
	// DefaultTopicsRefresh is how often a subscriber looks for new topics.
	DefaultTopicsRefresh = 10 * time.Second
	// unconsumedStart is how long, on top of three topics_refresh, a topic
	// may exist before a publisher says that no consumer group reads it:
	// a sink that finds topics by pattern needs up to its topics_refresh,
	// then its consumer's start.
	unconsumedStart = 10 * time.Second

	reqGetAllTopicListFromNameServer = 206
	reqQueryTopicConsumeByWho        = 300
)

// topicsPattern compiles a topics_regex, anchored at both ends as Kafka
// Connect's topics.regex is.
func topicsPattern(expr string) (*regexp.Regexp, error) {
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, fmt.Errorf("%w: topics_regex %q is not a regular expression: %v", ErrConfig, expr, err)
	}
	return re, nil
}

// TopicsHint says how a sink-only process names what it consumes, and how
// the source names its topics: the text of the error for a missing list.
func TopicsHint(prefix, mode string) string {
	if prefix == "" {
		return "set transport.topics to the topics to consume, or transport.topics_regex to a pattern of them"
	}
	p := sanitizeName(prefix)
	example := p + "_<database>_<table>"
	if mode == TopicPerDatabase {
		example = p + "_<database>"
	}
	return fmt.Sprintf("set transport.topics to the topics to consume, or transport.topics_regex to a pattern of them (new matching topics are picked up every topics_refresh); "+
		"the source publishes each table to the topic %s (topic_prefix %q, topic_mode %s; characters outside [A-Za-z0-9_|%%-] become '_'), "+
		"so `topics_regex: %s_.*` consumes every table of this pipeline",
		example, p, modeName(mode), regexp.QuoteMeta(p))
}

func modeName(mode string) string {
	if mode == "" {
		return TopicPerTable
	}
	return mode
}

// systemTopic reports topics that are never a table's: the brokers' own,
// retry and dead-letter topics of consumer groups, and sluice's dead-letter
// and schema topics of prefix.
func systemTopic(t, prefix string) bool {
	switch {
	case strings.HasPrefix(t, "%RETRY%"), strings.HasPrefix(t, "%DLQ%"),
		strings.HasPrefix(t, "RMQ_SYS_"), strings.HasPrefix(t, "rmq_sys_"):
		return true
	}
	return t == DeadLetterTopic(prefix) || t == SchemaTopic(prefix)
}

// fetchTopicList asks the name servers for every topic they route.
func fetchTopicList(ctx context.Context, addrs []string) ([]string, error) {
	h, body, err := queryNameServers(ctx, addrs, reqGetAllTopicListFromNameServer, nil)
	if err != nil {
		return nil, fmt.Errorf("rocketmq: cannot list the topics (is the name server up?): %w", err)
	}
	if h.Code != resSuccess {
		return nil, fmt.Errorf("rocketmq: topic list: code %d: %s", h.Code, h.Remark)
	}
	var tl struct {
		TopicList []string `json:"topicList"`
	}
	if err := json.Unmarshal(body, &tl); err != nil {
		return nil, fmt.Errorf("rocketmq: topic list: %w", err)
	}
	return tl.TopicList, nil
}

// matchingTopics lists the topics that re matches, without system topics,
// sorted.
func matchingTopics(all []string, re *regexp.Regexp, prefix string) []string {
	var out []string
	for _, t := range all {
		if re.MatchString(t) && !systemTopic(t, prefix) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// topicReaders returns the consumer groups that read topic: those with a
// live subscription or stored offsets on one of its brokers.
func topicReaders(ctx context.Context, cfg Config, topic string) ([]string, error) {
	qs, err := tailQueues(ctx, cfg.NameServers, topic)
	if err != nil {
		return nil, err
	}
	var groups []string
	asked := map[string]bool{}
	var lastErr error
	for _, q := range qs {
		if asked[q.addr] || q.addr == "" {
			continue
		}
		asked[q.addr] = true
		ext := map[string]string{"topic": topic}
		var h remotingHeader
		var body []byte
		if cfg.hasCredentials() {
			h, body, err = invokeSigned(ctx, cfg.credentials(), q.addr, reqQueryTopicConsumeByWho, ext, nil)
		} else {
			h, body, err = invoke(ctx, q.addr, reqQueryTopicConsumeByWho, ext)
		}
		if err != nil {
			lastErr = err
			continue
		}
		if h.Code != resSuccess {
			lastErr = fmt.Errorf("code %d: %s", h.Code, h.Remark)
			continue
		}
		var gl struct {
			GroupList []string `json:"groupList"`
		}
		if err := json.Unmarshal(body, &gl); err != nil {
			lastErr = err
			continue
		}
		groups = append(groups, gl.GroupList...)
	}
	if len(groups) == 0 && lastErr != nil {
		return nil, fmt.Errorf("rocketmq: who reads topic %q: %w", topic, lastErr)
	}
	slices.Sort(groups)
	return slices.Compact(groups), nil
}

// UnconsumedTopics returns the topics this publisher has sent to for over
// three topics_refresh and 10 s that no consumer group reads (no live subscription, no stored
// offset): their records reach no sink. Empty in a process that runs the
// sink too.
func (p *Publisher) UnconsumedTopics() []string {
	if p.readers == nil {
		return nil
	}
	return p.readers.unconsumed()
}

// readerWatch asks the brokers, for each topic the publisher maps, whether a
// consumer group reads it, until one does.
type readerWatch struct {
	cfg   Config
	log   *slog.Logger
	reg   *Registry
	every time.Duration
	grace time.Duration

	mu        sync.Mutex
	firstSeen map[string]time.Time
	read      map[string]bool // a group reads it: not asked again
	unread    []string
}

func newReaderWatch(cfg Config, log *slog.Logger, reg *Registry) *readerWatch {
	// Asked every topics_refresh, so the check keeps pace with a sink
	// that looks for new topics as often.
	return &readerWatch{cfg: cfg, log: log, reg: reg, every: cfg.TopicsRefresh, grace: 3*cfg.TopicsRefresh + unconsumedStart,
		firstSeen: map[string]time.Time{}, read: map[string]bool{}}
}

func (w *readerWatch) unconsumed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.unread)
}

// run checks every w.every until stop is closed.
func (w *readerWatch) run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w.check(ctx, now)
		}
	}
}

// check asks about every topic mapped for at least w.grace that no group
// was seen reading yet.
func (w *readerWatch) check(ctx context.Context, now time.Time) {
	var unread []string
	for _, topic := range w.reg.Topics() {
		w.mu.Lock()
		seen, ok := w.firstSeen[topic]
		if !ok {
			w.firstSeen[topic] = now
			seen = now
		}
		done := w.read[topic]
		w.mu.Unlock()
		if done || now.Sub(seen) < w.grace {
			continue
		}
		groups, err := topicReaders(ctx, w.cfg, topic)
		if err != nil {
			w.log.Debug("rocketmq: cannot ask the brokers who reads a topic", "topic", topic, "err", err)
			continue
		}
		if len(groups) > 0 {
			w.mu.Lock()
			w.read[topic] = true
			w.mu.Unlock()
			continue
		}
		unread = append(unread, topic)
	}
	slices.Sort(unread)
	w.mu.Lock()
	fresh := slices.DeleteFunc(slices.Clone(unread), func(t string) bool { return slices.Contains(w.unread, t) })
	w.unread = unread
	w.mu.Unlock()
	for _, t := range fresh {
		w.log.Warn("rocketmq: no consumer group reads a topic this source publishes to: its records reach no sink. "+
			"Add it to the sink's transport.topics, or give the sink a transport.topics_regex that matches it",
			"topic", t, "group_expected", w.cfg.Group)
	}
}
