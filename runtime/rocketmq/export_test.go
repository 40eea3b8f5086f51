package rocketmq

// Helpers of the package's tests for its external tests (package
// rocketmq_test), which may import the packages that import this one
// (runtime/rocketmq/rawbench).
var (
	ITConfig      = itConfig
	TestRecord    = testRecord
	SkipUnderRace = skipUnderRace
	Suffix        = suffix
	QuietLog      = quietLog
)
