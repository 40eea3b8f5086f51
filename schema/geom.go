package schema

import "encoding/binary"

// Geom is the value of a Geometry column: the geometry's WKB and the SRID
// the source stored with it (0: none, which Debezium writes as a null
// srid). MySQL and MariaDB store a geometry as a 4-byte little-endian SRID
// followed by the WKB (ParseMySQLGeometry).
type Geom struct {
	WKB  []byte
	SRID uint32
}

// ParseMySQLGeometry splits the server's form of a geometry, the SRID then
// the WKB, copying the WKB; ok is false for fewer than 4 bytes.
func ParseMySQLGeometry(b []byte) (Geom, bool) {
	if len(b) < 4 {
		return Geom{}, false
	}
	return Geom{WKB: append([]byte{}, b[4:]...), SRID: binary.LittleEndian.Uint32(b)}, true
}
