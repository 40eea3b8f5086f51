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
)

// A planned switchover moves consumer groups from the source cluster to
// the target with nothing skipped and, when their consumers and the
// source's producers stopped first, nothing read again: it waits until
// the replicator has copied every message of every source queue (the
// saved offsets reach the queues' ends), then reads the groups' offsets
// on the source, translates them with the offset syncs of that drained
// position (a queue that is caught up ends on a sync, so a group that read
// all of it translates exactly) and writes them on the target as failover
// does.

// ErrNotDrained: a switchover's timeout passed before the replicator had
// copied every message of the source queues.
var ErrNotDrained = errors.New("the replicator has not copied every message of the source yet")

// SwitchoverReport is the outcome of a switchover.
type SwitchoverReport struct {
	// Drained: every source queue was copied to its end.
	Drained bool `json:"drained"`
	// Remaining: when not drained, the messages left to copy per source
	// queue ("topic/broker/queue").
	Remaining map[string]int64 `json:"remaining,omitempty"`
	// Groups: the final checkpoints, applied on the target (as failover).
	Groups []GroupStatus `json:"groups"`
}

// switchPoll is how often a switchover looks at the replicator's progress.
const switchPoll = 200 * time.Millisecond

// Switchover carries out a planned switchover of groups (default: the
// source section's groups) for a replicator whose saved position load
// returns (read again until drained, at most timeout): see above. It
// refuses a group with a consumer online on the source (its offsets would
// still move), and it writes no offset of a group with a consumer online
// on the target (reported Online, as failover).
func Switchover(ctx context.Context, src ReplicatorConfig, dst Config, load func(context.Context) ([]byte, error), groups []string, timeout time.Duration) (SwitchoverReport, error) {
	rep, _, err := switchover(ctx, src, dst, load, groups, timeout)
	return rep, err
}

// switchover is Switchover, also returning the final checkpoints.
func switchover(ctx context.Context, src ReplicatorConfig, dst Config, load func(context.Context) ([]byte, error), groups []string, timeout time.Duration) (SwitchoverReport, map[string]map[string]groupCheckpoint, error) {
	rep := SwitchoverReport{Groups: []GroupStatus{}}
	if len(groups) == 0 {
		groups = src.Groups
	}
	if len(groups) == 0 {
		return rep, nil, fmt.Errorf("%w: switchover: name the groups (or set groups in the source section)", ErrConfig)
	}
	for _, g := range groups {
		if g == "" || !topicNameChars.MatchString(g) {
			return rep, nil, fmt.Errorf("%w: switchover: %q is not a group name", ErrConfig, g)
		}
	}
	srcCfg := Config{NameServers: src.NameServers, AccessKey: src.AccessKey, SecretKey: src.SecretKey}
	cred := srcCfg.credentials()
	pos, err := loadReplicaPosition(ctx, load)
	if err != nil {
		return rep, nil, err
	}
	queues := map[string]*tailQueue{} // the source queues of the position
	for _, key := range slices.Sorted(maps.Keys(pos.Next)) {
		parts := strings.Split(key, "/")
		id, err := strconv.Atoi(parts[len(parts)-1])
		if len(parts) != 3 || err != nil {
			return rep, nil, fmt.Errorf("%w: the saved position names a queue %q", ErrConfig, key)
		}
		addr, err := brokerAddr(ctx, srcCfg, parts[0], parts[1])
		if err != nil {
			return rep, nil, err
		}
		queues[key] = &tailQueue{topic: parts[0], broker: parts[1], addr: addr, id: id, cred: cred}
	}
	addrs := map[string]bool{}
	for _, q := range queues {
		addrs[q.addr] = true
	}
	for _, g := range groups {
		for _, a := range slices.Sorted(maps.Keys(addrs)) {
			on, err := groupOnline(ctx, cred, a, g)
			if err != nil {
				return rep, nil, sourceKeys(err)
			}
			if on {
				return rep, nil, fmt.Errorf("%w: switchover: group %s has consumers online on the source (broker %s): stop them first, so that its offsets there stop moving", ErrConfig, g, a)
			}
		}
	}

	deadline := time.Now().Add(timeout)
	for {
		rep.Remaining = map[string]int64{}
		for key, q := range queues {
			end, err := queueOffset(ctx, q, reqGetMaxOffset)
			if err != nil {
				return rep, nil, sourceKeys(err)
			}
			if left := end - pos.Next[key]; left > 0 {
				rep.Remaining[key] = left
			}
		}
		if len(rep.Remaining) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var left []string
			for _, k := range slices.Sorted(maps.Keys(rep.Remaining)) {
				left = append(left, fmt.Sprintf("%s: %d", k, rep.Remaining[k]))
			}
			return rep, nil, fmt.Errorf("switchover after %v: %w; messages left per source queue: %s (are the source's producers stopped, and the replicator running?): %w",
				timeout, ErrNotDrained, strings.Join(left, ", "), context.DeadlineExceeded)
		}
		select {
		case <-ctx.Done():
			return rep, nil, ctx.Err()
		case <-time.After(switchPoll):
		}
		if pos, err = loadReplicaPosition(ctx, load); err != nil {
			return rep, nil, err
		}
	}
	rep.Drained, rep.Remaining = true, nil
	if len(pos.Targets) == 0 {
		return rep, nil, fmt.Errorf("%w: switchover: the saved position names no queue copied to the queue of its own place (saved by an older sluice, or every target topic has fewer queues than its source): start the replicator once with this version", ErrConfig)
	}

	// The final checkpoints, from the drained position's syncs.
	now := time.Now()
	cps := map[string]map[string]groupCheckpoint{}
	for _, g := range groups {
		cps[g] = map[string]groupCheckpoint{}
		for _, key := range slices.Sorted(maps.Keys(pos.Targets)) {
			q, t := queues[key], pos.Targets[key]
			if q == nil {
				continue
			}
			off, ok, err := groupOffset(ctx, cred, q.addr, g, q.topic, q.id)
			if err != nil {
				return rep, nil, sourceKeys(err)
			}
			if !ok {
				continue // the group never read this queue on the source
			}
			dst, dup, ok := translate(pos.Syncs[key], off)
			if !ok {
				continue
			}
			cps[g][key] = groupCheckpoint{Topic: t.Topic, Broker: t.Broker, Queue: t.Queue, Src: off, Dst: dst, Dup: dup, At: now.UnixMilli()}
		}
	}
	sts, err := applyCheckpoints(ctx, dst, cps, true, now)
	if sts != nil {
		rep.Groups = sts
	}
	return rep, cps, err
}

// loadReplicaPosition loads and decodes a replicator's saved position.
func loadReplicaPosition(ctx context.Context, load func(context.Context) ([]byte, error)) (replicaPosition, error) {
	b, err := load(ctx)
	if err != nil {
		return replicaPosition{}, err
	}
	return decodeReplicaPosition(b)
}

// decodeReplicaPosition decodes a replicator's saved position (none: empty).
func decodeReplicaPosition(b []byte) (replicaPosition, error) {
	var pos replicaPosition
	if len(b) > 0 {
		if err := json.Unmarshal(b, &pos); err != nil || pos.Version != 1 {
			return pos, fmt.Errorf("%w: the saved position is not a replicator's", ErrConfig)
		}
	}
	return pos, nil
}

// Switchover is runtime.GroupSwitcher: Switchover on the running
// replicator's position. The final checkpoints are saved with it.
func (r *Replicator) Switchover(ctx context.Context, groups []string, timeout time.Duration) (any, error) {
	load := func(context.Context) ([]byte, error) {
		r.posMu.Lock()
		defer r.posMu.Unlock()
		return json.Marshal(r.pos)
	}
	rep, cps, err := switchover(ctx, r.src, r.dst, load, groups, timeout)
	if len(cps) > 0 {
		r.posMu.Lock()
		if r.pos.Checkpoints == nil {
			r.pos.Checkpoints = map[string]map[string]groupCheckpoint{}
		}
		for g, qs := range cps {
			if len(qs) > 0 {
				r.pos.Checkpoints[g] = qs
			}
		}
		r.posMu.Unlock()
		serr := r.save(ctx)
		err = errors.Join(err, serr)
	}
	return rep, err
}
