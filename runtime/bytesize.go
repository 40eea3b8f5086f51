package runtime

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes as config files write it: a number of bytes
// or a number with a unit (KiB, MiB, GiB; KB, MB, GB are read as the same
// powers of 1024), or "off" (-1) where a limit can be switched off.
type ByteSize int64

// DefaultMemoryLimit is the Go memory limit of a sluice process when the
// config and GOMEMLIMIT say nothing: with the default in-flight limits the
// live heap stays below it (measured: about 60 MiB on the embedded
// transport, 110 MiB with both RocketMQ sides in one process), and the
// collector holds the total (heap, stacks, runtime) under it, so the
// process's peak RSS, with its ~25 MiB of code, stays under 200 MiB.
const DefaultMemoryLimit ByteSize = 150 << 20

var sizeUnits = []struct {
	suffix string
	mul    int64
}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}}

// ParseByteSize reads "16MiB", "512 KiB", "1048576" or "off".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "off" {
		return -1, nil
	}
	mul := int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mul = strings.TrimSpace(rest), u.mul
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 || n*float64(mul) > 1<<62 {
		return 0, fmt.Errorf("%q is not a size (write 16MiB, 512KiB or a number of bytes)", s)
	}
	return ByteSize(n * float64(mul)), nil
}

func (b ByteSize) String() string {
	switch {
	case b < 0:
		return "off"
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return strconv.FormatInt(int64(b), 10)
}

// ApplyMemoryLimit sets the process's Go memory limit from a config's
// memory_limit (0: DefaultMemoryLimit; negative: none), unless GOMEMLIMIT
// is set in the environment (the runtime has applied that itself). It
// returns the limit in force, negative for none.
func ApplyMemoryLimit(limit ByteSize, env func(string) string) ByteSize {
	if env("GOMEMLIMIT") != "" {
		return ByteSize(debug.SetMemoryLimit(-1))
	}
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	if limit < 0 {
		debug.SetMemoryLimit(1<<63 - 1)
		return -1
	}
	debug.SetMemoryLimit(int64(limit))
	return limit
}

// Defaults of a pipeline's in-flight window (engine.Pipeline's
// MaxInFlight and MaxInFlightBytes), which transports size their own by.
const (
	DefaultMaxInFlight      = 8192
	DefaultMaxInFlightBytes = 16 << 20
)
