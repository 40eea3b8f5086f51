package rocketmq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

// Tail reads a pipeline's topics without a consumer: it pulls each queue
// directly from its broker at offsets it keeps in memory, never commits them
// and never joins a consumer group, so the sink's group offsets stay where
// they are. It is for audit and debugging ("sluice tail").

// Where Tail starts reading.
const (
	TailFromBeginning = "beginning"
	TailFromNow       = "now"
)

const (
	reqPullMessage    = 11
	reqGetMaxOffset   = 30
	reqGetMinOffset   = 31
	resPullNotFound   = 19
	resPullRetryNow   = 20
	resPullOffsetMove = 21
	flagSubscription  = 0x4 // the request carries its subscription
	tailPullBatch     = 64
	tailIdlePoll      = 500 * time.Millisecond
)

// TailOptions selects what Tail reads.
type TailOptions struct {
	// Topics to read; default the config's (Topics, or those of Tables).
	Topics []string
	// From is TailFromBeginning (default: the oldest stored message) or
	// TailFromNow (only messages stored after Tail starts).
	From string
	// Follow keeps reading new messages until ctx is done or Limit is
	// reached. Without it Tail stops at the end offsets it saw at start.
	Follow bool
	// Table keeps only messages of this table (the message tag); empty: all.
	Table string
	// Key keeps only messages whose key (Record.KeyString, the message's
	// KEYS) equals it; empty: all.
	Key string
	// Limit stops after this many messages were emitted; 0: no limit.
	Limit int
	// Group names the reads on the broker (it never stores an offset for
	// it); default "<pipeline>-tail".
	Group string
}

// TailMessage is one message read by Tail.
type TailMessage struct {
	Topic      string
	Broker     string
	Queue      int
	Offset     int64
	Index      int    // the record's place in a packed message (FormatPacked); 0 otherwise
	Key        []byte // the converter's key (property sluice_key); nil if none
	Value      []byte // the message body: the converter's value
	Properties map[string]string
	StoredAt   time.Time
}

// ErrTailDone may be returned by the emit function to stop Tail early
// without an error.
var ErrTailDone = errors.New("rocketmq: tail done")

// tailQueue is one queue being read.
type tailQueue struct {
	topic, broker, addr string
	id                  int
	next, end           int64                 // end: stop offset without Follow
	max                 int64                 // the queue's end in the last pull's answer
	cred                primitive.Credentials // signs the requests (brokers with authentication)
	batch               int                   // most messages a pull asks for; 0: tailPullBatch
	pool                *connPool             // the connections of its requests; nil: one each
}

// Tail calls emit for each selected message of the topics, in offset order
// per queue; queues are visited in topic, broker, queue order. It returns
// nil when every queue reached its end (without Follow), Limit is reached,
// emit returns ErrTailDone, or ctx is done while following.
func Tail(ctx context.Context, cfg Config, opts TailOptions, emit func(TailMessage) error) error {
	cfg, err := cfg.baseDefaults()
	if err != nil {
		return err
	}
	topics := opts.Topics
	if len(topics) == 0 {
		if topics, err = cfg.topics(); err != nil {
			return err
		}
	}
	switch opts.From {
	case "":
		opts.From = TailFromBeginning
	case TailFromBeginning, TailFromNow:
	default:
		return fmt.Errorf("%w: tail from %q: use %q or %q", ErrConfig, opts.From, TailFromBeginning, TailFromNow)
	}
	group := opts.Group
	if group == "" {
		group = cfg.Pipeline + "-tail"
	}
	group = sanitizeName(group)

	var queues []*tailQueue
	for _, topic := range topics {
		qs, err := tailQueues(ctx, cfg.NameServers, topic)
		if err != nil {
			return err
		}
		for _, q := range qs {
			q.cred = cfg.credentials()
			lo, err := queueOffset(ctx, q, reqGetMinOffset)
			if err != nil {
				return err
			}
			hi, err := queueOffset(ctx, q, reqGetMaxOffset)
			if err != nil {
				return err
			}
			q.next, q.end = lo, hi
			if opts.From == TailFromNow {
				q.next = hi
			}
			queues = append(queues, q)
		}
	}

	emitted := 0
	for {
		progressed := false
		for _, q := range queues {
			for opts.Follow || q.next < q.end {
				msgs, err := pullQueue(ctx, group, q)
				if err != nil {
					if ctx.Err() != nil && opts.Follow {
						return nil
					}
					return err
				}
				if len(msgs) == 0 {
					break
				}
				progressed = true
				for _, m := range msgs {
					if !opts.Follow && m.QueueOffset >= q.end {
						q.next = q.end
						break
					}
					tms, err := tailMessages(m, q)
					if err != nil {
						return err
					}
					for _, tm := range tms {
						if !tailMatch(tm, opts) {
							continue
						}
						if err := emit(tm); err != nil {
							if errors.Is(err, ErrTailDone) {
								return nil
							}
							return err
						}
						emitted++
						if opts.Limit > 0 && emitted >= opts.Limit {
							return nil
						}
					}
				}
			}
		}
		if !opts.Follow {
			return nil
		}
		if !progressed {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(tailIdlePoll):
			}
		}
	}
}

func tailMatch(m TailMessage, opts TailOptions) bool {
	if opts.Table != "" && m.Properties[primitive.PropertyTags] != opts.Table {
		return false
	}
	if opts.Key != "" && m.Properties[primitive.PropertyKeys] != opts.Key {
		return false
	}
	return true
}

// tailMessages is m as Tail emits it: itself, or the records of a packed
// message, each with the properties a compact message of its own would
// have (and Index, its place in the pack).
func tailMessages(m *primitive.MessageExt, q *tailQueue) ([]TailMessage, error) {
	props := m.GetProperties()
	base := TailMessage{Topic: m.Topic, Broker: q.broker, Queue: q.id, Offset: m.QueueOffset, Value: m.Body,
		Properties: props, StoredAt: time.UnixMilli(m.StoreTimestamp)}
	if !isPacked(props) {
		if k, ok := props[KeyProperty]; ok {
			base.Key = []byte(k)
		}
		return []TailMessage{base}, nil
	}
	var out []TailMessage
	_, err := unpack(m.Body, func(i int, e packEntry) error {
		tm := base
		tm.Index, tm.Key, tm.Value = i, e.Key, e.Value
		tm.Properties = map[string]string{IDProperty: e.ID}
		for _, k := range []string{primitive.PropertyTags, FormatProperty, RecordsProperty} {
			if v, ok := props[k]; ok {
				tm.Properties[k] = v
			}
		}
		if e.Keys != "" {
			tm.Properties[primitive.PropertyKeys] = e.Keys
		}
		if e.hasSchema {
			tm.Properties[SchemaProperty] = e.Schema
		}
		if e.Key != nil {
			tm.Properties[KeyProperty] = string(e.Key)
		}
		for k, v := range e.Headers {
			if k != DroppedColumnsProperty {
				k = HeaderPropertyPrefix + k
			}
			tm.Properties[k] = v
		}
		out = append(out, tm)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: topic %q broker %q queue %d offset %d: %w", ErrDecode, m.Topic, q.broker, q.id, m.QueueOffset, err)
	}
	return out, nil
}

// tailQueues lists the readable queues of topic with their master's address.
func tailQueues(ctx context.Context, ns []string, topic string) ([]*tailQueue, error) {
	r, err := fetchRoute(ctx, ns, topic)
	if errors.Is(err, errTopicNotExist) {
		return nil, fmt.Errorf("rocketmq: topic %q does not exist on name servers %v: check the topic name (sluice tail lists a pipeline's topics from transport.topics)", topic, ns)
	}
	if err != nil {
		return nil, err
	}
	addr := map[string]string{}
	for _, bd := range r.BrokerDatas {
		addr[bd.BrokerName] = bd.BrokerAddrs["0"]
	}
	qds := append([]queueData(nil), r.QueueDatas...)
	sort.SliceStable(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
	var out []*tailQueue
	for _, qd := range qds {
		a := addr[qd.BrokerName]
		if a == "" {
			return nil, fmt.Errorf("rocketmq: topic %q: broker %q has no master registered: is it up?", topic, qd.BrokerName)
		}
		for i := 0; i < qd.ReadQueueNums && i < 1<<16; i++ {
			out = append(out, &tailQueue{topic: topic, broker: qd.BrokerName, addr: a, id: i})
		}
	}
	return out, nil
}

func queueOffset(ctx context.Context, q *tailQueue, code int) (int64, error) {
	h, _, err := q.pool.invoke(ctx, q.cred, q.addr, code, map[string]string{"topic": q.topic, "queueId": strconv.Itoa(q.id)}, nil)
	if err != nil {
		return 0, schema.Wrapf("rocketmq", err, "offsets of %s queue %d on %s", q.topic, q.id, q.addr)
	}
	if err := authError(q.cred.AccessKey, q.addr, h); err != nil {
		return 0, err
	}
	if h.Code != resSuccess {
		return 0, fmt.Errorf("rocketmq: offsets of %s queue %d on %s: code %d: %s", q.topic, q.id, q.addr, h.Code, h.Remark)
	}
	n, err := strconv.ParseInt(h.ExtFields["offset"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("rocketmq: offsets of %s queue %d: bad answer %q", q.topic, q.id, h.ExtFields["offset"])
	}
	return n, nil
}

// pullQueue pulls the next messages of q from q.next and advances it. It
// asks for no offset commit, so no group offset moves.
func pullQueue(ctx context.Context, group string, q *tailQueue) ([]*primitive.MessageExt, error) {
	for attempt := 0; ; attempt++ {
		h, body, err := q.pool.invoke(ctx, q.cred, q.addr, reqPullMessage, map[string]string{
			"consumerGroup": group, "topic": q.topic, "queueId": strconv.Itoa(q.id),
			"queueOffset": strconv.FormatInt(q.next, 10), "maxMsgNums": strconv.Itoa(cmp.Or(q.batch, tailPullBatch)),
			"sysFlag": strconv.Itoa(flagSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG", "bname": q.broker,
		}, nil)
		if err != nil {
			return nil, schema.Wrapf("rocketmq", err, "pull %s queue %d offset %d from %s", q.topic, q.id, q.next, q.addr)
		}
		if err := authError(q.cred.AccessKey, q.addr, h); err != nil {
			return nil, err
		}
		nextBegin, _ := strconv.ParseInt(h.ExtFields["nextBeginOffset"], 10, 64)
		switch h.Code {
		case resSuccess:
			q.max, _ = strconv.ParseInt(h.ExtFields["maxOffset"], 10, 64)
			msgs, err := decodeMessages(body)
			if err != nil {
				return nil, fmt.Errorf("rocketmq: pull %s queue %d offset %d: %w", q.topic, q.id, q.next, err)
			}
			if nextBegin > q.next {
				q.next = nextBegin
			} else if len(msgs) > 0 {
				q.next = msgs[len(msgs)-1].QueueOffset + 1
			}
			return msgs, nil
		case resPullNotFound:
			q.max, _ = strconv.ParseInt(h.ExtFields["maxOffset"], 10, 64)
			return nil, nil
		case resPullOffsetMove:
			// The offset fell out of the store (or past its end): go on
			// from where the broker says the queue now begins.
			if nextBegin == q.next || attempt >= 3 {
				return nil, nil
			}
			q.next = nextBegin
			if nextBegin > q.end {
				q.end = nextBegin
			}
			continue
		case resPullRetryNow:
			if attempt < 3 {
				continue
			}
			return nil, nil
		default:
			return nil, fmt.Errorf("rocketmq: pull %s queue %d offset %d from %s: code %d: %s", q.topic, q.id, q.next, q.addr, h.Code, h.Remark)
		}
	}
}

// decodeMessages decodes a pull answer's body; the client's decoder does not
// check lengths, so a malformed body is turned into an error here.
func decodeMessages(body []byte) (msgs []*primitive.MessageExt, err error) {
	defer func() {
		if r := recover(); r != nil {
			msgs, err = nil, fmt.Errorf("malformed message data from the broker: %v", r)
		}
	}()
	return primitive.DecodeMessage(body), nil
}
