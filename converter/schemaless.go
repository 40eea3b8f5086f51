package converter

import (
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// decodeSchemaless reads a payload-only event, inferring the row schema.
func decodeSchemaless(r *schema.Record, payload []byte) error {
	d := decoder{b: payload}
	if err := d.open('{'); err != nil {
		return err
	}
	var haveOp bool
	var ddl *schema.SchemaChange
	var images [2][]byte
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(k) {
		case "before", "after":
			start := d.ws()
			if err = d.skip(); err == nil {
				images[len(k)&1] = payload[start:d.i] // "after" has odd length
			}
		case "source":
			err = d.source(r)
		case "transaction":
			err = d.transaction(r)
		case "op":
			var s string
			if s, err = d.str(); err == nil {
				r.Op, err = schema.ParseOp(s)
			}
			haveOp = true
		case "ts_ms":
			if !d.null() {
				r.TsMs, err = d.int64()
			}
		case "changes":
			if !d.null() {
				if ddl == nil {
					ddl = &schema.SchemaChange{}
				}
				var s string
				if s, err = d.str(); err == nil {
					if ddl.Tables, err = readChanges(s); err != nil {
						err = fmt.Errorf("%w: schema change: changes: %v", ErrSyntax, err)
					}
				}
			}
		case "ddl", "kind":
			if !d.null() {
				if ddl == nil {
					ddl = &schema.SchemaChange{}
				}
				if k[0] == 'd' {
					ddl.DDL, err = d.str()
				} else {
					ddl.Kind, err = d.str()
				}
			}
		default:
			err = d.skip()
		}
		if err != nil {
			return err
		}
	}
	if err := d.end(); err != nil {
		return err
	}
	if ddl != nil && !haveOp {
		r.Op, r.Change, haveOp = schema.OpSchemaChange, ddl, true
	}
	if !haveOp {
		return fmt.Errorf("%w: event without op", ErrSyntax)
	}
	name := r.Source.Name + "." + r.Table.Database + "." + r.Table.Table + ".Value"
	for _, i := range []int{1, 0} { // after first: it names the schema
		img := images[i]
		if img == nil || string(img) == "null" {
			continue
		}
		row, s, err := inferRow(img, name)
		if err != nil {
			return err
		}
		if r.ValueSchema == nil {
			r.ValueSchema = s
		}
		if i == 1 {
			r.After = row
		} else {
			r.Before = alignRow(row, s, r.ValueSchema)
		}
	}
	return nil
}

// alignRow reorders row (of schema s) to the fields of want.
func alignRow(row schema.Row, s, want *schema.Schema) schema.Row {
	if s == want {
		return row
	}
	out := make(schema.Row, len(want.Fields))
	for i, f := range s.Fields {
		if j := want.FieldIndex(f.Name); j >= 0 {
			out[j] = row[i]
		}
	}
	return out
}

// inferRow reads a JSON object as a row, inferring each field's schema:
// integers int64, other numbers float64, strings, booleans; nested values
// are kept as Json text; nulls become optional strings.
func inferRow(b []byte, name string) (schema.Row, *schema.Schema, error) {
	d := decoder{b: b}
	if err := d.open('{'); err != nil {
		return nil, nil, err
	}
	s := &schema.Schema{Type: schema.Struct, Name: name, Optional: true}
	var row schema.Row
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		var v any
		var fs *schema.Schema
		d.ws()
		if d.i >= len(d.b) {
			return nil, nil, d.errf("want a value")
		}
		switch c := d.b[d.i]; {
		case d.null():
			fs = &schema.Schema{Type: schema.String, Optional: true}
		case c == '"':
			fs = &schema.Schema{Type: schema.String, Optional: true}
			v, err = d.str()
		case c == 't' || c == 'f':
			fs = &schema.Schema{Type: schema.Bool, Optional: true}
			v, err = d.bool()
		case c == '{' || c == '[':
			start := d.i
			err = d.skip()
			fs = &schema.Schema{Type: schema.String, Logical: schema.Json, Optional: true}
			v = string(validUTF8(d.b[start:d.i]))
		default:
			save := d.i
			var tok []byte
			if tok, err = d.number(); err == nil {
				if strings.ContainsAny(string(tok), ".eE") {
					fs = &schema.Schema{Type: schema.Float64, Optional: true}
					d.i = save
					v, err = d.float(64)
				} else {
					fs = &schema.Schema{Type: schema.Int64, Optional: true}
					d.i = save
					if v, err = d.int64(); err != nil {
						d.i = save
						fs = &schema.Schema{Type: schema.Float64, Optional: true}
						v, err = d.float(64)
					}
				}
			}
		}
		if err != nil {
			return nil, nil, err
		}
		s.Fields = append(s.Fields, schema.Field{Name: string(k), Schema: fs})
		row = append(row, v)
	}
	if row == nil {
		row = schema.Row{}
	}
	return row, s, nil
}
