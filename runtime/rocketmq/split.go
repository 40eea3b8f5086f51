package rocketmq

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"

	"github.com/sluicecdc/sluice/schema"
)

// A replicator split into tasks (`tasks: N` in a `sluice worker` cluster)
// runs N Replicators, one per task, each with its own lease and saved
// position. Task i copies the source queues that QueueTask gives it and
// checkpoints the groups on them; task 0 alone copies the groups'
// settings and writes the heartbeats. Every task sees the whole route of
// each topic, so a queue's target queue (the queue of its own place) is
// the same whichever task copies it. A queue never moves to another task
// while tasks stays the same, and the saved positions record tasks: a
// change is refused (the offsets of the moved queues are in another
// task's position). A topic that gains queues is refused too: the queue
// of its own place may be the target queue of another task's queue (one
// task alone knows which target queues its own queues took).

// MaxReplicatorTasks bounds tasks.
const MaxReplicatorTasks = 64

// QueueTask is the task, of tasks, that copies queue id of topic on
// broker: the queues of one topic on one broker go round the tasks from a
// place that the hash of topic and broker picks, so every task gets its
// share of each topic's queues (8 queues on 2 brokers: 4 each with 2
// tasks), and a queue's task depends on nothing but these four values.
func QueueTask(topic, broker string, id, tasks int) int {
	if tasks <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(topic + "/" + broker))
	return int((h.Sum32()%uint32(tasks) + uint32(id)%uint32(tasks)) % uint32(tasks))
}

// SplitTask makes r task i of its source's tasks (0, the default, first).
func (r *Replicator) SplitTask(i int) error {
	if i < 0 || i >= r.src.Tasks {
		return fmt.Errorf("%w: replicator task %d of %d", ErrConfig, i, r.src.Tasks)
	}
	r.task = i
	return nil
}

// split reports whether r is one of several tasks.
func (r *Replicator) split() bool { return r.src.Tasks > 1 }

// owns reports whether q is r's to copy.
func (r *Replicator) owns(q *tailQueue) bool {
	return QueueTask(q.topic, q.broker, q.id, r.src.Tasks) == r.task
}

// checkTasks refuses a saved position of another number of tasks, and
// records r's in a new one.
func (r *Replicator) checkTasks() error {
	saved := max(r.pos.Tasks, 1)
	if len(r.pos.Next) > 0 && saved != r.src.Tasks {
		return schema.Fatal(fmt.Errorf("%w: replicator: the saved offsets were copied by %d tasks and tasks is %d now: a queue's offset is in the position of the task that copied it, so tasks cannot change once offsets are saved; set tasks: %d again",
			ErrConfig, saved, r.src.Tasks, saved))
	}
	r.pos.Tasks = 0
	if r.split() {
		r.pos.Tasks = r.src.Tasks
	}
	return nil
}

// countQueues records, for a replicator split into tasks, the queue count
// of topic when first mapped, and refuses a later other count (see
// above).
func (r *Replicator) countQueues(topic string, n int) error {
	if !r.split() {
		return nil
	}
	r.posMu.Lock()
	defer r.posMu.Unlock()
	if r.pos.Queues == nil {
		r.pos.Queues = map[string]int{}
	}
	had, ok := r.pos.Queues[topic]
	switch {
	case !ok:
		r.pos.Queues[topic] = n
	case had != n:
		return schema.Fatal(fmt.Errorf("%w: replicator: source topic %s has %d queues now and had %d: a replicator split into tasks (tasks: %d) does not follow a topic that gains queues "+
			"(a new queue's target queue may be another task's); copy the topic with a replicator of tasks: 1", ErrConfig, topic, n, had, r.src.Tasks))
	}
	return nil
}

// MergePositions merges the saved positions of the tasks of a replicator
// split into tasks (each naming only its own queues) into one, as the
// switchover, status and failover read it. A task that has saved nothing
// yet makes it nil: its queues would be missing, and a switchover would
// find the copy drained too early.
func MergePositions(ps [][]byte) ([]byte, error) {
	all := replicaPosition{Version: 1, Next: map[string]int64{}, Syncs: map[string][]offsetSync{},
		Checkpoints: map[string]map[string]groupCheckpoint{}, Targets: map[string]targetQueue{}}
	for _, b := range ps {
		if len(b) == 0 {
			return nil, nil
		}
		p, err := decodeReplicaPosition(b)
		if err != nil {
			return nil, err
		}
		maps.Copy(all.Next, p.Next)
		maps.Copy(all.Syncs, p.Syncs)
		maps.Copy(all.Targets, p.Targets)
		for g, cps := range p.Checkpoints {
			if all.Checkpoints[g] == nil {
				all.Checkpoints[g] = map[string]groupCheckpoint{}
			}
			maps.Copy(all.Checkpoints[g], cps)
		}
		all.Tasks = p.Tasks
	}
	return json.Marshal(all)
}
