package rocketmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// groupConfigs reads the subscription groups of the broker at addr: each
// group's SubscriptionGroupConfig as JSON.
func groupConfigs(ctx context.Context, cred primitive.Credentials, addr string) (map[string]json.RawMessage, error) {
	h, body, err := invokeSigned(ctx, cred, addr, reqGetAllGroups, nil, nil)
	if err == nil {
		err = authError(cred.AccessKey, addr, h)
	}
	if err == nil && h.Code != resSuccess {
		err = fmt.Errorf("code %d: %s", h.Code, h.Remark)
	}
	if err != nil {
		return nil, fmt.Errorf("rocketmq: subscription groups of %s: %w", addr, err)
	}
	var w struct {
		Table map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	if err := json.Unmarshal(quoteIntKeys(body), &w); err != nil {
		return nil, fmt.Errorf("rocketmq: subscription groups of %s: %w", addr, err)
	}
	return w.Table, nil
}

// copyGroups copies the subscription group of each of r's groups (its
// settings: retries, broadcast, orderly, consume-from-min…) from the source
// to every master broker of the target's cluster, creating or updating it
// there. A group the source's brokers do not have yet is left out: its
// offsets create it on the target with the broker's defaults.
func (r *Replicator) copyGroups(ctx context.Context) error {
	cred := r.src.credentials()
	srcAddrs := map[string]bool{}
	for _, q := range r.queues {
		srcAddrs[q.src.addr] = true
	}
	configs := map[string]json.RawMessage{}
	for _, a := range slices.Sorted(maps.Keys(srcAddrs)) {
		table, err := groupConfigs(ctx, cred, a)
		if err != nil {
			return sourceKeys(err)
		}
		for _, g := range r.src.Groups {
			if c, ok := table[g]; ok && configs[g] == nil {
				configs[g] = c
			}
		}
	}
	ci, err := fetchClusterInfo(ctx, r.dst.NameServers)
	if err != nil {
		return err
	}
	for _, g := range r.src.Groups {
		if configs[g] == nil {
			r.log.Info("replicator: group not on the source's brokers yet; not copied", "group", g)
			continue
		}
		for _, a := range ci.masters(r.dst.Cluster) {
			if err := putGroup(ctx, r.dst.credentials(), a, g, configs[g]); err != nil {
				return fmt.Errorf("rocketmq replicator: copy subscription group: %w", err)
			}
		}
	}
	return nil
}

// What the replicator does to a target topic (ReplicatorConfig.TargetTopics).
const (
	// TargetTopicsSync creates and updates each target topic to match its
	// source: at least as many queues, the same permissions (write access
	// always kept) and message type.
	TargetTopicsSync = "sync"
	// TargetTopicsKeep creates a missing target topic as sync does but
	// never changes an existing one.
	TargetTopicsKeep = "keep"
)

// messageTypeAttribute is the topic attribute of RocketMQ 5 that says
// which messages a topic takes (NORMAL, FIFO, DELAY, TRANSACTION, MIXED).
const messageTypeAttribute = "message.type"

const reqGetTopicConfig = 351 // GET_TOPIC_CONFIG (RocketMQ 5)

// topicSettings are the settings of a topic on one broker that the
// replicator copies (a TopicConfig, as GET_TOPIC_CONFIG answers it).
type topicSettings struct {
	Read       int               `json:"readQueueNums"`
	Write      int               `json:"writeQueueNums"`
	Perm       int               `json:"perm"`
	Attributes map[string]string `json:"attributes"`
}

// topicSettingsAt reads topic's settings on the broker at addr.
func topicSettingsAt(ctx context.Context, cred primitive.Credentials, addr, topic string) (topicSettings, error) {
	h, body, err := invokeSigned(ctx, cred, addr, reqGetTopicConfig, map[string]string{"topic": topic}, nil)
	if err == nil {
		err = authError(cred.AccessKey, addr, h)
	}
	if err == nil && h.Code == resNotSupported {
		err = notSupported{h.Remark}
	}
	if err == nil && h.Code != resSuccess {
		err = fmt.Errorf("code %d: %s", h.Code, h.Remark)
	}
	var s topicSettings
	if err == nil {
		err = json.Unmarshal(body, &s)
	}
	if err != nil {
		return s, fmt.Errorf("rocketmq: settings of topic %s at %s: %w", topic, addr, err)
	}
	return s, nil
}

// notSupported is a broker's REQUEST_CODE_NOT_SUPPORTED answer.
type notSupported struct{ remark string }

func (e notSupported) Error() string { return "not supported by the broker: " + e.remark }

// putTopicSettings creates or updates topic on the broker at addr with s
// (its attributes added or changed, none removed).
func putTopicSettings(ctx context.Context, cred primitive.Credentials, addr, topic string, s topicSettings) error {
	var attrs []string
	for _, k := range slices.Sorted(maps.Keys(s.Attributes)) {
		attrs = append(attrs, "+"+k+"="+s.Attributes[k])
	}
	h, _, err := invokeSigned(ctx, cred, addr, reqUpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(s.Read), "writeQueueNums": strconv.Itoa(s.Write),
		"perm": strconv.Itoa(s.Perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
		"attributes": strings.Join(attrs, ","),
	}, nil)
	if err == nil {
		err = authError(cred.AccessKey, addr, h)
	}
	if err == nil && h.Code != resSuccess {
		err = fmt.Errorf("code %d: %s", h.Code, h.Remark)
	}
	if err != nil {
		return fmt.Errorf("rocketmq: update topic %s at %s: %w", topic, addr, err)
	}
	return nil
}

// syncTarget makes dstTopic, the target of source topic (whose queues are
// srcQs), match it: a missing one is created in the target's cluster with
// the source's queue count divided among its master brokers (rounded up);
// then, with target_topics: sync or when it was just created, each of its
// brokers gets at least its share of the source's queue count, and the
// source's permissions (with write access, which the copies need) and
// message type. Queue counts and permissions come from the routes, the
// message type from GET_TOPIC_CONFIG (RocketMQ 5; a broker without it has
// none to copy). It returns the target's queues, once the name servers
// route them all, and the master address of each of its brokers.
func (r *Replicator) syncTarget(ctx context.Context, topic, dstTopic string, srcQs []*tailQueue) ([]queue, map[string]string, error) {
	fail := func(err error) ([]queue, map[string]string, error) {
		return nil, nil, fmt.Errorf("rocketmq replicator: target topic %q: %w", dstTopic, err)
	}
	_, err := fetchRoute(ctx, r.dst.NameServers, dstTopic)
	existed := err == nil
	if err != nil && !errors.Is(err, errTopicNotExist) {
		return fail(err)
	}
	ci, err := fetchClusterInfo(ctx, r.dst.NameServers)
	if err != nil {
		return fail(err)
	}
	cfg := r.dst
	cfg.Queues = ceilDiv(len(srcQs), max(len(ci.masters(r.dst.Cluster)), 1))
	if _, err := createTopic(ctx, r.adm, cfg, dstTopic); err != nil {
		return fail(err)
	}
	route, err := fetchRoute(ctx, r.dst.NameServers, dstTopic)
	if err != nil {
		return fail(err)
	}
	addrs := map[string]string{}
	for _, bd := range route.BrokerDatas {
		addrs[bd.BrokerName] = bd.BrokerAddrs["0"]
	}
	if r.src.TargetTopics == TargetTopicsSync || !existed {
		srcRoute, err := fetchRoute(ctx, r.src.NameServers, topic)
		if err != nil {
			return nil, nil, err
		}
		perm := 6 // read and write
		if i := slices.IndexFunc(srcRoute.QueueDatas, func(qd queueData) bool { return qd.BrokerName == srcQs[0].broker }); i >= 0 {
			perm = srcRoute.QueueDatas[i].Perm
		}
		perm |= permWrite
		msgType, err := messageType(ctx, r.src.credentials(), srcQs[0].addr, topic)
		if err != nil {
			return nil, nil, sourceKeys(err)
		}
		per := ceilDiv(len(srcQs), max(len(route.QueueDatas), 1))
		total := 0
		for _, qd := range route.QueueDatas {
			addr := addrs[qd.BrokerName]
			if addr == "" {
				return fail(fmt.Errorf("broker %s has no master", qd.BrokerName))
			}
			upd := topicSettings{Read: max(qd.ReadQueueNums, per), Write: max(qd.WriteQueueNums, per), Perm: perm, Attributes: map[string]string{}}
			total += upd.Write
			if msgType != "" {
				cur, err := messageType(ctx, r.dst.credentials(), addr, dstTopic)
				if err != nil {
					return fail(err)
				}
				if cur != msgType {
					upd.Attributes[messageTypeAttribute] = msgType
				}
			}
			if upd.Read == qd.ReadQueueNums && upd.Write == qd.WriteQueueNums && upd.Perm == qd.Perm && len(upd.Attributes) == 0 {
				continue
			}
			if err := putTopicSettings(ctx, r.dst.credentials(), addr, dstTopic, upd); err != nil {
				return fail(err)
			}
			r.log.Info("replicator: target topic updated to match the source", "topic", dstTopic, "broker", qd.BrokerName,
				"queues", upd.Write, "was", qd.WriteQueueNums, "perm", upd.Perm, "attributes", upd.Attributes)
		}
		// The broker registers the change with the name servers at once;
		// wait until they route it.
		deadline := time.Now().Add(topicVisibleTimeout)
		for len(route.writeQueues()) < total {
			if time.Now().After(deadline) {
				return fail(fmt.Errorf("the name servers route %d of its %d queues %s after it was updated", len(route.writeQueues()), total, topicVisibleTimeout))
			}
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			if route, err = fetchRoute(ctx, r.dst.NameServers, dstTopic); err != nil {
				return fail(err)
			}
		}
	}
	return routeQueueSet(route).queues(), addrs, nil
}

// resNotSupported is REQUEST_CODE_NOT_SUPPORTED: an older broker.
const resNotSupported = 3

// messageType is topic's message.type attribute on the broker at addr;
// empty when it has none, or the broker has no GET_TOPIC_CONFIG (4.x).
func messageType(ctx context.Context, cred primitive.Credentials, addr, topic string) (string, error) {
	s, err := topicSettingsAt(ctx, cred, addr, topic)
	var nse notSupported
	if errors.As(err, &nse) {
		return "", nil
	}
	return s.Attributes[messageTypeAttribute], err
}

// ceilDiv is a/b rounded up (b > 0).
func ceilDiv(a, b int) int { return max((a+b-1)/b, 1) }
