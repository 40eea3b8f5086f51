package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/sluicecdc/sluice/schema"
)

// DeadLetterPayload is the key and value of rec's dead letter on a broker
// transport: the codec's, as on the pipeline's topics, or, when the codec
// cannot encode rec, no key and a text naming its table, key and the
// encoding error, so that a rejected record is never lost silently.
func DeadLetterPayload(encode func(*schema.Record) ([]byte, []byte, error), rec *schema.Record) (key, val []byte) {
	key, val, err := encode(rec)
	if err != nil || len(val) == 0 {
		if err == nil {
			err = fmt.Errorf("empty value")
		}
		return nil, fmt.Appendf(nil, "sluice: %s record of %s key %q could not be encoded: %v", rec.Op, rec.Table, rec.KeyString(), err)
	}
	return key, val
}

// DeadLetterCause is the text of a dead letter's cause, at most max bytes.
func DeadLetterCause(cause error, max int) string {
	text := "unknown error"
	if cause != nil {
		text = cause.Error()
	}
	if len(text) > max {
		text = text[:max]
	}
	return text
}

// DeadLetterSummary is the value of a dead letter too large for the broker:
// what finds the row again (table, operation, key, source position) and
// the cause.
func DeadLetterSummary(rec *schema.Record, cause string) []byte {
	b, _ := json.Marshal(struct {
		Table  string        `json:"table"`
		Op     string        `json:"op"`
		Key    string        `json:"key"`
		Source schema.Source `json:"source"`
		Error  string        `json:"error"`
	}{rec.Table.String(), rec.Op.String(), rec.KeyString(), rec.Source, cause})
	return b
}
