package runtime

import (
	"encoding/json"
	"time"
)

// Saved positions carry a record sequence beside the source position. The
// pipeline numbers every record it reads; because reading again from a saved
// position yields the same records in the same order, a replay after a crash
// gives each record the number it had before. The embedded transport hands
// that number to the sink as the delivery offset, so the sink (which skips
// offsets at or below what it committed per queue) never re-applies a change
// it already applied: no row goes back to an older version.
//
// A position without a sequence (one set by hand, or saved before sequences
// existed) and a change of the source's configuration (its fingerprint)
// start a fresh sequence from the clock, which is above every number used
// before, so nothing is ever skipped wrongly.

// EmbeddedTopic is the Delivery.Topic of records on the embedded transport.
const EmbeddedTopic = "embedded"

type savedPosition struct {
	Version     int    `json:"sluice_position"`
	Source      string `json:"source"`
	Seq         int64  `json:"seq"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

func encodeSaved(source []byte, seq int64, fingerprint string) []byte {
	b, _ := json.Marshal(savedPosition{Version: 1, Source: string(source), Seq: seq, Fingerprint: fingerprint})
	return b
}

// decodeSaved splits stored bytes into the source position and the sequence
// to continue from; ok is false when the sequence cannot be trusted.
func decodeSaved(b []byte, fingerprint string) (source []byte, seq int64, ok bool) {
	var s savedPosition
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &s) == nil && s.Version == 1 {
		return []byte(s.Source), s.Seq, s.Fingerprint == fingerprint
	}
	return b, 0, false
}

// SourcePosition returns the source's own position from stored bytes, for
// display and for the offsets API.
func SourcePosition(stored []byte) []byte {
	src, _, _ := decodeSaved(stored, "")
	return src
}

func freshSeq() int64 { return time.Now().UnixNano() }
