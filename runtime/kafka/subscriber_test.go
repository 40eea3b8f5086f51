package kafka

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
)

// TestDecodeWithoutIDHeader: a record without the sluice_id header (as
// Debezium's own connectors write them) gets the identity its source block
// places it at, a snapshot row its offset; one whose block has no binlog
// position is refused, naming the header and the missing field; tombstones
// reach no handler.
func TestDecodeWithoutIDHeader(t *testing.T) {
	s := &Subscriber{cfg: Config{Codec: converter.NewJSON(converter.DefaultOptions())}, log: slog.Default()}
	table := schema.TableID{Database: "db", Table: "t"}
	encode := func(src schema.Source) *kgo.Record {
		rec := update(table, 1, 2)
		rec.Source = src
		key, val, err := s.cfg.Codec.Encode(&rec)
		if err != nil {
			t.Fatal(err)
		}
		return &kgo.Record{Topic: "p.db.t", Partition: 1, Offset: 41, Key: key, Value: val}
	}
	for _, c := range []struct {
		src  schema.Source
		want schema.ID
	}{
		{schema.Source{Connector: "mysql", Snapshot: "false", File: "binlog.000007", Pos: 1234, Row: 3},
			schema.ID{File: 7, Pos: 1234, Phase: schema.PhaseStream, Index: 3}},
		{schema.Source{Connector: "mysql", Snapshot: "true", File: "binlog.000007", Pos: 99},
			schema.ID{File: 7, Pos: 99, Phase: schema.PhaseSnapshot, Index: 41}},
	} {
		rec, err := s.decode(context.Background(), encode(c.src))
		if err != nil {
			t.Fatalf("%+v: %v", c.src, err)
		}
		if rec.ID != c.want {
			t.Errorf("%+v: ID %+v, want %+v", c.src, rec.ID, c.want)
		}
	}
	_, err := s.decode(context.Background(), encode(schema.Source{Connector: "mysql", Snapshot: "false", File: "binlog.000007"}))
	if !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), IDHeader) || !strings.Contains(err.Error(), "source.pos") {
		t.Errorf("no position: err %v, want ErrDecode naming %s and source.pos", err, IDHeader)
	}

	ok := encode(schema.Source{Connector: "mysql", Snapshot: "false", File: "binlog.000007", Pos: 5})
	tomb := &kgo.Record{Topic: "p.db.t", Partition: 1, Offset: 42, Key: ok.Key}
	var got [][]schema.Record
	h := func(_ context.Context, recs []schema.Record) error {
		got = append(got, recs)
		return nil
	}
	if err := s.apply(context.Background(), []*kgo.Record{ok, tomb}, h); err != nil {
		t.Fatal(err)
	}
	if err := s.apply(context.Background(), []*kgo.Record{tomb}, h); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0]) != 1 || got[0][0].Delivery.Offset != 41 {
		t.Errorf("handler calls %v, want one with the record at offset 41 alone", got)
	}
}
