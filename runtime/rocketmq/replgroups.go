package rocketmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// Consumer progress across clusters, as Kafka's MirrorMaker 2 does it:
// the replicator keeps sparse offset syncs per source queue (the source
// offset of a copied message and the target offset of its copy), turns
// each synced group's committed offset on the source into a target offset
// that never lies past copied data (a checkpoint per group and queue), and
// writes checkpoints into the target's group offsets only while the group
// has no consumer online there, never moving an offset back (KIP-545).
//
// Syncs and checkpoints live in the replicator's saved position, the same
// JSON document as its queue offsets, written in the same save after each
// acknowledged batch: a sync never names a copy the position does not
// count as made, the pair survives a kill -9 as the offsets do, and it is
// kept wherever the pipeline keeps positions (files under sluice run, the
// coordinator database in a worker cluster), with no topic to create.

// Defaults of the consumer-progress keys.
const (
	DefaultOffsetSyncMessages = 100
	DefaultOffsetSyncInterval = 10 * time.Second
	DefaultCheckpointInterval = 10 * time.Second
)

// recentOffsetSyncs is how many of a queue's newest syncs addSync keeps
// all of; maxOffsetSyncs bounds the syncs it keeps: those, and one per
// power of two of age.
const (
	recentOffsetSyncs = 8
	maxOffsetSyncs    = recentOffsetSyncs + 65
)

// offsetSync says that the message at source offset Src was copied to
// target offset Dst (of the queue the source queue maps to).
type offsetSync struct {
	Src int64 `json:"s"`
	Dst int64 `json:"t"`
}

// groupCheckpoint is one group's progress on one source queue, translated
// to the target queue its messages are copied to.
type groupCheckpoint struct {
	Topic  string `json:"topic"` // the target topic
	Broker string `json:"broker"`
	Queue  int    `json:"queue"`
	Src    int64  `json:"src"` // the group's committed offset on the source
	Dst    int64  `json:"dst"` // where it goes on in the target queue
	Dup    int64  `json:"dup"` // source messages before Src it reads again there
	At     int64  `json:"at"`  // when it was taken, Unix ms
}

// addSync adds s, the newest sync of a queue, to syncs (oldest first) and
// thins them out: it keeps the newest recentOffsetSyncs and, of the older
// ones, the oldest whose age (messages behind s) falls in each of
// [0, every), [every, 2×every), [2×every, 4×every)…, so the oldest sync
// stays and a kept sync ages from one range to the next. Recent offsets
// translate precisely (within every messages), old ones more coarsely
// (within about their age; KAFKA-14797).
func addSync(syncs []offsetSync, s offsetSync, every int64) []offsetSync {
	for len(syncs) > 0 && syncs[len(syncs)-1].Src >= s.Src {
		syncs = syncs[:len(syncs)-1] // from before a position reset: stale
	}
	recent := max(len(syncs)-(recentOffsetSyncs-1), 0)
	var out []offsetSync
	bucket := -1 // the age range of the last kept sync
	for _, c := range syncs[:recent] {
		if b := bits.Len64(uint64((s.Src - c.Src) / max(every, 1))); b != bucket {
			out = append(out, c)
			bucket = b
		}
	}
	out = append(out, syncs[recent:]...)
	return append(out, s)
}

// translate turns a group's committed offset on the source queue (the
// next message it reads) into the target queue's offset where it goes on,
// never past a copied message: from the last sync at or before it. dup is
// how many source messages the group already read that it reads again
// there. ok is false when the offset is older than every sync.
func translate(syncs []offsetSync, committed int64) (dst, dup int64, ok bool) {
	i := sort.Search(len(syncs), func(i int) bool { return syncs[i].Src >= committed })
	if i < len(syncs) && syncs[i].Src == committed {
		return syncs[i].Dst, 0, true
	}
	if i == 0 {
		return 0, 0, false
	}
	s := syncs[i-1]
	return s.Dst + 1, committed - 1 - s.Src, true
}

// Broker request and answer codes of group offsets.
const (
	reqQueryConsumerOffset  = 14  // QUERY_CONSUMER_OFFSET
	reqUpdateConsumerOffset = 15  // UPDATE_CONSUMER_OFFSET
	reqGetConsumerList      = 38  // GET_CONSUMER_LIST_BY_GROUP
	reqCreateGroup          = 200 // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
	reqGetAllGroups         = 201 // GET_ALL_SUBSCRIPTIONGROUP_CONFIG
	resSystemError          = 1
	resGroupNotExist        = 26 // SUBSCRIPTION_GROUP_NOT_EXIST
)

// groupOffset reads group's committed offset of a queue from the broker
// at addr; ok is false when the group has none.
func groupOffset(ctx context.Context, cred primitive.Credentials, addr, group, topic string, queue int) (off int64, ok bool, err error) {
	h, _, err := invokeSigned(ctx, cred, addr, reqQueryConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue), "setZeroIfNotFound": "false"}, nil)
	if err == nil {
		err = authError(cred.AccessKey, addr, h)
	}
	if err != nil {
		return 0, false, fmt.Errorf("rocketmq: offset of group %s on %s queue %d at %s: %w", group, topic, queue, addr, err)
	}
	switch h.Code {
	case resSuccess:
		n, err := strconv.ParseInt(h.ExtFields["offset"], 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("rocketmq: offset of group %s on %s queue %d: bad answer %q", group, topic, queue, h.ExtFields["offset"])
		}
		return n, n >= 0, nil
	case resQueryNotFound, resGroupNotExist:
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("rocketmq: offset of group %s on %s queue %d at %s: code %d: %s", group, topic, queue, addr, h.Code, h.Remark)
}

// setGroupOffset commits off as group's offset of a queue on the broker at
// addr, creating the subscription group there first if it has none.
func setGroupOffset(ctx context.Context, cred primitive.Credentials, addr, group, topic string, queue int, off int64) error {
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue), "commitOffset": strconv.FormatInt(off, 10)}
	for attempt := 0; ; attempt++ {
		h, _, err := invokeSigned(ctx, cred, addr, reqUpdateConsumerOffset, ext, nil)
		if err == nil {
			err = authError(cred.AccessKey, addr, h)
		}
		if err != nil {
			return schema.Wrapf("rocketmq", err, "set offset of group %s on %s queue %d at %s", group, topic, queue, addr)
		}
		switch {
		case h.Code == resSuccess:
			return nil
		case h.Code == resGroupNotExist && attempt == 0:
			if err := createGroup(ctx, cred, addr, group); err != nil {
				return err
			}
			continue
		}
		return fmt.Errorf("rocketmq: set offset of group %s on %s queue %d at %s: code %d: %s", group, topic, queue, addr, h.Code, h.Remark)
	}
}

// createGroup creates subscription group group on the broker at addr with
// the broker's defaults.
func createGroup(ctx context.Context, cred primitive.Credentials, addr, group string) error {
	body, err := json.Marshal(map[string]any{"groupName": group, "consumeEnable": true, "consumeFromMinEnable": true,
		"consumeBroadcastEnable": true, "retryQueueNums": 1, "retryMaxTimes": 16, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1})
	if err != nil {
		return err
	}
	return putGroup(ctx, cred, addr, group, body)
}

// putGroup creates or updates subscription group group on the broker at
// addr with config, a SubscriptionGroupConfig as JSON.
func putGroup(ctx context.Context, cred primitive.Credentials, addr, group string, config []byte) error {
	h, _, err := invokeSigned(ctx, cred, addr, reqCreateGroup, nil, config)
	if err == nil {
		err = authError(cred.AccessKey, addr, h)
	}
	if err == nil && h.Code != resSuccess {
		err = fmt.Errorf("code %d: %s", h.Code, h.Remark)
	}
	if err != nil {
		return fmt.Errorf("rocketmq: create group %s at %s: %w", group, addr, err)
	}
	return nil
}

// groupOnline reports whether group has a consumer connected to the broker
// at addr.
func groupOnline(ctx context.Context, cred primitive.Credentials, addr, group string) (bool, error) {
	h, body, err := invokeSigned(ctx, cred, addr, reqGetConsumerList, map[string]string{"consumerGroup": group}, nil)
	if err == nil {
		err = authError(cred.AccessKey, addr, h)
	}
	if err != nil {
		return false, schema.Wrapf("rocketmq", err, "consumers of group %s at %s", group, addr)
	}
	switch {
	case h.Code == resSuccess:
		var list struct {
			IDs []string `json:"consumerIdList"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return false, schema.Wrapf("rocketmq", err, "consumers of group %s at %s", group, addr)
		}
		return len(list.IDs) > 0, nil
	case h.Code == resSystemError && strings.HasPrefix(h.Remark, "no consumer"):
		return false, nil
	}
	return false, fmt.Errorf("rocketmq: consumers of group %s at %s: code %d: %s", group, addr, h.Code, h.Remark)
}

// GroupStatus is a synced group's state on the target cluster, from its
// last checkpoints.
type GroupStatus struct {
	Group string `json:"group"`
	// Queues: the queues with a checkpoint.
	Queues int `json:"queues"`
	// Lag: the messages the group has to read on the target from its
	// checkpoints (the target queues' ends minus the checkpoints).
	Lag int64 `json:"lag"`
	// CheckpointAge: the age of its oldest checkpoint, in seconds. The group
	// reads again on the target what it read on the source in that time.
	CheckpointAge float64 `json:"checkpoint_age_seconds"`
	// DuplicateWindow: the messages it had read on the source when the
	// checkpoints were taken that it reads again on the target (the gap
	// between its offsets and the offset syncs before them).
	DuplicateWindow int64 `json:"duplicate_window"`
	// Online: a consumer of the group is connected to the target; its
	// offsets there are then not written.
	Online bool `json:"online"`
	// Applied: queues whose target offset was set to the checkpoint; Kept:
	// queues whose target offset was already there or further.
	Applied int `json:"applied"`
	Kept    int `json:"kept"`
}

// ReplicaGroups reports each group of a replicator's saved position
// (position, as the position store holds it) on the target cluster dst.
// With apply, it also writes the checkpoints into the target's group
// offsets (failover): only for a group with no consumer online there, and
// only where the target offset is behind the checkpoint.
func ReplicaGroups(ctx context.Context, dst Config, position []byte, apply bool) ([]GroupStatus, error) {
	pos, err := decodeReplicaPosition(position)
	if err != nil {
		return nil, err
	}
	return applyCheckpoints(ctx, dst, pos.Checkpoints, apply, time.Now())
}

// applyCheckpoints is ReplicaGroups on decoded checkpoints.
func applyCheckpoints(ctx context.Context, dst Config, cps map[string]map[string]groupCheckpoint, apply bool, now time.Time) ([]GroupStatus, error) {
	cred := dst.credentials()
	addrs := map[string]string{} // "target topic/broker" -> master address
	addr := func(topic, broker string) (string, error) {
		k := topic + "/" + broker
		if a, ok := addrs[k]; ok {
			return a, nil
		}
		a, err := brokerAddr(ctx, dst, topic, broker)
		if err != nil {
			return "", err
		}
		addrs[k] = a
		return a, nil
	}
	var out []GroupStatus
	for _, group := range slices.Sorted(maps.Keys(cps)) {
		st := GroupStatus{Group: group}
		type target struct {
			cp   groupCheckpoint
			addr string
		}
		var ts []target
		brokers := map[string]bool{}
		oldest := now.UnixMilli()
		for _, key := range slices.Sorted(maps.Keys(cps[group])) {
			cp := cps[group][key]
			a, err := addr(cp.Topic, cp.Broker)
			if err != nil {
				return nil, err
			}
			ts = append(ts, target{cp, a})
			brokers[a] = true
			oldest = min(oldest, cp.At)
			st.DuplicateWindow += cp.Dup
			end, err := queueOffset(ctx, &tailQueue{topic: cp.Topic, broker: cp.Broker, addr: a, id: cp.Queue, cred: cred}, reqGetMaxOffset)
			if err != nil {
				return nil, err
			}
			st.Lag += max(end-cp.Dst, 0)
		}
		st.Queues = len(ts)
		st.CheckpointAge = float64(now.UnixMilli()-oldest) / 1000
		for _, a := range slices.Sorted(maps.Keys(brokers)) {
			on, err := groupOnline(ctx, cred, a, group)
			if err != nil {
				return nil, err
			}
			st.Online = st.Online || on
		}
		if apply && !st.Online {
			for _, t := range ts {
				cur, ok, err := groupOffset(ctx, cred, t.addr, group, t.cp.Topic, t.cp.Queue)
				if err != nil {
					return nil, err
				}
				if ok && cur >= t.cp.Dst {
					st.Kept++ // never moved back
					continue
				}
				if err := setGroupOffset(ctx, cred, t.addr, group, t.cp.Topic, t.cp.Queue, t.cp.Dst); err != nil {
					return nil, err
				}
				st.Applied++
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// Checkpoint reads each group's committed offsets on the source, turns
// those of queues copied to the queue of their own place into checkpoints,
// saves them with the position and, with sync_group_offsets, writes them
// into the target's group offsets. Read calls it every
// checkpoint_interval, between batches. A group offset the source does not
// answer (the source down) leaves the queue's last checkpoint as it was.
func (r *Replicator) Checkpoint(ctx context.Context) error {
	r.pointed = time.Now()
	defer func() { r.lastPoint.Store(r.pointed.UnixMilli()) }()
	cred := r.src.credentials()
	r.posMu.Lock()
	if r.pos.Checkpoints == nil {
		r.pos.Checkpoints = map[string]map[string]groupCheckpoint{}
	}
	now := time.Now().UnixMilli()
	down := map[string]bool{} // source brokers that did not answer: asked no more this time
	for _, g := range r.src.Groups {
		cps := r.pos.Checkpoints[g]
		if cps == nil {
			cps = map[string]groupCheckpoint{}
		}
		for _, q := range r.queues {
			if !q.mapped() || down[q.src.addr] {
				continue
			}
			off, ok, err := groupOffset(ctx, cred, q.src.addr, g, q.src.topic, q.src.id)
			if err != nil {
				if ctx.Err() != nil {
					r.posMu.Unlock()
					return ctx.Err()
				}
				if errors.Is(err, ErrAuth) { // refused credentials do not fix themselves: fatal
					r.posMu.Unlock()
					return sourceKeys(err)
				}
				r.log.Warn("replicator: cannot read a group's offset on the source; its last checkpoint stays", "group", g, "queue", q.key, "err", err)
				down[q.src.addr] = true
				continue
			}
			if !ok {
				continue
			}
			dst, dup, ok := translate(r.pos.Syncs[q.key], off)
			if !ok {
				continue // before every sync: nothing copied is known to precede it
			}
			t := q.targets[q.own]
			cp := groupCheckpoint{Topic: q.dst, Broker: t.Broker, Queue: t.ID, Src: off, Dst: dst, Dup: dup, At: now}
			if old, ok := cps[q.key]; ok && old.Src == off && old.Dup < dup && old.Topic == cp.Topic && old.Broker == cp.Broker && old.Queue == cp.Queue {
				// The group has not moved: its last translation, from a sync
				// since thinned out, still holds and reads less again.
				cp.Dst, cp.Dup = old.Dst, old.Dup
			}
			cps[q.key] = cp
		}
		if len(cps) > 0 {
			r.pos.Checkpoints[g] = cps
		}
	}
	r.posMu.Unlock()
	err := r.save(ctx)
	if err != nil || !r.src.SyncGroupOffsets {
		return err
	}
	sts, err := r.Groups(ctx, true)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("replicator: cannot write the groups' offsets on the target; trying again at the next checkpoint", "err", err)
		return nil
	}
	for _, st := range sts.([]GroupStatus) {
		if st.Applied > 0 {
			r.log.Debug("replicator: group offsets written on the target", "group", st.Group, "queues", st.Applied)
		}
	}
	return nil
}

var _ runtime.GroupReporter = (*Replicator)(nil)

// Groups is runtime.GroupReporter: the groups of r's last checkpoints on
// the target ([]GroupStatus), and with apply their offsets written there
// (as ReplicaGroups).
func (r *Replicator) Groups(ctx context.Context, apply bool) (any, error) {
	r.posMu.Lock()
	cps := make(map[string]map[string]groupCheckpoint, len(r.pos.Checkpoints))
	for g, qs := range r.pos.Checkpoints {
		cps[g] = maps.Clone(qs)
	}
	r.posMu.Unlock()
	sts, err := applyCheckpoints(ctx, r.dst, cps, apply, time.Now())
	if sts == nil {
		sts = []GroupStatus{}
	}
	return sts, err
}

// GroupOffset is group's committed offset of queue queue of topic on
// broker (a broker name) in the cluster of cfg; ok is false when it has
// none.
func GroupOffset(ctx context.Context, cfg Config, group, topic, broker string, queue int) (off int64, ok bool, err error) {
	addr, err := brokerAddr(ctx, cfg, topic, broker)
	if err != nil {
		return 0, false, err
	}
	return groupOffset(ctx, cfg.credentials(), addr, group, topic, queue)
}

// CommitGroupOffset sets group's committed offset of queue queue of topic
// on broker in the cluster of cfg to off, as a consumer's commit does
// (creating the subscription group when the broker has none).
func CommitGroupOffset(ctx context.Context, cfg Config, group, topic, broker string, queue int, off int64) error {
	addr, err := brokerAddr(ctx, cfg, topic, broker)
	if err != nil {
		return err
	}
	return setGroupOffset(ctx, cfg.credentials(), addr, group, topic, queue, off)
}

// brokerAddr is the master address of broker in topic's route.
func brokerAddr(ctx context.Context, cfg Config, topic, broker string) (string, error) {
	route, err := fetchRoute(ctx, cfg.NameServers, topic)
	if err != nil {
		return "", err
	}
	for _, bd := range route.BrokerDatas {
		if bd.BrokerName == broker && bd.BrokerAddrs["0"] != "" {
			return bd.BrokerAddrs["0"], nil
		}
	}
	return "", fmt.Errorf("rocketmq: topic %s: broker %s has no master", topic, broker)
}
