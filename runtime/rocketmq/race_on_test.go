//go:build race

package rocketmq

const raceEnabled = true
