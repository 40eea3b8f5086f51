package rocketmq

import (
	"encoding/json"
	"fmt"

	"github.com/sluicecdc/sluice/schema"
)

// testCodec is a small stand-in for the converter in unit tests: it keeps
// op, table, key, after and position, with int64 values.
type testCodec struct{}

type testEnvelope struct {
	Op    string  `json:"op"`
	DB    string  `json:"db"`
	Table string  `json:"table"`
	After []int64 `json:"after,omitempty"`
	Pos   []byte  `json:"pos,omitempty"`
}

func (testCodec) Encode(r *schema.Record) ([]byte, []byte, error) {
	var key []byte
	if len(r.Key) > 0 {
		k := make([]int64, len(r.Key))
		for i, v := range r.Key {
			n, ok := v.(int64)
			if !ok {
				return nil, nil, fmt.Errorf("test codec: key %T", v)
			}
			k[i] = n
		}
		key, _ = json.Marshal(k)
	}
	e := testEnvelope{Op: r.Op.String(), DB: r.Table.Database, Table: r.Table.Table, Pos: r.Position}
	for _, v := range r.After {
		n, _ := v.(int64)
		e.After = append(e.After, n)
	}
	val, err := json.Marshal(e)
	return key, val, err
}

func (testCodec) Decode(key, value []byte) (schema.Record, error) {
	var e testEnvelope
	if err := json.Unmarshal(value, &e); err != nil {
		return schema.Record{}, err
	}
	op, err := schema.ParseOp(e.Op)
	if err != nil {
		return schema.Record{}, err
	}
	r := schema.Record{Op: op, Table: schema.TableID{Database: e.DB, Table: e.Table}, Position: e.Pos}
	if key != nil {
		var k []int64
		if err := json.Unmarshal(key, &k); err != nil {
			return schema.Record{}, err
		}
		for _, v := range k {
			r.Key = append(r.Key, v)
		}
	}
	for _, v := range e.After {
		r.After = append(r.After, v)
	}
	return r, nil
}
