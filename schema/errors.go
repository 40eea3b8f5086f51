package schema

import (
	"errors"
	"fmt"
	"strings"
)

// Class is what the runtime does with an error. Every connector classifies
// an error once, where it is created, with Fatal, Retriable or
// ErrEndOfInput; the runtime reads the class with ClassOf and nothing else.
//
//   - ClassRetriable: the task is rebuilt after a bounded, growing backoff
//     (a server down, a connection reset, a lock timeout).
//   - ClassFatal: retrying cannot help; the task stops as FAILED and the
//     message says what to change (bad config, purged position, a row the
//     target refuses under on_error: fail).
//   - ClassEndOfInput: the source has nothing more to give (an initial_only
//     snapshot finished); the task drains, records its position and stops
//     cleanly.
type Class uint8

// Error classes. The zero value, ClassUnknown, is an error no connector
// classified; the runtime treats it as retriable.
const (
	ClassUnknown Class = iota
	ClassRetriable
	ClassFatal
	ClassEndOfInput
)

var classText = [...]string{"unknown", "retriable", "fatal", "end_of_input"}

func (c Class) String() string {
	if int(c) < len(classText) {
		return classText[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// ErrEndOfInput is returned by a source's Read when its input is complete.
// Wrap it to say why: fmt.Errorf("snapshot complete: %w", ErrEndOfInput).
var ErrEndOfInput = errors.New("end of input")

// ErrConfig is the one configuration error: every configuration error,
// whichever package makes it, wraps it (errors.Is(err, ErrConfig)). It is
// fatal: retrying the same configuration cannot help, so the task stops as
// FAILED and `sluice` exits with code 2.
var ErrConfig = Fatal(errors.New("invalid configuration"))

// ConfigError returns a package's configuration sentinel: an error whose
// message is text (the package's prefix, "binlog: invalid config") and
// which wraps ErrConfig, so it and every error wrapping it match ErrConfig
// and are fatal, classified by ErrConfig's own mark. Each package's
// sentinel matches itself and ErrConfig, not another package's. Wrap it to
// say which key is wrong and how to fix it.
func ConfigError(text string) error { return &configError{text} }

type configError struct{ text string }

func (e *configError) Error() string { return e.text }
func (e *configError) Unwrap() error { return ErrConfig }

type classified struct {
	err   error
	class Class
}

func (c *classified) Error() string { return c.err.Error() }
func (c *classified) Unwrap() error { return c.err }

// Fatal marks err as not retriable. It returns nil for nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err, ClassFatal}
}

// Retriable marks err as worth retrying after a backoff. It returns nil for nil.
func Retriable(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err, ClassRetriable}
}

// ClassOf returns the class of err: the outermost mark set by Fatal or
// Retriable in its chain (a wrapper may reclassify what it wraps), else
// ClassEndOfInput when the chain holds ErrEndOfInput, else ClassUnknown.
// Nothing else is read: a driver's own notion of "fatal" (lib/pq's
// *Error has a Fatal method meaning severity FATAL, a terminated
// connection) is not the contract's, so connectors classify driver errors
// where they meet them. ClassOf(nil) is ClassUnknown.
func ClassOf(err error) Class {
	if err == nil {
		return ClassUnknown
	}
	var c *classified
	if errors.As(err, &c) {
		return c.class
	}
	if errors.Is(err, ErrEndOfInput) {
		return ClassEndOfInput
	}
	return ClassUnknown
}

// Wrapf returns err behind "prefix: " and format's text (none when format
// is empty), saying prefix once: when err's text starts with "prefix: "
// already (an error of the same package, passed up), that prefix is left
// out of the message, so "rocketmq: offsets of t: rocketmq: the broker
// refused" reads "rocketmq: offsets of t: the broker refused". errors.Is,
// errors.As and ClassOf see err as through %w.
func Wrapf(prefix string, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	msg := prefix + ": "
	if format != "" {
		msg += fmt.Sprintf(format, args...) + ": "
	}
	inner, _ := strings.CutPrefix(err.Error(), prefix+": ")
	return &wrapped{msg + inner, err}
}

type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }
