package schema

import "unsafe"

// Size estimates the bytes of memory that r holds: the record itself, its
// row images, key, position, headers, transaction and schema-change text.
// Schemas are left out (every record of a table shares them). It is what
// in-flight limits in bytes count: an estimate, not an exact measure, that
// grows with the record's payload (a 1 MiB text value counts about 1 MiB).
func (r *Record) Size() int {
	n := int(unsafe.Sizeof(*r))
	n += rowSize(r.Key) + rowSize(r.Before) + rowSize(r.After)
	s := &r.Source
	n += len(s.Version) + len(s.Connector) + len(s.Name) + len(s.Snapshot) + len(s.GTID) + len(s.File) + len(s.Query)
	if r.Transaction != nil {
		n += int(unsafe.Sizeof(*r.Transaction)) + len(r.Transaction.ID)
	}
	n += len(r.Position)
	for k, v := range r.Headers {
		n += len(k) + len(v) + 32
	}
	if r.Change != nil {
		n += int(unsafe.Sizeof(*r.Change)) + len(r.Change.DDL) + 256*len(r.Change.Tables)
	}
	if r.Delivery != nil {
		n += int(unsafe.Sizeof(*r.Delivery)) + len(r.Delivery.Topic) + len(r.Delivery.Broker)
	}
	return n
}

// RecordsSize is the sum of Size over recs.
func RecordsSize(recs []Record) int {
	n := 0
	for i := range recs {
		n += recs[i].Size()
	}
	return n
}

// rowSize estimates a row image: an interface per value plus what the
// value points to.
func rowSize(row Row) int {
	if row == nil {
		return 0
	}
	n := 16 * len(row)
	for _, v := range row {
		n += valueSize(v)
	}
	return n
}

func valueSize(v any) int {
	switch x := v.(type) {
	case nil, bool:
		return 0
	case string:
		return 16 + len(x)
	case []byte:
		return 24 + len(x)
	case Geom:
		return 32 + len(x.WKB)
	case Dec:
		n := 32 // the boxed Dec
		if x.Unscaled != nil {
			n += 32 + 8*len(x.Unscaled.Bits())
		}
		return n
	case []any:
		return 24 + rowSize(x)
	case []string:
		n := 24
		for _, s := range x {
			n += 16 + len(s)
		}
		return n
	}
	return 16 // a boxed number or time
}
