package sink

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// A record the sink cannot apply fails with one "sink:" prefix (issue 33,
// item 5): ErrSchema and ErrValue carry it already, and applyOnce wrapped
// them in another ("sink: sink: record does not fit the target table").
func TestSinkErrorsSayTheirPrefixOnce(t *testing.T) {
	cfg := DefaultConfig()
	s := &Sink{backend: backend{cfg: &cfg}}
	id := schema.TableID{Database: "db", Table: "t"}
	for name, recs := range map[string][]schema.Record{
		"no value schema": {{Op: schema.OpCreate, Table: id}},
		"no key or image": {{Op: schema.OpDelete, Table: id}},
	} {
		err := s.applyOnce(context.Background(), recs, nil, reduceOpts{}, nil, nil)
		if err == nil || !errors.Is(err, ErrSchema) {
			t.Fatalf("%s: %v, want ErrSchema", name, err)
		}
		if strings.Count(err.Error(), "sink:") != 1 {
			t.Errorf("%s: %q says sink: more than once", name, err)
		}
	}
}
