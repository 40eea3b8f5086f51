package rocketmq

import "github.com/sluicecdc/sluice/converter"

// defaultCodec is the Debezium-compatible JSON converter with schemas.
func defaultCodec() Codec { return converter.NewJSON(converter.Options{Schemas: true}) }

var (
	_ Codec        = (*converter.JSON)(nil)
	_ partsDecoder = (*converter.JSON)(nil) // compact messages decode without rebuilt envelopes
)
