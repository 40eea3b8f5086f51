package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/converter"
)

// Where Tail starts (TailOptions.From), as the RocketMQ transport's tail.
const (
	TailFromBeginning = "beginning"
	TailFromNow       = "now"
)

// TailOptions selects what Tail reads.
type TailOptions struct {
	// Topics to read; default the config's Topics.
	Topics []string
	// From is TailFromBeginning (default: the oldest stored record) or
	// TailFromNow (only records stored after Tail starts).
	From string
	// Follow keeps reading new records until ctx is done or Limit is
	// reached. Without it Tail stops at the end offsets it saw at start.
	Follow bool
	// Key keeps only records whose key (Record.KeyString of the decoded
	// record) equals it; empty: all.
	Key string
	// Limit stops after this many records were emitted; 0: no limit.
	Limit int
}

// TailMessage is one record read by Tail.
type TailMessage struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte // the converter's key
	Value     []byte // the converter's value
	Headers   map[string]string
}

// Tail calls emit for each selected record of the topics, in offset order
// per partition, outside any consumer group (no group's offsets move). It
// returns nil when every partition reached the end offset it had at start
// (without Follow), Limit is reached, or ctx is done while following.
func Tail(ctx context.Context, cfg Config, opts TailOptions, emit func(TailMessage) error) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	topics := opts.Topics
	if len(topics) == 0 {
		topics = cfg.Topics
	}
	if len(topics) == 0 {
		return fmt.Errorf("%w: tail: no topics to read", ErrConfig)
	}
	switch opts.From {
	case "":
		opts.From = TailFromBeginning
	case TailFromBeginning, TailFromNow:
	default:
		return fmt.Errorf("%w: tail from %q: use %q or %q", ErrConfig, opts.From, TailFromBeginning, TailFromNow)
	}
	if cfg.Codec == nil {
		cfg.Codec = converter.NewJSON(converter.DefaultOptions())
	}
	log := slog.Default()
	base, err := connect(ctx, cfg, clientOptions(cfg, log))
	if err != nil {
		return err
	}
	defer base.Close()
	adm := kadm.NewClient(base)
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: tail: the start offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: tail: the end offsets of %s: %w", strings.Join(topics, ", "), err)
	}
	// Each partition is read from its first offset (or its end, from now);
	// without Follow, up to the end it has now.
	at := map[string]map[int32]kgo.Offset{}
	next, end := map[tp]int64{}, map[tp]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		p := tp{o.Topic, o.Partition}
		from := o.Offset
		if opts.From == TailFromBeginning {
			s, _ := starts.Lookup(o.Topic, o.Partition)
			from = s.Offset
		}
		next[p], end[p] = from, o.Offset
		if at[o.Topic] == nil {
			at[o.Topic] = map[int32]kgo.Offset{}
		}
		at[o.Topic][o.Partition] = kgo.NewOffset().At(from)
	})
	done := func() bool {
		if opts.Follow {
			return false
		}
		for p, n := range next {
			if n < end[p] {
				return false
			}
		}
		return true
	}
	cl, err := kgo.NewClient(append(clientOptions(cfg, log), kgo.ConsumePartitions(at), kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	defer cl.Close()
	emitted := 0
	book := schemaBook(cfg) // for --key on compact records
	for !done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil // an interrupted follower stops quietly
		}
		if err := fetches.Err0(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("kafka: tail: %w", err)
		}
		var stop error
		fetches.EachRecord(func(r *kgo.Record) {
			if stop != nil {
				return
			}
			next[tp{r.Topic, r.Partition}] = r.Offset + 1
			if opts.Key != "" {
				rec, err := decodeValue(ctx, cfg.Codec, book, schemaRef(r), r.Key, r.Value)
				if err != nil || rec.KeyString() != opts.Key {
					return
				}
			}
			m := TailMessage{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				if m.Headers == nil {
					m.Headers = map[string]string{}
				}
				m.Headers[h.Key] = string(h.Value)
			}
			if stop = emit(m); stop != nil {
				return
			}
			if emitted++; opts.Limit > 0 && emitted >= opts.Limit {
				stop = errTailLimit
			}
		})
		if errors.Is(stop, errTailLimit) {
			return nil
		}
		if stop != nil {
			return stop
		}
	}
	return nil
}

// errTailLimit ends Tail's loop at TailOptions.Limit.
var errTailLimit = errors.New("kafka: tail limit reached")
