package rocketmq

import (
	"encoding/json"
	"testing"
)

// TestQueueTask: every queue goes to one task in range; the queues of a
// topic's broker go round the tasks, so each task gets its share; a
// queue's task does not change when its broker gains queues.
func TestQueueTask(t *testing.T) {
	for tasks := 1; tasks <= 5; tasks++ {
		for _, topic := range []string{"orders", "payments", "t"} {
			count := make([]int, tasks)
			for _, broker := range []string{"broker-a", "broker-b"} {
				for id := range 8 {
					i := QueueTask(topic, broker, id, tasks)
					if i < 0 || i >= tasks || i != QueueTask(topic, broker, id, tasks) {
						t.Fatalf("%s %s %d of %d tasks: %d", topic, broker, id, tasks, i)
					}
					count[i]++
					if id > 0 && tasks > 1 && i != (QueueTask(topic, broker, id-1, tasks)+1)%tasks {
						t.Errorf("%s %s: queue %d task %d after queue %d's %d: not round the tasks", topic, broker, id, i, id-1, QueueTask(topic, broker, id-1, tasks))
					}
				}
			}
			for i, n := range count {
				if lo := 16 / tasks; n < lo-2 || n > lo+2 {
					t.Errorf("%s, %d tasks: task %d copies %d of 16 queues", topic, tasks, i, n)
				}
			}
		}
	}
}

// TestMergePositions: the tasks' positions merge into one naming every
// queue, its syncs, targets and the groups' checkpoints; a task without a
// position makes none.
func TestMergePositions(t *testing.T) {
	pos := func(q string, next int64) []byte {
		b, _ := json.Marshal(replicaPosition{Version: 1, Tasks: 2, Next: map[string]int64{q: next},
			Syncs:       map[string][]offsetSync{q: {{Src: next - 1, Dst: next + 9}}},
			Targets:     map[string]targetQueue{q: {Topic: "t", Broker: "b1", Queue: int(next)}},
			Checkpoints: map[string]map[string]groupCheckpoint{"g": {q: {}}}})
		return b
	}
	b, err := MergePositions([][]byte{pos("t/a/0", 1), pos("t/a/1", 2)})
	if err != nil {
		t.Fatal(err)
	}
	all, err := decodeReplicaPosition(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{"t/a/0", "t/a/1"} {
		n := int64(i + 1)
		if all.Next[q] != n || len(all.Syncs[q]) != 1 || all.Syncs[q][0].Dst != n+9 || all.Targets[q].Queue != int(n) {
			t.Errorf("%s: merged %+v", q, all)
		}
		if _, ok := all.Checkpoints["g"][q]; !ok {
			t.Errorf("%s: no checkpoint of g in %v", q, all.Checkpoints)
		}
	}
	if b, err := MergePositions([][]byte{pos("t/a/0", 1), nil}); b != nil || err != nil {
		t.Errorf("a task without a position: %s %v, want nil", b, err)
	}
	if _, err := MergePositions([][]byte{[]byte(`{"x":1}`)}); err == nil {
		t.Error("a position not a replicator's merged")
	}
}

// TestReplicatorTasksChecks: tasks cannot change once offsets are saved,
// and a split task refuses a topic whose queue count changed.
func TestReplicatorTasksChecks(t *testing.T) {
	for _, c := range []struct{ saved, now int }{{0, 2}, {2, 1}, {2, 3}} {
		r := &Replicator{src: ReplicatorConfig{Tasks: c.now}, pos: replicaPosition{Tasks: c.saved, Next: map[string]int64{"t/a/0": 1}}}
		if err := r.checkTasks(); err == nil {
			t.Errorf("saved by %d tasks, %d now: accepted", c.saved, c.now)
		}
	}
	r := &Replicator{src: ReplicatorConfig{Tasks: 2}, pos: replicaPosition{Next: map[string]int64{}}}
	if err := r.checkTasks(); err != nil || r.pos.Tasks != 2 {
		t.Fatalf("a new position: %v, tasks %d", err, r.pos.Tasks)
	}
	if err := r.countQueues("t", 8); err != nil || r.countQueues("t", 8) != nil {
		t.Fatal(err)
	}
	if err := r.countQueues("t", 10); err == nil {
		t.Error("a topic that gained queues: accepted")
	} else {
		t.Log(err)
	}
	if err := r.SplitTask(2); err == nil {
		t.Error("task 2 of 2 accepted")
	}
}
