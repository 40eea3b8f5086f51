package rocketmq

import (
	"errors"

	"github.com/sluicecdc/sluice/schema"
)

// Errors callers may test with errors.Is.
var (
	// ErrClosed is returned by Publish after Close.
	ErrClosed = errors.New("rocketmq: publisher closed")
	// ErrTopicCollision means two source tables (or databases) map to the same
	// topic name; rename one or choose another TopicMode/TopicPrefix.
	ErrTopicCollision = errors.New("rocketmq: topic name collision")
	// ErrConfig is wrapped by every configuration error. It is fatal
	// (schema.ConfigError): a restart cannot fix the config.
	ErrConfig = schema.ConfigError("rocketmq: invalid config")
	// ErrDecode means a consumed message could not be decoded; the subscriber
	// stops instead of skipping it.
	ErrDecode = errors.New("rocketmq: cannot decode message")
	// ErrSend means the broker did not confirm a send after all retries.
	ErrSend = errors.New("rocketmq: send failed")
	// ErrOversize means a record's message is larger than
	// Config.MaxMessageBytes (see Config.OversizePolicy).
	ErrOversize = errors.New("rocketmq: record too large for a message")
	// ErrQueueSetChanged means a topic's queues are no longer those
	// recorded when a pipeline first used it (queues added or removed on a
	// broker, a broker added): keys are never hashed over another set.
	ErrQueueSetChanged = errors.New("rocketmq: topic queue set changed")
	// errUnreachable is wrapped by a send that failed because the queue's
	// broker has no live master on the name servers: the publisher waits
	// for it instead of failing (Publisher.Unreachable).
	errUnreachable = errors.New("rocketmq: broker unreachable")
)
