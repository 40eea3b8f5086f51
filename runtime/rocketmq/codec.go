package rocketmq

// defaultCodec is the JSON converter with schemas. TODO(swap): the converter
// package is being written; until it lands Config.Codec must be set.
func defaultCodec() Codec { return nil }
