package sink

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

var (
	tValue = &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "v", Schema: schema.Primitive(schema.String, true)},
	}}
	tKey = &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
	}}
	tID = schema.TableID{Database: "db", Table: "t"}
)

func ins(id int64, v string) schema.Record {
	return schema.Record{Op: schema.OpCreate, Table: tID, KeySchema: tKey, Key: schema.Row{id}, ValueSchema: tValue, After: schema.Row{id, v}}
}

func upd(oldID, id int64, v string) schema.Record {
	return schema.Record{Op: schema.OpUpdate, Table: tID, KeySchema: tKey, Key: schema.Row{id}, ValueSchema: tValue,
		Before: schema.Row{oldID, "old"}, After: schema.Row{id, v}}
}

func del(id int64) schema.Record {
	return schema.Record{Op: schema.OpDelete, Table: tID, KeySchema: tKey, Key: schema.Row{id}, ValueSchema: tValue, Before: schema.Row{id, "old"}}
}

func trunc() schema.Record { return schema.Record{Op: schema.OpTruncate, Table: tID} }

func defaultTarget(id schema.TableID) target { return target{Schema: id.Database, Table: id.Table} }

// render shows a plan as text: "T" for truncate, "-id" for deletes,
// "+id=v" for upserts, "i:v" for keyless inserts.
func render(p *plan) string {
	var parts []string
	for _, tp := range p.tables {
		var b []string
		if tp.truncate != nil {
			b = append(b, "T")
		}
		for _, c := range tp.changes {
			if c.del {
				b = append(b, fmt.Sprintf("-%v", c.key[0]))
			} else {
				b = append(b, fmt.Sprintf("+%v=%v", c.key[0], c.rec.After[1]))
			}
		}
		for _, r := range tp.inserts {
			b = append(b, fmt.Sprintf("i:%v", r.After[1]))
		}
		parts = append(parts, tp.target.String()+"["+strings.Join(b, " ")+"]")
	}
	return strings.Join(parts, " ")
}

func TestReduce(t *testing.T) {
	other := ins(7, "o")
	other.Table = schema.TableID{Database: "db", Table: "u"}
	keyless := schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "db", Table: "k"}, ValueSchema: tValue, After: schema.Row{int64(1), "a"}}
	deleteByBefore := del(4)
	deleteByBefore.Key = nil
	cases := []struct {
		name string
		recs []schema.Record
		want string
	}{
		{"insert then update: last wins", []schema.Record{ins(1, "a"), upd(1, 1, "b")}, "db.t[+1=b]"},
		{"insert then delete", []schema.Record{ins(1, "a"), del(1)}, "db.t[-1]"},
		{"insert delete insert", []schema.Record{ins(1, "a"), del(1), ins(1, "c")}, "db.t[+1=c]"},
		{"key change", []schema.Record{upd(1, 2, "b")}, "db.t[-1 +2=b]"},
		{"key change then old key back", []schema.Record{upd(1, 2, "b"), ins(1, "x")}, "db.t[+1=x +2=b]"},
		{"key change and back", []schema.Record{upd(1, 2, "b"), upd(2, 1, "c")}, "db.t[+1=c -2]"},
		{"truncate drops earlier changes", []schema.Record{ins(1, "a"), trunc(), ins(2, "b")}, "db.t[T +2=b]"},
		{"markers ignored", []schema.Record{{Op: schema.OpBegin}, ins(1, "a"), {Op: schema.OpCommit}, {Op: schema.OpHeartbeat}}, "db.t[+1=a]"},
		{"delete from before image", []schema.Record{deleteByBefore}, "db.t[-4]"},
		{"keys keep first position", []schema.Record{ins(3, "a"), ins(1, "b"), upd(3, 3, "c")}, "db.t[+3=c +1=b]"},
		{"two tables", []schema.Record{ins(1, "a"), other, del(1)}, "db.t[-1] db.u[+7=o]"},
		{"keyless insert appends", []schema.Record{keyless, keyless}, "db.k[i:a i:a]"},
		{"snapshot read is an upsert", []schema.Record{{Op: schema.OpRead, Table: tID, KeySchema: tKey, ValueSchema: tValue, After: schema.Row{int64(5), "r"}}}, "db.t[+5=r]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := reduce(c.recs, defaultTarget)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(p); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestReduceErrors(t *testing.T) {
	// Tables without key: an update or delete without its full before
	// image cannot find its row (keyless_mode before_image, the default).
	keylessUpdate := upd(1, 1, "a")
	keylessUpdate.KeySchema, keylessUpdate.Before = nil, nil
	keylessDelete := del(1)
	keylessDelete.KeySchema, keylessDelete.Before = nil, schema.Row{int64(1)}
	nullKey := ins(1, "a")
	nullKey.After = schema.Row{nil, "a"}
	short := ins(1, "a")
	short.After = schema.Row{int64(1)}
	for name, r := range map[string]schema.Record{
		"keyless update": keylessUpdate, "keyless delete": keylessDelete, "null key": nullKey, "short row": short,
		"unknown op": {Op: schema.OpUnknown, Table: tID},
	} {
		_, err := reduce([]schema.Record{r}, defaultTarget)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !isFatal(err) {
			t.Errorf("%s: error %v is not marked fatal", name, err)
		}
	}
}

// TestReduceEqualsSequential applies random batches both ways to a model
// table and compares.
func TestReduceEqualsSequential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 2000; iter++ {
		start := map[int64]string{}
		for k := int64(0); k < 5; k++ {
			if rng.IntN(2) == 0 {
				start[k] = "s"
			}
		}
		seq := copyMap(start)
		var recs []schema.Record
		for i := 0; i < 1+rng.IntN(12); i++ {
			k := int64(rng.IntN(5))
			v := fmt.Sprintf("v%d", i)
			switch rng.IntN(10) {
			case 0, 1, 2:
				recs = append(recs, ins(k, v))
				seq[k] = v
			case 3, 4, 5:
				recs = append(recs, upd(k, k, v))
				seq[k] = v
			case 6:
				k2 := int64(rng.IntN(5))
				recs = append(recs, upd(k, k2, v))
				delete(seq, k)
				seq[k2] = v
			case 7, 8:
				recs = append(recs, del(k))
				delete(seq, k)
			case 9:
				recs = append(recs, trunc())
				seq = map[int64]string{}
			}
		}
		p, err := reduce(recs, defaultTarget)
		if err != nil {
			t.Fatal(err)
		}
		got := copyMap(start)
		for _, tp := range p.tables {
			if tp.truncate != nil {
				got = map[int64]string{}
			}
			for _, c := range tp.changes {
				if c.del {
					delete(got, c.key[0].(int64))
				}
			}
			for _, c := range tp.changes {
				if !c.del {
					got[c.key[0].(int64)] = c.rec.After[1].(string)
				}
			}
		}
		if !reflect.DeepEqual(got, seq) {
			t.Fatalf("batch %s: plan %s gives %v, sequential gives %v", describe(recs), render(p), got, seq)
		}
	}
}

func describe(recs []schema.Record) string {
	var b []string
	for _, r := range recs {
		switch r.Op {
		case schema.OpTruncate:
			b = append(b, "t")
		case schema.OpDelete:
			b = append(b, fmt.Sprintf("d%v", r.Key[0]))
		default:
			b = append(b, fmt.Sprintf("%s%v>%v=%v", r.Op, r.Before, r.After[0], r.After[1]))
		}
	}
	return strings.Join(b, " ")
}

func copyMap(m map[int64]string) map[int64]string {
	out := make(map[int64]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestFilterDelivered(t *testing.T) {
	at := func(r schema.Record, q int, off int64) schema.Record {
		r.Delivery, r.ID = deliveredAt("top", q, int64(off))
		return r
	}
	recs := []schema.Record{at(ins(1, "a"), 0, 5), at(ins(2, "b"), 0, 6), at(ins(3, "c"), 1, 2), ins(4, "no delivery"), at(ins(5, "e"), 2, 9)}
	kept, maxID, err := filterDelivered(recs, map[progressKey]schema.ID{{"top", "", 0}: testID(5), {"top", "", 1}: testID(3)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range kept {
		ids = append(ids, r.After[0].(int64))
	}
	if !reflect.DeepEqual(ids, []int64{2, 4, 5}) {
		t.Fatalf("kept %v, want [2 4 5]", ids)
	}
	want := map[progressKey]schema.ID{{"top", "", 0}: testID(6), {"top", "", 2}: testID(9)}
	if !reflect.DeepEqual(maxID, want) {
		t.Fatalf("max IDs %v, want %v", maxID, want)
	}
}

// Problem 9 of issue 10: after a source restart one batch holds a record
// and its replay (published again, same ID) followed by the newer record.
// The replay must be dropped before reduction, so the newest version wins
// and the progress is the newest ID.
func TestFilterDeliveredDropsReplaysInsideABatch(t *testing.T) {
	at := func(r schema.Record, off int64) schema.Record {
		r.Delivery, r.ID = deliveredAt("top", 0, off)
		return r
	}
	recs := []schema.Record{at(upd(1, 1, "v1"), 1), at(upd(1, 1, "v2"), 2), at(upd(1, 1, "v1"), 1), at(upd(1, 1, "v2"), 2), at(upd(1, 1, "v3"), 3)}
	kept, maxID, err := filterDelivered(recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, r := range kept {
		vals = append(vals, r.After[1].(string))
	}
	if !reflect.DeepEqual(vals, []string{"v1", "v2", "v3"}) {
		t.Fatalf("kept %v, want [v1 v2 v3]", vals)
	}
	if maxID[progressKey{"top", "", 0}] != testID(3) {
		t.Fatalf("max ID %v", maxID)
	}
	p, err := reduce(kept, defaultTarget)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(p); got != "db.t[+1=v3]" {
		t.Fatalf("reduced to %s, want the newest v3", got)
	}
}

// Problem 4 of issue 10: queues with the same number on two brokers are two
// queues; the progress of one does not skip records of the other.
func TestFilterDeliveredKeysQueuesByBroker(t *testing.T) {
	on := func(r schema.Record, broker string, off int64) schema.Record {
		r.Delivery, r.ID = deliveredAt("top", 0, off)
		r.Delivery.Broker = broker
		return r
	}
	last := map[progressKey]schema.ID{{"top", "broker-a", 0}: testID(100)}
	kept, _, err := filterDelivered([]schema.Record{on(ins(1, "a"), "broker-a", 50), on(ins(2, "b"), "broker-b", 50)}, last)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].After[0] != int64(2) {
		t.Fatalf("kept %v, want only broker-b's record", kept)
	}
	if (progressKey{"top", "broker-b", 0}).stored() == (progressKey{"top", "broker-a", 0}).stored() {
		t.Fatal("two brokers' queues share a progress row")
	}
}

// A delivered change without an ID cannot be told from a replay: refused.
func TestFilterDeliveredRefusesRecordsWithoutID(t *testing.T) {
	r := ins(1, "a")
	r.Delivery = &schema.Delivery{Topic: "top", Queue: 0, Offset: 7}
	_, _, err := filterDelivered([]schema.Record{r}, nil)
	if err == nil || !isFatal(err) || !strings.Contains(err.Error(), "no record ID") {
		t.Fatalf("err = %v, want a fatal error naming the missing ID", err)
	}
	// markers carry no change: they pass without one
	m := schema.Record{Op: schema.OpCommit, Delivery: &schema.Delivery{Topic: "top"}}
	if kept, _, err := filterDelivered([]schema.Record{m}, nil); err != nil || len(kept) != 1 {
		t.Fatalf("marker: %v %v", kept, err)
	}
}

func TestGroupRowsByColumnNames(t *testing.T) {
	clone := func(s *schema.Schema) *schema.Schema {
		c := *s
		c.Fields = append([]schema.Field{}, s.Fields...)
		return &c
	}
	var recs []*schema.Record
	for i := 0; i < 3; i++ {
		r := ins(int64(i), "x")
		r.ValueSchema, r.KeySchema = clone(tValue), clone(tKey) // as decoded from a transport
		recs = append(recs, &r)
	}
	wide := ins(9, "w")
	wide.ValueSchema = clone(tValue)
	wide.ValueSchema.Fields = append(wide.ValueSchema.Fields, schema.Field{Name: "extra", Schema: schema.Primitive(schema.String, true)})
	wide.After = append(wide.After, "e")
	recs = append(recs[:2], &wide, recs[2])
	groups := groupRows(recs, true, nil)
	if len(groups) != 2 || len(groups[0].recs) != 3 || len(groups[1].recs) != 1 || len(groups[1].cols) != 3 {
		t.Fatalf("got %d groups: %+v", len(groups), groups)
	}
}

// testID is the record ID tests give the record delivered at offset off:
// IDs grow with offsets.
func testID(off int64) schema.ID { return schema.ID{Epoch: 1, Pos: uint64(off + 1)} }

// deliveredAt is a Delivery at (topic, queue, off) and its testID.
func deliveredAt(topic string, queue int, off int64) (*schema.Delivery, schema.ID) {
	return &schema.Delivery{Topic: topic, Queue: queue, Offset: off}, testID(off)
}

// TestReduceKeylessInOrder: a table without key keeps its inserts, updates
// and deletes in source order under before_image (nothing folds: equal rows
// may repeat), drops updates and deletes under append, refuses them under
// fail.
func TestReduceKeylessInOrder(t *testing.T) {
	kl := func(r schema.Record) schema.Record { r.KeySchema, r.Key = nil, nil; return r }
	recs := []schema.Record{kl(ins(1, "a")), kl(upd(1, 1, "b")), kl(ins(1, "a")), kl(del(1))}
	p, err := reduceWith(recs, defaultTarget, reduceOpts{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range p.tables[0].inserts {
		ops = append(ops, r.Op.String())
	}
	if got := strings.Join(ops, ","); got != "c,u,c,d" {
		t.Fatalf("before_image: ops %s, want c,u,c,d", got)
	}
	if p, err = reduceWith(recs, defaultTarget, reduceOpts{keylessAppend: true}); err != nil || len(p.tables[0].inserts) != 2 || p.tables[0].keylessSkipped != 2 {
		t.Fatalf("append: %v, %+v", err, p)
	}
	if _, err := reduceWith(recs, defaultTarget, reduceOpts{keylessFail: true}); !errors.Is(err, ErrSchema) {
		t.Fatalf("fail: %v, want ErrSchema", err)
	}
}

// sameKey answers as comparing keyString's texts does, for every type a
// key column has (its fast cases and its fallback).
func TestSameKeyAsKeyString(t *testing.T) {
	vals := []any{int64(1), int64(-1), uint64(1), "1", "a", "", []byte("1"), []byte{}, schema.MustDec("1.0"),
		schema.MustDec("1.00"), schema.MustDec("1.0"), nil, 1.0, true}
	for _, a := range vals {
		for _, b := range vals {
			for _, pair := range [][2][]any{{{a}, {b}}, {{int64(7), a}, {int64(7), b}}, {{a, "x"}, {b, "y"}}, {{a}, {a, b}}} {
				cols := []string{"k1", "k2"}[:len(pair[0])]
				want := false // keys of different lengths never match
				if len(pair[0]) == len(pair[1]) {
					want = keyString(cols, pair[0]) == keyString(cols, pair[1])
				}
				if got := sameKey(cols, pair[0], pair[1]); got != want {
					t.Errorf("sameKey(%#v, %#v) = %v, keyString says %v", pair[0], pair[1], got, want)
				}
			}
		}
	}
}
