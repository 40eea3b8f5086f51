package sink

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func txRec(id string) schema.Record {
	r := ins(1, "v")
	if id != "" {
		r.Transaction = &schema.Transaction{ID: id}
	}
	return r
}

func TestOpenTail(t *testing.T) {
	commit := schema.Record{Op: schema.OpCommit}
	withPos := txRec("b")
	withPos.Position = []byte("pos")
	marked := txRec("b")
	marked.Headers = map[string]string{schema.HeaderTxEnd: "true"}
	ddl := txRec("b")
	ddl.Op = schema.OpSchemaChange
	cases := []struct {
		name string
		recs []schema.Record
		want int
	}{
		{"empty", nil, 0},
		{"no transaction ids", []schema.Record{txRec(""), txRec("")}, 2},
		{"last transaction open", []schema.Record{txRec("a"), txRec("a"), txRec("b"), txRec("b")}, 2},
		{"one open transaction", []schema.Record{txRec("a"), txRec("a")}, 0},
		{"commit marker closes it", []schema.Record{txRec("a"), txRec("b"), commit}, 3},
		{"marker after commit", []schema.Record{txRec("a"), commit, {Op: schema.OpBegin}}, 3},
		{"position closes it", []schema.Record{txRec("a"), txRec("b"), withPos}, 3},
		{"transport's end mark closes it", []schema.Record{txRec("a"), txRec("b"), marked}, 3},
		{"an earlier end mark closes nothing later", []schema.Record{marked, txRec("c")}, 1},
		{"schema change is whole", []schema.Record{txRec("a"), ddl}, 2},
		{"commit then new open", []schema.Record{txRec("b"), commit, txRec("b")}, 2},
	}
	for _, c := range cases {
		if got := openTail(c.recs); got != c.want {
			t.Errorf("%s: openTail = %d, want %d", c.name, got, c.want)
		}
	}
}

// Pending records survive the gob round trip with every value type of the
// schema model.
func TestPendingEncoding(t *testing.T) {
	r := ins(1, "v")
	r.Transaction = &schema.Transaction{ID: "0-1-7", TotalOrder: 2}
	r.Delivery, r.ID = deliveredAt("t", 3, int64(9))
	r.ValueSchema = &schema.Schema{Type: schema.Struct, Fields: []schema.Field{{Name: "a", Schema: schema.DecimalSchema(10, 2, true)}}}
	r.After = schema.Row{int64(-1), uint64(1 << 63), float32(1.5), 2.5, true, "s", []byte{0, 255}, schema.MustDec("-1.20"), nil}
	data, err := encodePending([]schema.Record{r})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePending(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0].After[:7], r.After[:7]) || !got[0].After[7].(schema.Dec).Equal(r.After[7].(schema.Dec)) || got[0].After[8] != nil ||
		!got[0].ValueSchema.Equal(r.ValueSchema) || *got[0].Transaction != *r.Transaction || *got[0].Delivery != *r.Delivery {
		t.Fatalf("round trip: %+v\nwant %+v", got, r)
	}
	if _, err := decodePending([]byte("garbage")); err == nil || !strings.Contains(err.Error(), "pending") {
		t.Fatalf("garbage decoded: %v", err)
	}
}
