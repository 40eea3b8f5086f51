package rocketmq

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// A topic's queue set is what the publisher hashes keys over: every write
// queue of the topic on every broker it was created on, whether or not the
// broker is up. The name servers forget a broker that has no live master,
// and its queues with it (RocketMQ 5.3: its route then lists the other
// brokers only), so the set cannot be read from a route: the first route
// seen (right after creating the topic, or when a pipeline first meets an
// existing one, once its route shows every master: wholeRoute) is
// recorded on the name servers, in RocketMQ's own
// ORDER_TOPIC_CONFIG (see fetchOrderConf), and every later publisher uses
// the recorded set. A route that lacks a broker of the set means that
// broker is down: the records of its queues wait for it. A route with
// queues the set lacks, or another count of a broker's queues, means the
// set changed: ErrQueueSetChanged.

// brokerQueues is one broker's part of a queue set: its write queues 0..N-1.
type brokerQueues struct {
	Broker string
	N      int
}

// queueSet is a topic's queues per broker, brokers sorted by name.
type queueSet []brokerQueues

// maxBrokerQueues bounds a broker's queue count in a set (as writeQueues).
const maxBrokerQueues = 1 << 16

// parseQueueSet reads ORDER_TOPIC_CONFIG's form, "broker-a:4;broker-b:4".
func parseQueueSet(s string) (queueSet, error) {
	var set queueSet
	for part := range strings.SplitSeq(s, ";") {
		if part == "" {
			continue
		}
		name, num, ok := strings.Cut(part, ":")
		n, err := strconv.Atoi(num)
		if !ok || name == "" || err != nil || n < 1 || n > maxBrokerQueues {
			return nil, fmt.Errorf("%q: want broker:queues;broker:queues…", s)
		}
		set = append(set, brokerQueues{name, n})
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("%q: no queue", s)
	}
	slices.SortFunc(set, func(a, b brokerQueues) int { return strings.Compare(a.Broker, b.Broker) })
	for i := 1; i < len(set); i++ {
		if set[i].Broker == set[i-1].Broker {
			return nil, fmt.Errorf("%q: broker %s twice", s, set[i].Broker)
		}
	}
	return set, nil
}

// String is ORDER_TOPIC_CONFIG's form of s.
func (s queueSet) String() string {
	parts := make([]string, len(s))
	for i, b := range s {
		parts[i] = b.Broker + ":" + strconv.Itoa(b.N)
	}
	return strings.Join(parts, ";")
}

// queues lists s's queues in the order keys are hashed over: brokers by
// name, each with queue ids 0..N-1 (the order writeQueues lists a route's
// queues in, so that a topic keeps the mapping it had before sets were
// recorded).
func (s queueSet) queues() []queue {
	var out []queue
	for _, b := range s {
		for i := range b.N {
			out = append(out, queue{b.Broker, i})
		}
	}
	return out
}

// routeQueueSet is the queue set a route shows: the write queues of each
// broker whose queues are writable, with a live master or not.
func routeQueueSet(r topicRoute) queueSet {
	var set queueSet
	for _, qd := range r.QueueDatas {
		if qd.Perm&permWrite == 0 || qd.WriteQueueNums < 1 {
			continue
		}
		set = append(set, brokerQueues{qd.BrokerName, min(qd.WriteQueueNums, maxBrokerQueues)})
	}
	slices.SortStableFunc(set, func(a, b brokerQueues) int { return strings.Compare(a.Broker, b.Broker) })
	return slices.CompactFunc(set, func(a, b brokerQueues) bool { return a.Broker == b.Broker })
}

// changedFrom returns an error (ErrQueueSetChanged, fatal) naming how
// route, the queue set a topic's route shows now, differs from recorded:
// a broker recorded has another count of queues, or a broker not recorded
// has queues. A recorded broker missing from route is no change: it is
// down (or lost the write permission), and its queues wait for it.
func (recorded queueSet) changedFrom(topic string, route queueSet) error {
	var diffs []string
	for _, b := range route {
		i := slices.IndexFunc(recorded, func(r brokerQueues) bool { return r.Broker == b.Broker })
		switch {
		case i < 0:
			diffs = append(diffs, fmt.Sprintf("broker %s has %d queues of it, none recorded", b.Broker, b.N))
		case recorded[i].N != b.N:
			diffs = append(diffs, fmt.Sprintf("broker %s has %d queues of it, %d recorded", b.Broker, b.N, recorded[i].N))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	merged := slices.Clone(route)
	for _, r := range recorded {
		if !slices.ContainsFunc(route, func(b brokerQueues) bool { return b.Broker == r.Broker }) {
			merged = append(merged, r)
		}
	}
	slices.SortFunc(merged, func(a, b brokerQueues) int { return strings.Compare(a.Broker, b.Broker) })
	return schema.Fatal(fmt.Errorf("%w: topic %q: %s; the queue set recorded on the name servers is %s: "+
		"sluice does not hash keys over another set, which would apply a key's older changes after its newer ones. "+
		"Undo the change, or drain and record the new set: stop the source, wait until the sinks have applied everything, "+
		"run `"+orderConfAdminUsage+" -v '%s'` against every name server, and start again",
		ErrQueueSetChanged, topic, strings.Join(diffs, "; "), recorded, topic, "put", merged))
}

// errBrokerDown explains a failed send to queue q of topic when the
// name servers route no live master for q's broker.
func errBrokerDown(topic string, q queue) error {
	return fmt.Errorf("broker %s has no live master on the name servers (down?): the records of its queues of topic %q wait for it, "+
		"since sluice sends a key's records to no other queue; if the broker was removed for good, drain the other queues and record the topic's new queue set (`"+
		orderConfAdminUsage+"`)", q.Broker, topic, topic, "put -v '<broker>:<queues>;…'")
}
