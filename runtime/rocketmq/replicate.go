package rocketmq

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// The replicator copies topics of one RocketMQ cluster (the source
// section, ReplicatorConfig) to another (the transport section's cluster)
// byte for byte: body, keys, tags, user properties, flag and born
// timestamp, with the source coordinates added as properties (Src*). It is
// a runtime.Source that sends each batch itself and saves its offsets
// (runtime.PositionKeeper) once the target acknowledged the batch, before
// it pulls that queue again: a kill -9 copies at most that one batch again.

// Properties the replicator adds to each copy: where it was read.
const (
	SrcClusterProperty = "sluice_src_cluster"
	SrcBrokerProperty  = "sluice_src_broker"
	SrcQueueProperty   = "sluice_src_queue"
	SrcOffsetProperty  = "sluice_src_offset"
	SrcMsgIDProperty   = "sluice_src_msgid"
	// HeartbeatProperty marks a heartbeat (heartbeat.go) with the name of
	// the cluster whose replicator wrote it.
	HeartbeatProperty = "sluice_heartbeat"
)

// Where the replicator starts a queue it has no saved offset for.
const (
	ReplicateFromBeginning = "beginning"
	ReplicateFromNow       = "now"
)

// DefaultReplicateBatch is the most messages the replicator copies from
// one queue before it saves its offset.
const DefaultReplicateBatch = 64

// replicaDropped are the system properties that would make the target
// broker act on the copy a second time (delay, timer, transaction) or
// that a pull adds: the copy is a plain message, due at once.
var replicaDropped = []string{
	primitive.PropertyDelayTimeLevel, primitive.PropertyTransactionPrepared, primitive.PropertyProducerGroup,
	primitive.PropertyTranscationPreparedQueueOffset, primitive.PropertyRealTopic, primitive.PropertyRealQueueId,
	"__STARTDELIVERTIME", primitive.PropertyMinOffset, primitive.PropertyMaxOffset,
	primitive.PropertyTimerDeliverMS, "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_OUT_MS", "TIMER_ENQUEUE_MS",
	"TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_DEL_UNIQKEY",
}

// ReplicatorConfig is the source section of a replicator (`type: rocketmq`):
// the cluster it copies from and what it copies.
type ReplicatorConfig struct {
	NameServers []string `yaml:"name_servers" sluice:"required"`
	// Cluster names the source cluster in the copies' sluice_src_cluster
	// property; default "DefaultCluster".
	Cluster string `yaml:"cluster"`
	// Topics to copy, or TopicsRegex: every topic whose whole name matches
	// (system topics excepted), looked for again every TopicsRefresh.
	Topics        []string      `yaml:"topics"`
	TopicsRegex   string        `yaml:"topics_regex"`
	TopicsRefresh time.Duration `yaml:"topics_refresh"`
	// BatchSize is the most messages copied from a queue between two
	// saves of its offset, default DefaultReplicateBatch (at most 1024).
	BatchSize int `yaml:"batch_size"`
	// From is where a queue without a saved offset starts:
	// ReplicateFromBeginning (default) or ReplicateFromNow.
	From      string `yaml:"from"`
	AccessKey string `yaml:"access_key"`
	SecretKey string `yaml:"secret_key"`
	// TargetTopics: TargetTopicsSync (default) creates and updates each
	// target topic to match its source; TargetTopicsKeep only creates
	// missing ones (syncTarget).
	TargetTopics string `yaml:"target_topics"`
	// TopicPrefix names each target topic: TopicPrefix + the source
	// topic's name; empty is identity naming (the same name).
	TopicPrefix string `yaml:"topic_prefix"`
	// Tags is a tag expression ("TagA || TagB", or "*" for every
	// message): only messages with one of these tags are copied.
	Tags string `yaml:"tags"`
	// Properties: only messages whose user properties have all these
	// values are copied.
	Properties map[string]string `yaml:"properties"`
	// TargetCluster is the target cluster's name in the sluice_src_cluster
	// of copies made from it (the Cluster of a replicator copying the
	// other way): such a message is never copied back. Default: the
	// transport's cluster.
	TargetCluster string `yaml:"target_cluster"`
	// Groups are the consumer groups whose progress on the source is
	// checkpointed for the target (replgroups.go).
	Groups []string `yaml:"groups"`
	// OffsetSyncMessages and OffsetSyncInterval: a queue records an offset
	// sync at least every this many copies, and for the last copy of a
	// batch once this long has passed since its last sync (or when the
	// batch emptied the queue).
	OffsetSyncMessages int           `yaml:"offset_sync_messages"`
	OffsetSyncInterval time.Duration `yaml:"offset_sync_interval"`
	// CheckpointInterval: how often the groups' offsets are read and
	// checkpointed.
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// SyncGroupOffsets writes each checkpoint into the target's group
	// offsets (for groups with no consumer online there, never backwards).
	SyncGroupOffsets bool `yaml:"sync_group_offsets"`
	// HeartbeatTopic: a topic of the source that the replicator writes a
	// heartbeat to every HeartbeatInterval (default 1s), and copies like
	// the others (heartbeat.go); empty: no heartbeats.
	HeartbeatTopic    string        `yaml:"heartbeat_topic"`
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// Tasks splits the copy among this many tasks of a `sluice worker`
	// cluster (default 1), each copying the source queues that QueueTask
	// gives it, with a position of its own (split.go).
	Tasks int `yaml:"tasks"`
}

// credentials sign the requests to the source cluster.
func (c ReplicatorConfig) credentials() primitive.Credentials {
	return primitive.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}
}

// topicNameChars are the characters a RocketMQ topic name may hold.
var topicNameChars = regexp.MustCompile(`^[%|a-zA-Z0-9_-]*$`)

// replicaTags parses a tag expression: nil for "*" (every message), else
// the set of tags it names.
func replicaTags(expr string) (map[string]bool, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return nil, nil
	}
	tags := map[string]bool{}
	for _, t := range strings.Split(expr, "||") {
		t = strings.TrimSpace(t)
		if t == "" || t == "*" {
			return nil, fmt.Errorf("%w: tags %q: tags separated by ||, or * alone", ErrConfig, expr)
		}
		tags[t] = true
	}
	return tags, nil
}

// Validate checks c and fills its defaults, without contacting a server.
func (c *ReplicatorConfig) Validate() error {
	if len(c.NameServers) == 0 {
		return fmt.Errorf("%w: name_servers is required", ErrConfig)
	}
	if (len(c.Topics) == 0) == (c.TopicsRegex == "") {
		return fmt.Errorf("%w: set topics or topics_regex (one of them)", ErrConfig)
	}
	if c.TopicsRegex != "" {
		if _, err := topicsPattern(c.TopicsRegex); err != nil {
			return err
		}
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return fmt.Errorf("%w: access_key and secret_key go together", ErrConfig)
	}
	if c.BatchSize < 0 || c.BatchSize > 1024 {
		return fmt.Errorf("%w: batch_size %d: between 1 and 1024", ErrConfig, c.BatchSize)
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultReplicateBatch
	}
	switch c.From {
	case "":
		c.From = ReplicateFromBeginning
	case ReplicateFromBeginning, ReplicateFromNow:
	default:
		return fmt.Errorf("%w: from %q: %q or %q", ErrConfig, c.From, ReplicateFromBeginning, ReplicateFromNow)
	}
	if c.Cluster == "" {
		c.Cluster = "DefaultCluster"
	}
	switch c.TargetTopics {
	case "":
		c.TargetTopics = TargetTopicsSync
	case TargetTopicsSync, TargetTopicsKeep:
	default:
		return fmt.Errorf("%w: target_topics %q: %q or %q", ErrConfig, c.TargetTopics, TargetTopicsSync, TargetTopicsKeep)
	}
	if c.TopicsRefresh <= 0 {
		c.TopicsRefresh = DefaultTopicsRefresh
	}
	if !topicNameChars.MatchString(c.TopicPrefix) {
		return fmt.Errorf("%w: topic_prefix %q: a topic name holds only letters, digits, _, -, %% and |", ErrConfig, c.TopicPrefix)
	}
	if _, err := replicaTags(c.Tags); err != nil {
		return err
	}
	if c.OffsetSyncMessages < 0 || c.OffsetSyncInterval < 0 || c.CheckpointInterval < 0 || c.HeartbeatInterval < 0 {
		return fmt.Errorf("%w: offset_sync_messages, offset_sync_interval, checkpoint_interval and heartbeat_interval are positive", ErrConfig)
	}
	if !topicNameChars.MatchString(c.HeartbeatTopic) {
		return fmt.Errorf("%w: heartbeat_topic %q: a topic name holds only letters, digits, _, -, %% and |", ErrConfig, c.HeartbeatTopic)
	}
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, DefaultHeartbeatInterval)
	c.OffsetSyncMessages = cmp.Or(c.OffsetSyncMessages, DefaultOffsetSyncMessages)
	c.OffsetSyncInterval = cmp.Or(c.OffsetSyncInterval, DefaultOffsetSyncInterval)
	c.CheckpointInterval = cmp.Or(c.CheckpointInterval, DefaultCheckpointInterval)
	if c.Tasks < 0 || c.Tasks > MaxReplicatorTasks {
		return fmt.Errorf("%w: tasks %d: between 1 and %d", ErrConfig, c.Tasks, MaxReplicatorTasks)
	}
	c.Tasks = max(c.Tasks, 1)
	for _, g := range c.Groups {
		if g == "" || !topicNameChars.MatchString(g) {
			return fmt.Errorf("%w: groups: %q is not a group name", ErrConfig, g)
		}
	}
	return nil
}

// replicaPosition is the replicator's saved position: the next offset of
// each source queue ("topic/broker/queue"), its offset syncs, and the
// groups' checkpoints (group, then queue).
type replicaPosition struct {
	Version     int                                   `json:"rocketmq_replicator"`
	Next        map[string]int64                      `json:"next"`
	Syncs       map[string][]offsetSync               `json:"syncs,omitempty"`
	Checkpoints map[string]map[string]groupCheckpoint `json:"checkpoints,omitempty"`
	// Targets: the target queue of each source queue copied to the queue
	// of its own place (the queues whose offsets are synced).
	Targets map[string]targetQueue `json:"targets,omitempty"`
	// Tasks and Queues, of a replicator split into tasks (split.go): how
	// many, and the source queue count of each topic when this task first
	// mapped it.
	Tasks  int            `json:"tasks,omitempty"`
	Queues map[string]int `json:"queues,omitempty"`
}

// targetQueue is a queue of the target cluster.
type targetQueue struct {
	Topic  string `json:"topic"`
	Broker string `json:"broker"`
	Queue  int    `json:"queue"`
}

// replQueue is one source queue and where its messages go.
type replQueue struct {
	src      *tailQueue
	dst      string // the target topic
	key      string
	targets  []queue // the target topic's queues
	own      int     // the index in targets of the queue that alone receives its copies; -1: none (by key hash)
	addrs    map[string]string
	synced   time.Time // when its last offset sync was recorded
	lastSync int64     // the source offset of that sync; -1: none

	// For the metrics: the messages the last pull left in the queue, and
	// the time of the last sync (Unix ms) while copies after it are not
	// synced (0: none).
	lag, unsynced atomic.Int64
}

// mapped reports whether q goes to a target queue of its own, which
// alone receives its copies: only then are its offsets synced.
func (q *replQueue) mapped() bool { return q.own >= 0 }

// Replicator is the source of a replication pipeline (see above).
type Replicator struct {
	src   ReplicatorConfig
	dst   Config
	log   *slog.Logger
	group string
	adm   admin.Admin
	conns *connPool // the connections of the copy's pulls and sends
	store runtime.PositionStore
	name  string
	task  int // which of src.Tasks this is (split.go)

	posMu    sync.Mutex // pos, while queues are copied at once
	pos      replicaPosition
	saveMu   sync.Mutex    // one save at a time (save)
	changes  atomic.Uint64 // calls of save so far
	saved    uint64        // the calls of save that the last save covered (under saveMu)
	queues   []*replQueue
	topics   map[string]bool
	re       *regexp.Regexp
	tags     map[string]bool // nil: every tag
	listed   time.Time
	pointed  time.Time // the last checkpoint
	beats    *heartbeats
	idle     time.Duration
	sendWait time.Duration
	readFor  time.Duration // replicaRead; 0: one batch of each queue a Read

	// Progress: messages and body bytes copied since Open, and the born
	// and acknowledged times (Unix ms) of the newest copy.
	copied, bytes    atomic.Int64
	skipped          atomic.Int64 // read and not copied: filters, loop guard
	lastBorn, lastOK atomic.Int64
	sendErrors       atomic.Int64 // failed tries of sends to the target
	sends            atomic.Int64 // sends the target took
	lastBeat         atomic.Int64 // the born time of the newest own heartbeat copied
	lastPoint        atomic.Int64 // the time of the last checkpoint, Unix ms
}

var _ runtime.Source = (*Replicator)(nil)
var _ runtime.PositionKeeper = (*Replicator)(nil)
var _ runtime.ProgressReporter = (*Replicator)(nil)

// NewReplicator makes a replicator from src to the cluster of dst (the
// transport's config: name servers, cluster, credentials).
func NewReplicator(src ReplicatorConfig, dst Config, log *slog.Logger) (*Replicator, error) {
	if err := src.Validate(); err != nil {
		return nil, err
	}
	dst, err := dst.baseDefaults()
	if err != nil {
		return nil, err
	}
	if src.TargetCluster == "" {
		src.TargetCluster = dst.Cluster
	}
	if src.TargetCluster == src.Cluster {
		return nil, fmt.Errorf("%w: the source cluster and the target cluster are both named %q: set cluster (the source's name) or target_cluster apart, or a copy from the target could not be told from a message of the source", ErrConfig, src.Cluster)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Replicator{src: src, dst: dst, log: log, group: sanitizeName(dst.Pipeline + "-replicator"),
		topics: map[string]bool{}, idle: 200 * time.Millisecond, sendWait: time.Second, readFor: replicaRead}, nil
}

// KeepPositions is runtime.PositionKeeper: r saves its offsets in store.
func (r *Replicator) KeepPositions(store runtime.PositionStore, pipeline string) {
	r.store, r.name = store, pipeline
}

// Open reads the saved offsets and finds the topics to copy.
func (r *Replicator) Open(ctx context.Context, position []byte) error {
	r.pos = replicaPosition{Version: 1, Next: map[string]int64{}}
	if len(position) > 0 {
		if err := json.Unmarshal(position, &r.pos); err != nil || r.pos.Version != 1 {
			return schema.Fatal(fmt.Errorf("rocketmq replicator: the saved position %q is not one of the replicator's (a position of another source under this pipeline name?)", position))
		}
		if r.pos.Next == nil {
			r.pos.Next = map[string]int64{}
		}
	}
	if r.pos.Syncs == nil {
		r.pos.Syncs = map[string][]offsetSync{}
	}
	if r.pos.Targets == nil {
		r.pos.Targets = map[string]targetQueue{}
	}
	if err := r.checkTasks(); err != nil {
		return err
	}
	if r.src.TopicsRegex != "" {
		re, err := topicsPattern(r.src.TopicsRegex)
		if err != nil {
			return err
		}
		r.re = re
	}
	tags, err := replicaTags(r.src.Tags)
	if err != nil {
		return err
	}
	r.tags = tags
	setClientLogger(r.log)
	adm, err := newAdmin(r.dst)
	if err != nil {
		return err
	}
	r.adm = adm
	r.conns = newConnPool()
	if err := r.refresh(ctx); err != nil {
		_ = r.Close() // the pipeline closes only a source that opened
		return err
	}
	// The groups' settings and the heartbeats are one task's duty; every
	// task checkpoints its own queues.
	if len(r.src.Groups) > 0 && r.task == 0 {
		if err := r.copyGroups(ctx); err != nil {
			_ = r.Close()
			return err
		}
	}
	if r.src.HeartbeatTopic != "" && r.task == 0 {
		if r.beats, err = startHeartbeats(ctx, r.src, r.group, r.log); err != nil {
			_ = r.Close()
			return err
		}
	}
	return nil
}

// refresh adds the source topics not copied yet, and the queues that
// those copied have gained (addTopic).
func (r *Replicator) refresh(ctx context.Context) error {
	r.listed = time.Now()
	names := r.src.Topics
	if r.re != nil {
		all, err := fetchTopicList(ctx, r.src.NameServers)
		if err != nil {
			return err
		}
		names = matchingTopics(all, r.re, "")
	}
	if hb := r.src.HeartbeatTopic; hb != "" && !slices.Contains(names, hb) {
		if !r.topics[hb] {
			if err := createHeartbeatTopic(ctx, r.src); err != nil {
				return err
			}
		}
		names = append(slices.Clip(names), hb)
	}
	had, counted := len(r.queueList()), len(r.pos.Queues)
	var err error
	for _, t := range names {
		if err = r.addTopic(ctx, t); err != nil {
			break
		}
		r.topics[t] = true
	}
	if len(r.queueList()) > had || len(r.pos.Queues) > counted {
		// Where each new queue starts is saved before anything is copied:
		// with from: now, a restart must not start at a later "now".
		err = cmp.Or(err, r.save(ctx))
	}
	return err
}

// addTopic maps the queues of source topic that are not copied yet (all
// of them when the topic is new, those it gained since otherwise) to
// queues of its target topic, which it creates or updates first
// (syncTarget). A source queue keeps the target queue it was mapped to
// (saved in the position), so a source that gains queues moves none of
// the queues copied so far. A new queue takes the target queue of its own
// place (in broker, then queue order), or when another has it the first
// one that no source queue has. When there are too few (target_topics:
// keep), a new topic is copied by key hash, and a topic whose queues have
// target queues of their own already stops the replicator: hashing the
// new queues into those would mix two source queues in one target queue.
func (r *Replicator) addTopic(ctx context.Context, topic string) error {
	srcQs, err := tailQueues(ctx, r.src.NameServers, topic)
	if err != nil {
		return err
	}
	if err := r.countQueues(topic, len(srcQs)); err != nil {
		return err
	}
	dstTopic := r.src.TopicPrefix + topic
	r.posMu.Lock()
	var known []*replQueue // the topic's queues copied already
	for _, q := range r.queues {
		if q.src.topic == topic {
			known = append(known, q)
		}
	}
	r.posMu.Unlock()
	fresh := slices.DeleteFunc(slices.Clone(srcQs), func(q *tailQueue) bool {
		return !r.owns(q) || slices.ContainsFunc(known, func(k *replQueue) bool { return k.src.broker == q.broker && k.src.id == q.id })
	})
	if len(fresh) == 0 {
		return nil
	}
	targets, addrs, err := r.syncTarget(ctx, topic, dstTopic, srcQs)
	if err != nil {
		return err
	}
	used := map[queue]bool{}
	hashed := false
	for _, k := range known {
		if k.mapped() {
			used[k.targets[k.own]] = true
		} else {
			hashed = true
		}
	}
	own := make([]int, len(fresh))
	keys := make([]string, len(fresh))
	for i, q := range fresh {
		keys[i] = topic + "/" + q.broker + "/" + strconv.Itoa(q.id)
		own[i] = -1
		if t, ok := r.pos.Targets[keys[i]]; ok && t.Topic == dstTopic {
			if j := slices.Index(targets, queue{Broker: t.Broker, ID: t.Queue}); j >= 0 && !used[targets[j]] {
				own[i] = j
				used[targets[j]] = true
			}
		}
	}
	if len(known) == 0 && len(used) == 0 && len(targets) < len(srcQs) {
		hashed = true // a new topic with fewer target queues: by key hash
		r.log.Warn("replicator: the target topic has fewer queues than the source (target_topics: keep): copies go by key hash, and no offset is synced",
			"topic", topic, "target_topic", dstTopic, "source_queues", len(srcQs), "target_queues", len(targets))
	}
	for i, q := range fresh {
		if own[i] >= 0 || hashed {
			continue
		}
		j := slices.Index(srcQs, q) // its own place
		if j >= len(targets) || used[targets[j]] {
			j = slices.IndexFunc(targets, func(t queue) bool { return !used[t] })
		}
		if j < 0 {
			return schema.Fatal(fmt.Errorf("%w: replicator: source topic %s has %d queues now and target topic %s %d: queue %s has no target queue of its own left, "+
				"and copying it by key hash would mix it into another source queue's target queue (its order and offset translation lost): "+
				"set target_topics: %s, or add queues to %s on the target cluster (mqadmin updateTopic -t %s -r N -w N), and restart",
				ErrConfig, topic, len(srcQs), dstTopic, len(targets), keys[i], TargetTopicsSync, dstTopic, dstTopic))
		}
		own[i] = j
		used[targets[j]] = true
	}
	if hashed {
		for i := range own {
			own[i] = -1
		}
	}
	for i, q := range fresh {
		q.cred = r.src.credentials()
		q.batch = r.src.BatchSize
		q.pool = r.conns
		key := keys[i]
		next, ok := r.pos.Next[key]
		if !ok {
			// A queue the topic gained while copied starts at its
			// beginning: its messages came after the replicator started.
			code := reqGetMinOffset
			if r.src.From == ReplicateFromNow && len(known) == 0 {
				code = reqGetMaxOffset
			}
			if next, err = queueOffset(ctx, q, code); err != nil {
				return sourceKeys(err)
			}
		}
		q.next = next
		rq := &replQueue{src: q, dst: dstTopic, key: key, targets: targets, own: own[i], addrs: addrs, lastSync: -1}
		r.posMu.Lock() // a switchover or the metrics may read them meanwhile
		r.queues = append(r.queues, rq)
		r.pos.Next[key] = next
		if s := r.pos.Syncs[key]; len(s) > 0 {
			rq.lastSync = s[len(s)-1].Src
		}
		if rq.mapped() {
			t := targets[rq.own]
			r.pos.Targets[key] = targetQueue{Topic: dstTopic, Broker: t.Broker, Queue: t.ID}
		} else {
			delete(r.pos.Targets, key)
		}
		r.posMu.Unlock()
	}
	if len(known) > 0 {
		r.log.Info("replicating more queues of a topic", "topic", topic, "target_topic", dstTopic, "source_queues", len(srcQs), "target_queues", len(targets))
	} else {
		r.log.Info("replicating topic", "topic", topic, "target_topic", dstTopic, "source_queues", len(srcQs), "target_queues", len(targets))
	}
	return nil
}

// target is the queue a message of q goes to: q's own target queue when
// it has one, else by the hash of its keys (of the source queue when it
// has none), so that one key's (one queue's) order is kept.
func (q *replQueue) target(m *primitive.MessageExt) queue {
	n := len(q.targets)
	if q.mapped() {
		return q.targets[q.own]
	}
	h := fnv.New32a()
	if k := m.GetKeys(); k != "" {
		h.Write([]byte(k))
	} else {
		h.Write([]byte(q.key))
	}
	return q.targets[int(h.Sum32()%uint32(n))]
}

// replicaWorkers bounds the queues copied at once.
const replicaWorkers = 8

// replicaRead is how long a Read goes on copying while queues have
// messages: a queue whose batch is done goes to the back of the line at
// once, without waiting for the batches of the other queues (a slow one
// holds up only itself), and the checkpoints and topic refreshes, done
// between Reads, wait at most this long.
const replicaRead = 500 * time.Millisecond

// Read copies batches from the source queues that have messages, up to
// replicaWorkers queues at once, saving each queue's offset once its batch
// is on the target and before its next pull: each queue has at most one
// batch unsaved. Every queue that has messages gets a batch; then a queue
// whose batch is done is copied again until replicaRead has passed. It
// returns no records: the replicator sends and saves by itself.
func (r *Replicator) Read(ctx context.Context) ([]schema.Record, error) {
	if time.Since(r.listed) >= r.src.TopicsRefresh {
		// The copy goes on while a name server does not answer: only a
		// fatal error (refused credentials, a queue with no target queue)
		// stops it.
		if err := r.refresh(ctx); err != nil && (runtime.IsFatal(err) || ctx.Err() != nil) {
			return nil, err
		} else if err != nil {
			r.log.Warn("replicator: cannot look for new topics or queues; the copy goes on, and it looks again every topics_refresh", "err", err)
		}
	}
	if len(r.src.Groups) > 0 && time.Since(r.pointed) >= r.src.CheckpointInterval {
		if err := r.Checkpoint(ctx); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		moved atomic.Bool
		wg    sync.WaitGroup
	)
	// The line of queues to copy: each queue is in it at most once.
	line := make(chan *replQueue, len(r.queues))
	for _, q := range r.queues {
		line <- q
	}
	until := time.Now().Add(r.readFor)
	for range min(replicaWorkers, len(r.queues)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				var q *replQueue
				select {
				case q = <-line:
				default:
					return
				}
				copied, err := r.copyBatch(ctx, q)
				if err != nil {
					cancel(err)
					return
				}
				if copied {
					moved.Store(true)
					if time.Now().Before(until) {
						line <- q
					}
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if !moved.Load() {
		select {
		case <-ctx.Done():
		case <-time.After(r.idle):
		}
	}
	return nil, nil
}

// copyBatch copies the next batch of q, if any, and saves q's offset.
func (r *Replicator) copyBatch(ctx context.Context, q *replQueue) (bool, error) {
	from := q.src.next
	msgs, err := pullQueue(ctx, r.group, q.src)
	err = sourceKeys(err)
	if err == nil {
		q.lag.Store(max(q.src.max-q.src.next, 0))
	}
	if err != nil || len(msgs) == 0 {
		return false, err
	}
	if first := msgs[0].QueueOffset; first > from {
		// The source no longer holds them (past its retention).
		r.log.Warn("replicator: messages gone from the source before they were copied", "topic", q.src.topic,
			"broker", q.src.broker, "queue", q.src.id, "from_offset", from, "to_offset", first-1)
	}
	sent := 0
	var (
		syncs []offsetSync
		last  *offsetSync // the batch's last copy, when not synced
	)
	want := make([]*primitive.MessageExt, 0, len(msgs))
	for _, m := range msgs {
		if r.wanted(m) {
			want = append(want, m)
		}
	}
	for len(want) > 0 {
		run := want[:sendRun(q, want)]
		want = want[len(run):]
		first, err := r.send(ctx, q, run)
		if err != nil {
			return false, err
		}
		for i, m := range run {
			if q.mapped() {
				last = &offsetSync{Src: m.QueueOffset, Dst: first + int64(i)}
				if q.lastSync < 0 || m.QueueOffset-q.lastSync >= int64(r.src.OffsetSyncMessages) {
					syncs = append(syncs, *last)
					q.lastSync, q.synced, last = m.QueueOffset, time.Now(), nil
				}
			}
			sent++
			if m.GetProperty(HeartbeatProperty) == r.src.Cluster {
				r.lastBeat.Store(max(r.lastBeat.Load(), m.BornTimestamp))
			}
			r.bytes.Add(int64(len(m.Body)))
			r.lastBorn.Store(m.BornTimestamp)
		}
		r.lastOK.Store(time.Now().UnixMilli())
	}
	// The batch's last copy is synced too once offset_sync_interval has
	// passed, or when the batch emptied the queue (a full batch may end
	// it too: the pull answers the queue's end): a group that read all of
	// it then translates exactly, and a switchover reads nothing again.
	if last != nil && (time.Since(q.synced) >= r.src.OffsetSyncInterval || len(msgs) < q.src.batch || q.src.next >= q.src.max) {
		syncs = append(syncs, *last)
		q.lastSync, q.synced = last.Src, time.Now()
	}
	if last != nil && last.Src > q.lastSync {
		q.unsynced.Store(q.synced.UnixMilli())
	} else if q.lastSync >= 0 {
		q.unsynced.Store(0)
	}
	r.posMu.Lock()
	r.pos.Next[q.key] = q.src.next
	for _, s := range syncs {
		r.pos.Syncs[q.key] = addSync(r.pos.Syncs[q.key], s, int64(r.src.OffsetSyncMessages))
	}
	r.posMu.Unlock()
	if err := r.save(ctx); err != nil {
		return false, err
	}
	r.copied.Add(int64(sent))
	r.skipped.Add(int64(len(msgs) - sent))
	return true, nil
}

// wanted reports whether m is copied: it passes the tag and property
// filters, and it is not a copy from the target cluster (loop
// prevention: with A→B and B→A, a message A copied to B is never copied
// back to A, whatever the topic names).
func (r *Replicator) wanted(m *primitive.MessageExt) bool {
	if m.GetProperty(SrcClusterProperty) == r.src.TargetCluster {
		return false
	}
	if r.tags != nil && !r.tags[m.GetTags()] {
		return false
	}
	for k, v := range r.src.Properties {
		if p, ok := m.GetProperties()[k]; !ok || p != v {
			return false
		}
	}
	return true
}

// save saves r.pos with every change made to it before the call (call it
// after changing r.pos, without posMu). Saves run one at a time, each of
// the latest r.pos: a call that waited for another's save is done when
// that save covered its change, so the queues copied at once share their
// saves (a group commit) and the store sees positions in order.
func (r *Replicator) save(ctx context.Context) error {
	if r.store == nil {
		return nil
	}
	mine := r.changes.Add(1)
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	if r.saved >= mine {
		return nil
	}
	r.posMu.Lock()
	upTo := r.changes.Load()
	b, err := json.Marshal(r.pos)
	r.posMu.Unlock()
	if err != nil {
		return err
	}
	if err := r.store.Save(ctx, r.name, b); err != nil {
		return fmt.Errorf("rocketmq replicator: save offsets: %w", err)
	}
	r.saved = upTo
	return nil
}

// replicaSendAttempts bounds the tries of one message, a second apart (a
// busy broker refuses for a moment); then Read fails with a retriable
// error, and the pipeline restarts from the saved offsets.
const replicaSendAttempts = 10

// resMessageIllegal is MESSAGE_ILLEGAL: the broker refuses the message
// itself (its size, its properties).
const resMessageIllegal = 13

// reqSendBatchMessage is SEND_BATCH_MESSAGE: several messages to one
// queue, stored one after another.
const reqSendBatchMessage = 320

// sendRun is how many of msgs, from the first, go to the target in one
// send: those with the first's born timestamp and target queue, within
// maxBatchMsgs and maxBatchBytes. A batch has one born timestamp, which
// the target gives each of its messages, so only messages born in the
// same millisecond (say, sent by their producer as one batch) go
// together, and each copy keeps its own.
func sendRun(q *replQueue, msgs []*primitive.MessageExt) int {
	t := q.target(msgs[0])
	size := 0
	for n, m := range msgs {
		size += len(m.Body) + 256 // and the copy's properties (and coordinates): a message's header
		for k, v := range m.GetProperties() {
			size += len(k) + len(v) + 2
		}
		if n > 0 && (n >= maxBatchMsgs || size > maxBatchBytes || m.BornTimestamp != msgs[0].BornTimestamp || q.target(m) != t) {
			return n
		}
	}
	return len(msgs)
}

// replicaSkipped is replicaDropped as a set, with CLUSTER: the target
// sets its own (a batch's is appended to each message's properties).
var replicaSkipped = func() map[string]bool {
	set := map[string]bool{primitive.PropertyCluster: true}
	for _, k := range replicaDropped {
		set[k] = true
	}
	return set
}()

// appendProps appends the properties the target stores for m, in the
// client's encoding (name 1 value 2 ...): m's own but those the target
// would act on again (replicaSkipped), and the source coordinates.
func (r *Replicator) appendProps(b []byte, q *replQueue, m *primitive.MessageExt) []byte {
	for k, v := range m.GetProperties() {
		if !replicaSkipped[k] && !isSrcProperty(k) {
			b = appendProp(b, k, v)
		}
	}
	b = appendProp(b, SrcClusterProperty, r.src.Cluster)
	b = appendProp(b, SrcBrokerProperty, q.src.broker)
	b = appendProp(b, SrcQueueProperty, strconv.Itoa(q.src.id))
	b = appendProp(b, SrcOffsetProperty, strconv.FormatInt(m.QueueOffset, 10))
	return appendProp(b, SrcMsgIDProperty, m.MsgId)
}

// isSrcProperty reports whether k is one of the coordinates the copy gets
// (a message copied before has them: the copy's replace them).
func isSrcProperty(k string) bool {
	switch k {
	case SrcClusterProperty, SrcBrokerProperty, SrcQueueProperty, SrcOffsetProperty, SrcMsgIDProperty:
		return true
	}
	return false
}

func appendProp(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, 1)
	b = append(b, v...)
	return append(b, 2)
}

// appendCopy appends m's copy as one message of a batch send's body, as
// primitive.Message.Marshal encodes it (size, magic code 0, body CRC 0,
// flag, body, properties).
func (r *Replicator) appendCopy(b []byte, q *replQueue, m *primitive.MessageExt) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, 0) // its size, below
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(m.Flag))
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Body)))
	b = append(b, m.Body...)
	at := len(b)
	b = append(b, 0, 0) // the properties' length, below
	b = r.appendProps(b, q, m)
	binary.BigEndian.PutUint16(b[at:], uint16(len(b)-at-2))
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start))
	return b
}

// send copies msgs (a sendRun) to their target queue, one SEND_MESSAGE,
// or one SEND_BATCH_MESSAGE for several, trying again while the target
// broker does not take them (up to replicaSendAttempts, until ctx is done
// or a fatal error). It returns the target offset of the first; the
// others follow it.
func (r *Replicator) send(ctx context.Context, q *replQueue, msgs []*primitive.MessageExt) (int64, error) {
	m := msgs[0]
	t := q.target(m)
	code, body := reqSendMessage, m.Body
	var ext map[string]string
	if len(msgs) == 1 {
		ext = sendHeader(r.group, q.dst, t, m.BornTimestamp, m.Flag, string(r.appendProps(nil, q, m)))
	} else {
		size := 0
		for _, m := range msgs {
			size += len(m.Body) + 512
		}
		code, body = reqSendBatchMessage, make([]byte, 0, size)
		for _, m := range msgs {
			body = r.appendCopy(body, q, m)
		}
		ext = sendHeader(r.group, q.dst, t, m.BornTimestamp, 0, "")
		ext["batch"] = "true"
		ext = headerV2(ext)
	}
	what := fmt.Sprintf("%s queue %d offset %d", q.src.topic, q.src.id, m.QueueOffset)
	if len(msgs) > 1 {
		what += fmt.Sprintf(" to %d", msgs[len(msgs)-1].QueueOffset)
	}
	addr := q.addrs[t.Broker]
	cred := r.dst.credentials()
	for attempt := 1; ; attempt++ {
		h, _, err := r.conns.invoke(ctx, cred, addr, code, ext, body)
		if err == nil {
			if err = authError(cred.AccessKey, addr, h); err != nil {
				return 0, err
			}
			if h.Code == resSuccess {
				off, err := strconv.ParseInt(h.ExtFields["queueOffset"], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("rocketmq replicator: %s: the target broker %s answered SEND_OK without a queue offset (%q)",
						what, addr, h.ExtFields["queueOffset"])
				}
				r.sends.Add(1)
				return off, nil
			}
			err = fmt.Errorf("code %d: %s", h.Code, h.Remark)
			if h.Code == resMessageIllegal {
				// Refused for good (larger than the target's maxMessageSize,
				// say): no retry or restart helps.
				return 0, schema.Fatal(fmt.Errorf("rocketmq replicator: %s: the target broker %s refuses the message: %w", what, addr, err))
			}
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		r.sendErrors.Add(1)
		if attempt >= replicaSendAttempts {
			return 0, fmt.Errorf("rocketmq replicator: send %s to %s queue %d on %s: %w", what, t.Broker, t.ID, addr, err)
		}
		r.log.Warn("replicator: send failed; trying again", "topic", q.src.topic, "queue", q.src.id, "offset", m.QueueOffset, "messages", len(msgs), "err", err)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(r.sendWait):
		}
	}
}

// sendHeader is the header of a SEND_MESSAGE of pm to queue t of topic.
// The replicator sends with it, not with the client's producer: the header
// carries the born timestamp, which the client sets to now.
func sendHeader(group, topic string, t queue, born int64, flag int32, props string) map[string]string {
	return map[string]string{
		"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(t.ID), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(born, 10),
		"flag": strconv.Itoa(int(flag)), "properties": props, "reconsumeTimes": "0",
		"unitMode": "false", "batch": "false", "bname": t.Broker,
	}
}

// headerV2 is a send header in the short field names that brokers read
// the header of a SEND_BATCH_MESSAGE in (SendMessageRequestHeaderV2).
func headerV2(ext map[string]string) map[string]string {
	v2 := make(map[string]string, len(ext))
	for k, v := range ext {
		if short, ok := sendHeaderV2[k]; ok {
			k = short
		}
		v2[k] = v
	}
	return v2
}

var sendHeaderV2 = map[string]string{
	"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
	"sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j",
	"unitMode": "k", "maxReconsumeTimes": "l", "batch": "m", "bname": "n",
}

// Copied is the number of messages copied since Open.
func (r *Replicator) Copied() int64 { return r.copied.Load() }

// Progress is runtime.ProgressReporter: replicator_messages and
// replicator_bytes copied since the start, replicator_skipped (read and
// not copied: filters, loop guard), and replicator_latency_seconds,
// from the newest copy's born time on the source to the target's SEND_OK.
func (r *Replicator) Progress() map[string]float64 {
	p := map[string]float64{"replicator_messages": float64(r.copied.Load()), "replicator_bytes": float64(r.bytes.Load()),
		"replicator_skipped": float64(r.skipped.Load())}
	if ok := r.lastOK.Load(); ok > 0 {
		p["replicator_latency_seconds"] = float64(ok-r.lastBorn.Load()) / 1000
	}
	now := time.Now().UnixMilli()
	if b := r.lastBeat.Load(); b > 0 {
		p["replicator_heartbeat_age_seconds"] = float64(max(now-b, 0)) / 1000
	}
	if c := r.lastPoint.Load(); c > 0 {
		p["replicator_checkpoint_age_seconds"] = float64(max(now-c, 0)) / 1000
	}
	oldest := now
	for _, q := range r.queueList() {
		if u := q.unsynced.Load(); u > 0 {
			oldest = min(oldest, u)
		}
	}
	p["replicator_offset_sync_age_seconds"] = float64(now-oldest) / 1000
	p["replicator_send_errors"] = float64(r.sendErrors.Load())
	return p
}

var _ runtime.QueueProgressReporter = (*Replicator)(nil)

// QueueProgress is runtime.QueueProgressReporter: replicator_lag_messages
// of each source queue ("topic/broker/queue"), as of its last pull.
func (r *Replicator) QueueProgress() map[string]map[string]float64 {
	lag := map[string]float64{}
	for _, q := range r.queueList() {
		lag[q.key] = float64(q.lag.Load())
	}
	return map[string]map[string]float64{"replicator_lag_messages": lag}
}

// queueList is r.queues, for a reader beside the copy.
func (r *Replicator) queueList() []*replQueue {
	r.posMu.Lock()
	defer r.posMu.Unlock()
	return slices.Clone(r.queues)
}

// Close stops the heartbeats and releases the admin client and the
// connections.
func (r *Replicator) Close() error {
	r.conns.close()
	if r.beats != nil {
		r.beats.stop()
		r.beats = nil
	}
	if r.adm != nil {
		err := r.adm.Close()
		r.adm = nil
		return err
	}
	return nil
}
