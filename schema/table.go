package schema

// Column describes a source column.
type Column struct {
	Name       string
	Schema     *Schema
	SourceType string // the column type as the source declared it, e.g. "bigint(20) unsigned"
}

// Table is the shape of a source table at one point in its history.
type Table struct {
	ID         TableID
	Columns    []Column
	PrimaryKey []string // column names, in key order
}

// ValueSchema builds the struct schema of a row of t, named name.
func (t *Table) ValueSchema(name string) *Schema {
	s := &Schema{Type: Struct, Name: name, Optional: true, Fields: make([]Field, len(t.Columns))}
	for i, c := range t.Columns {
		s.Fields[i] = Field{Name: c.Name, Schema: c.Schema}
	}
	return s
}

// KeySchema builds the struct schema of the primary key, or nil without one.
func (t *Table) KeySchema(name string) *Schema {
	if len(t.PrimaryKey) == 0 {
		return nil
	}
	s := &Schema{Type: Struct, Name: name, Fields: make([]Field, 0, len(t.PrimaryKey))}
	for _, k := range t.PrimaryKey {
		for _, c := range t.Columns {
			if c.Name == k {
				s.Fields = append(s.Fields, Field{Name: c.Name, Schema: c.Schema})
			}
		}
	}
	return s
}

// KeyIndexes returns the column positions of the primary key.
func (t *Table) KeyIndexes() []int {
	idx := make([]int, 0, len(t.PrimaryKey))
	for _, k := range t.PrimaryKey {
		for i, c := range t.Columns {
			if c.Name == k {
				idx = append(idx, i)
			}
		}
	}
	return idx
}
