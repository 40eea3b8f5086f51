package binlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// PositionVersion is the version of the position text form written by
// EncodePosition. ParsePosition accepts this version only.
const PositionVersion = 1

// Position is a point in the server's binlog at a transaction boundary:
// resuming there reads the next transaction first. It is typed here and
// opaque everywhere else (see EncodePosition).
type Position struct {
	Version int    `json:"v"`
	Flavor  string `json:"flavor"`         // "mariadb" or "mysql"
	GTIDSet string `json:"gtid,omitempty"` // executed GTID set; preferred for resuming
	File    string `json:"file,omitempty"` // binlog file name, used when GTIDSet is empty
	Pos     uint32 `json:"pos,omitempty"`  // offset in File
}

// String renders the position for logs and error messages.
func (p Position) String() string {
	var b strings.Builder
	if p.GTIDSet != "" {
		fmt.Fprintf(&b, "gtid=%q ", p.GTIDSet)
	}
	fmt.Fprintf(&b, "file=%s pos=%d", p.File, p.Pos)
	return b.String()
}

// EncodePosition renders p in its stable text form, a one-line JSON object
// such as {"v":1,"flavor":"mariadb","gtid":"0-1-42","file":"mysql-bin.000001","pos":1234}.
// It sets Version to PositionVersion.
func EncodePosition(p Position) []byte {
	p.Version = PositionVersion
	b, err := json.Marshal(p)
	if err != nil { // a struct of strings and ints always marshals
		panic(fmt.Sprintf("binlog: encode position: %v", err))
	}
	return b
}

// ParsePosition is the inverse of EncodePosition. It rejects unknown
// versions, unknown fields, unknown flavors and positions that name neither a
// GTID set nor a file.
func ParsePosition(b []byte) (Position, error) {
	var p Position
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Position{}, fmt.Errorf("%w: %q is not a binlog position: %v", ErrBadPosition, truncate(b, 120), err)
	}
	if dec.More() {
		return Position{}, fmt.Errorf("%w: trailing data after position %q", ErrBadPosition, truncate(b, 120))
	}
	if p.Version != PositionVersion {
		return Position{}, fmt.Errorf("%w: version %d, this build reads version %d", ErrBadPosition, p.Version, PositionVersion)
	}
	if p.Flavor != FlavorMariaDB && p.Flavor != FlavorMySQL {
		return Position{}, fmt.Errorf("%w: flavor %q, want %q or %q", ErrBadPosition, p.Flavor, FlavorMariaDB, FlavorMySQL)
	}
	if p.GTIDSet == "" && p.File == "" {
		return Position{}, fmt.Errorf("%w: neither gtid nor file is set", ErrBadPosition)
	}
	if p.GTIDSet == "" && p.Pos < 4 {
		return Position{}, fmt.Errorf("%w: pos %d in %s is before the first event (4)", ErrBadPosition, p.Pos, p.File)
	}
	return p, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
