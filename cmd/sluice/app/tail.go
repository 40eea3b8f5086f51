package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// tailLine is one line of `sluice tail`.
type tailLine struct {
	Topic  string `json:"topic"`
	Queue  int    `json:"queue"`
	Offset int64  `json:"offset"`
	// Index is the record's place in a packed message (format packed:
	// several records share an offset); absent for other messages.
	Index *int            `json:"index,omitempty"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
	// Error is the dead letter's cause (property or header sluice_error), if any.
	Error string `json:"error,omitempty"`
}

// cmdTail prints the records on a pipeline's RocketMQ or Kafka topics as
// JSON lines, without a consumer group: the sink's offsets do not move.
func cmdTail(args []string, stdout io.Writer) error {
	fs, path, _ := configFlag("tail", args)
	from := fs.String("from", rocketmq.TailFromBeginning, "where to start: beginning (oldest stored record) or now")
	follow := fs.Bool("follow", false, "keep printing new records until interrupted (implied by --from now)")
	table := fs.String("table", "", "only the records of this table, as db.table")
	key := fs.String("key", "", "only the records with this key (the row's key values joined by |, as in the message key)")
	limit := fs.Int("limit", 0, "stop after this many records (0: no limit)")
	schemas := fs.Bool("schemas", false, "print the full envelope with its schema instead of the payload only")
	dlq := fs.Bool("dlq", false, "read the pipeline's dead-letter topic instead of its data topics")
	cfg, err := loadConfig(fs, path, args)
	if err != nil {
		return err
	}
	only := "source"
	if cfg.Source == nil {
		only = "sink"
	}
	d, err := decodeAll(cfg, only)
	if err != nil {
		return err
	}
	if d.kafka != nil {
		return tailKafka(*d.kafka, cfg.File, kafka.TailOptions{From: *from, Follow: *follow || *from == kafka.TailFromNow, Key: *key, Limit: *limit},
			*table, *dlq, *schemas, stdout)
	}
	if d.rocketmq == nil {
		return fmt.Errorf("tail reads RocketMQ and Kafka topics: the transport of %s is %q: %w", cfg.File, cfg.Transport.Type, runtime.ErrConfig)
	}
	rc := *d.rocketmq
	prefix := rc.TopicPrefix
	if prefix == "" {
		prefix = rc.Pipeline
	}
	opts := rocketmq.TailOptions{From: *from, Follow: *follow || *from == rocketmq.TailFromNow, Key: *key, Limit: *limit, Topics: rc.Topics}
	if *table != "" {
		db, tbl, ok := strings.Cut(*table, ".")
		if !ok || db == "" || tbl == "" {
			return fmt.Errorf("--table %q: write it as db.table: %w", *table, runtime.ErrConfig)
		}
		opts.Table = tbl
		opts.Topics = []string{rocketmq.TopicName(prefix, db, tbl, rc.TopicMode)}
	}
	if *dlq {
		opts.Topics = []string{rocketmq.DeadLetterTopic(prefix)}
	}
	if len(opts.Topics) == 0 {
		return fmt.Errorf("tail: no topics: set transport.topics in %s or pass --table db.table: %w", cfg.File, runtime.ErrConfig)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := newTailWriter(stdout, opts.Follow)
	defer w.out.Flush()
	return rocketmq.Tail(ctx, rc, opts, func(m rocketmq.TailMessage) error {
		l := tailLine{Topic: m.Topic, Queue: m.Queue, Offset: m.Offset, Key: tailJSON(m.Key, *schemas), Value: tailJSON(m.Value, *schemas),
			Error: m.Properties[rocketmq.DeadLetterErrorProperty]}
		if m.Properties[rocketmq.FormatProperty] == rocketmq.FormatPacked {
			l.Index = &m.Index
		}
		return w.line(l)
	})
}

// tailKafka is cmdTail over the Kafka transport kc: its topics (or those of
// --table), read outside the sink's consumer group; "queue" in the lines is
// the partition; --dlq reads the dead-letter topic.
func tailKafka(kc kafka.Config, file string, opts kafka.TailOptions, table string, dlq, schemas bool, stdout io.Writer) error {
	opts.Topics = kc.Topics
	prefix := kc.TopicPrefix
	if prefix == "" {
		prefix = kc.Pipeline
	}
	if table != "" {
		db, tbl, ok := strings.Cut(table, ".")
		if !ok || db == "" || tbl == "" {
			return fmt.Errorf("--table %q: write it as db.table: %w", table, runtime.ErrConfig)
		}
		opts.Topics = []string{kafka.TopicName(prefix, db, tbl)}
	}
	if dlq {
		opts.Topics = []string{kafka.DeadLetterTopic(prefix)}
	}
	if len(opts.Topics) == 0 {
		return fmt.Errorf("tail: no topics: set transport.topics in %s or pass --table db.table: %w", file, runtime.ErrConfig)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := newTailWriter(stdout, opts.Follow)
	defer w.out.Flush()
	return kafka.Tail(ctx, kc, opts, func(m kafka.TailMessage) error {
		return w.line(tailLine{Topic: m.Topic, Queue: int(m.Partition), Offset: m.Offset, Key: tailJSON(m.Key, schemas), Value: tailJSON(m.Value, schemas),
			Error: m.Headers[kafka.DeadLetterErrorHeader]})
	})
}

// tailWriter writes tail's JSON lines, each at once when following.
type tailWriter struct {
	out    *bufio.Writer
	enc    *json.Encoder
	follow bool
}

func newTailWriter(stdout io.Writer, follow bool) *tailWriter {
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return &tailWriter{out: out, enc: enc, follow: follow}
}

func (w *tailWriter) line(l tailLine) error {
	if err := w.enc.Encode(l); err != nil {
		return err
	}
	if w.follow {
		return w.out.Flush() // a follower wants each line at once
	}
	return nil
}

// tailJSON returns b as JSON: without schemas, the payload of a
// {"schema":…,"payload":…} envelope (what the converter writes without
// schemas); bytes that are not JSON become a JSON string; nil becomes null.
func tailJSON(b []byte, schemas bool) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	if !json.Valid(b) {
		s, _ := json.Marshal(string(b))
		return s
	}
	if !schemas && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		var env struct {
			Schema  json.RawMessage `json:"schema"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(b, &env) == nil && env.Payload != nil && env.Schema != nil {
			return env.Payload
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}
