package rocketmq

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

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
	cred := primitive.Credentials{AccessKey: r.src.AccessKey, SecretKey: r.src.SecretKey}
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
