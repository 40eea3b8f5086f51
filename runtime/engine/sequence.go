package engine

import "encoding/json"

// Record identity is the source's (schema.Record.ID, set where records are
// made): the pipeline saves the source's own position and hands records on
// as they are, and a replay from a saved position gives every record the ID
// it had before.
//
// Earlier versions numbered records here and saved the number beside the
// source position, as {"sluice_position":1,"source":"…","seq":…}. Such a
// stored position still loads: its source position is used, its number is
// not (sinks order records by ID now).

type savedPosition struct {
	Version int    `json:"sluice_position"`
	Source  string `json:"source"`
}

// SourcePosition returns the source's own position from stored bytes: the
// bytes themselves, or the source part of a position saved by an earlier
// version.
func SourcePosition(stored []byte) []byte {
	var s savedPosition
	if len(stored) > 0 && stored[0] == '{' && json.Unmarshal(stored, &s) == nil && s.Version == 1 {
		return []byte(s.Source)
	}
	return stored
}
