package converter

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// versionedRecords are records of one table through three versions, as
// the binlog source gives them after ALTERs: each version its own schemas
// (new pointers); v2 adds a column, v3 keeps v2's column names but widens
// a type (only the schema's parameters differ); then v1's schemas again
// (a replica reading an older part of the binlog).
func versionedRecords() []schema.Record {
	name := col(schema.String, schema.None, true, "varchar(20)", schema.ParamLength, "20", schema.ParamCharset, "utf8mb4")
	wide := col(schema.String, schema.None, true, "varchar(40)", schema.ParamLength, "40", schema.ParamCharset, "utf8mb4")
	id := col(schema.Int32, schema.None, false, "int")
	versions := []*schema.Table{
		{Columns: []schema.Column{{Name: "id", Schema: id}, {Name: "name", Schema: name}}},
		{Columns: []schema.Column{{Name: "id", Schema: id}, {Name: "name", Schema: name}, {Name: "n", Schema: col(schema.Int64, schema.None, true, "bigint")}}},
		{Columns: []schema.Column{{Name: "id", Schema: id}, {Name: "name", Schema: wide}, {Name: "n", Schema: col(schema.Int64, schema.None, true, "bigint")}}},
	}
	type schemas struct{ k, v *schema.Schema }
	var built []schemas
	var recs []schema.Record
	for i, t := range append(versions, versions[0]) {
		t.ID, t.PrimaryKey = schema.TableID{Database: "db", Table: "versioned"}, []string{"id"}
		s := schemas{t.KeySchema("srv.db.versioned.Key"), t.ValueSchema("srv.db.versioned.Value")}
		if i < len(versions) {
			built = append(built, s)
		} else {
			s = built[0] // the old version's own schemas
		}
		row := schema.Row{int64(i), fmt.Sprintf("v%d", i+1)}
		for len(row) < len(t.Columns) {
			row = append(row, int64(7))
		}
		recs = append(recs, schema.Record{Op: schema.OpCreate, Table: t.ID, KeySchema: s.k, Key: schema.Row{int64(i)}, ValueSchema: s.v,
			After: row, Source: testSource, TsMs: int64(i)})
		if i < len(versions)-1 {
			ddl := schema.Record{Op: schema.OpSchemaChange, Table: t.ID, Source: testSource, TsMs: int64(i),
				Change: &schema.SchemaChange{DDL: fmt.Sprintf("ALTER TABLE versioned /* %d */", i), Kind: "ALTER"}}
			recs = append(recs, ddl)
		}
	}
	return recs
}

// cacheMatrix is every record shape the encoder caches a part of: each
// type case's records, a table through its versions with schema changes
// between them, a truncate, a record without a value schema, and one
// value schema met under both connectors and (nameless) under two tables.
func cacheMatrix() []schema.Record {
	var recs []schema.Record
	for _, tc := range typeCases() {
		recs = append(recs, typeRecords(tc)...)
	}
	recs = append(recs, versionedRecords()...)
	recs = append(recs, schema.Record{Op: schema.OpTruncate, Table: schema.TableID{Database: "db", Table: "t_int8"}, Source: testSource, TsMs: 3})
	recs = append(recs, schema.Record{Op: schema.OpDelete, Table: schema.TableID{Database: "db", Table: "noschema"}, Source: testSource, TsMs: 4})

	shared := benchRecord()
	nameless := *shared.ValueSchema
	nameless.Name = ""
	for _, connector := range []string{"mariadb", "mysql"} {
		for _, table := range []string{"customers", "clients"} {
			r := benchRecord()
			r.ValueSchema, r.KeySchema = shared.ValueSchema, shared.KeySchema
			r.Source.Connector, r.Table.Table = connector, table
			n := r
			n.ValueSchema = &nameless
			recs = append(recs, r, n)
		}
	}
	return recs
}

// TestEncodeCachedMatchesFresh: a converter that has met every schema of
// the matrix (its cached schema texts, in the order a pipeline interleaves
// tables and versions) writes, for every record, the bytes of a new
// converter that meets that record first; in every options set.
func TestEncodeCachedMatchesFresh(t *testing.T) {
	for _, opts := range []Options{
		DefaultOptions(),
		{Schemas: false},
		{Schemas: true, DecimalMode: DecimalString, TimePrecisionMode: TimeConnect, BinaryMode: BinaryHex, OmitTransaction: true},
		{Schemas: true, BigintUnsignedMode: BigintLong},
	} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			recs := cacheMatrix()
			cached := NewJSON(opts)
			for pass := 0; pass < 2; pass++ {
				for i := range recs {
					r := &recs[i]
					fk, fv, ferr := NewJSON(opts).Encode(r)
					ck, cv, cerr := cached.Encode(r)
					if (ferr == nil) != (cerr == nil) {
						t.Fatalf("pass %d record %d (%s %s): fresh error %v, cached error %v", pass, i, r.Op, r.Table, ferr, cerr)
					}
					if !bytes.Equal(fk, ck) || !bytes.Equal(fv, cv) {
						t.Fatalf("pass %d record %d (%s %s, connector %s): cached encoding differs from a fresh one (fresh versus cached):\nkey %s\nvalue %s",
							pass, i, r.Op, r.Table, r.Source.Connector, diffAt(fk, ck), diffAt(fv, cv))
					}
					if !r.Op.IsData() || r.ValueSchema == nil {
						continue
					}
					fk, fv, ferr = NewJSON(opts).EncodePayloads(r)
					ck, cv, cerr = cached.EncodePayloads(r)
					if (ferr == nil) != (cerr == nil) || !bytes.Equal(fk, ck) || !bytes.Equal(fv, cv) {
						t.Fatalf("pass %d record %d (%s %s): cached payloads differ from fresh ones (errors %v, %v; fresh versus cached):\nkey %s\nvalue %s",
							pass, i, r.Op, r.Table, ferr, cerr, diffAt(fk, ck), diffAt(fv, cv))
					}
				}
			}
		})
	}
}

// TestEncodeNewVersionNewSchema: each version of a table is written with
// its own schema text, never the text cached for an earlier version, and
// the first version's schemas met again give the first version's text.
func TestEncodeNewVersionNewSchema(t *testing.T) {
	c := NewJSON(DefaultOptions())
	var texts []string // of the data records: v1, v2, v3, v1 again
	for _, r := range versionedRecords() {
		if !r.Op.IsData() {
			continue
		}
		_, v, err := c.Encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(v[:bytes.Index(v, []byte(`,"payload":`))]))
	}
	if len(texts) != 4 {
		t.Fatalf("%d data records, want 4", len(texts))
	}
	if texts[0] == texts[1] || texts[1] == texts[2] || texts[0] == texts[2] {
		t.Fatalf("two versions share a schema text:\nv1 %s\nv2 %s\nv3 %s", texts[0], texts[1], texts[2])
	}
	for i, want := range []struct{ has, hasNot string }{
		{`varchar(20)`, `"field":"n"}`}, {`"field":"n"}`, `varchar(40)`}, {`varchar(40)`, `varchar(20)`}, {`varchar(20)`, `"field":"n"}`},
	} {
		if !strings.Contains(texts[i], want.has) || strings.Contains(texts[i], want.hasNot) {
			t.Errorf("data record %d: schema text should have %s and not %s: %s", i, want.has, want.hasNot, texts[i])
		}
	}
	if texts[3] != texts[0] {
		t.Errorf("v1's schemas met again are written differently:\n%s\n%s", texts[0], texts[3])
	}
}

// diffAt shows where a and b first differ.
func diffAt(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return "(equal)"
	}
	from := max(0, i-60)
	return fmt.Sprintf("at byte %d: %q versus %q", i, a[from:min(len(a), i+60)], b[from:min(len(b), i+60)])
}
