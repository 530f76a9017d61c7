//go:build !race

package commands_test

// raceEnabled: the race detector is on.
const raceEnabled = false
