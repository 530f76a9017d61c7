package latency

import (
	"fmt"
	"strings"
	"testing"
)

// redisSamples are four "command" samples a redis-server 7.0.15 recorded
// (DEBUG SLEEP 0.005, 0.02, 0.012, 0.003 a second apart, threshold 1 ms);
// redisNow is its TIME when it was asked for the graph and the report
// below.
var redisSamples = []Sample{{1795668343, 5}, {1795668344, 20}, {1795668345, 12}, {1795668346, 3}}

const redisNow = 1795668346

func redisMonitor() *Monitor {
	m := New()
	m.SetThreshold(1)
	for _, s := range redisSamples {
		m.Add("command", s.Latency, s.Time)
	}
	return m
}

// LATENCY GRAPH command, as that redis-server drew it.
const redisGraph = "command - high 20 ms, low 3 ms (all time high 20 ms)\n" +
	"--------------------------------------------------------------------------------\n" +
	" #  \n" +
	" |_ \n" +
	" || \n" +
	"o||_\n" +
	"    \n" +
	"3210\n" +
	"ssss\n"

func TestGraphMatchesRedis(t *testing.T) {
	got, ok := redisMonitor().Graph("command", redisNow)
	if !ok || got != redisGraph {
		t.Errorf("graph (%v):\n%s\nredis-server's:\n%s", ok, got, redisGraph)
	}
	if _, ok := redisMonitor().Graph("Command", redisNow); ok {
		t.Error("a graph for an event name in another case")
	}
}

// LATENCY DOCTOR, as that redis-server reported it (slowlog-log-slower-than
// 10000, hz 10, no transparent huge pages).
const redisDoctor = "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n" +
	"\n" +
	"1. command: 4 latency spikes (average 10ms, mean deviation 6ms, period 0.75 sec). Worst all time event 20ms.\n" +
	"\n" +
	"I have a few advices for you:\n" +
	"\n" +
	"- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 1000'.\n" +
	"- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n" +
	"- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n"

func TestDoctorMatchesRedis(t *testing.T) {
	got := redisMonitor().Doctor(DoctorInput{Now: redisNow, SlowlogSlowerThan: 10000, Hz: 10})
	if got != redisDoctor {
		t.Errorf("doctor:\n%s\nredis-server's:\n%s", got, redisDoctor)
	}
}

// The doctor's other cases: monitoring off with nothing recorded, on with
// nothing recorded, and an event that calls for no advice.
func TestDoctorNoEvents(t *testing.T) {
	m := New()
	if got := m.Doctor(DoctorInput{Hz: 10}); !strings.HasPrefix(got, "I'm sorry, Dave, I can't do that.") {
		t.Errorf("off: %q", got)
	}
	m.SetThreshold(100)
	if got := m.Doctor(DoctorInput{Hz: 10}); !strings.HasPrefix(got, "Dave, no latency spike was observed") {
		t.Errorf("on, nothing recorded: %q", got)
	}
	m.Add("other", 150, 10)
	got := m.Doctor(DoctorInput{Now: 10, Hz: 10})
	want := "1. other: 1 latency spikes (average 150ms, mean deviation 0ms, period 1.00 sec). Worst all time event 150ms.\n" +
		"\nWhile there are latency events logged, I'm not able to suggest any easy fix."
	if !strings.Contains(got, want) {
		t.Errorf("no advice: %q", got)
	}
	m.Add("expire-cycle", 150, 10)
	got = m.Doctor(DoctorInput{Now: 10, Hz: 10, SlowlogSlowerThan: -1})
	for _, want := range []string{"try to set the 'hz' configuration parameter to 100", "Deleting, expiring or evicting"} {
		if !strings.Contains(got, want) {
			t.Errorf("expire-cycle: no %q in %q", want, got)
		}
	}
}

// Samples: one per second, the highest of that second kept; 160 at most,
// oldest first; the maximum kept across them; LATEST per event by name;
// RESET by name in any case.
func TestSamples(t *testing.T) {
	m := New()
	if m.Over(1 << 40) {
		t.Fatal("a monitor at threshold 0 records")
	}
	m.SetThreshold(5)
	if m.Over(4) || !m.Over(5) || m.Threshold() != 5 {
		t.Fatal("threshold 5")
	}
	m.Add("command", 7, 100)
	m.Add("command", 9, 100)
	m.Add("command", 8, 100)
	if got := fmt.Sprint(m.History("command")); got != "[{100 9}]" {
		t.Errorf("one second's samples: %s", got)
	}
	for i := int64(1); i <= 200; i++ {
		m.Add("command", 5+i%7, 100+i)
	}
	h := m.History("command")
	if len(h) != HistoryLen || h[0].Time != 141 || h[HistoryLen-1].Time != 300 {
		t.Errorf("history: %d samples, %v .. %v", len(h), h[0], h[len(h)-1])
	}
	m.Add("fast-command", 6, 300)
	latest := m.Latest()
	if got := fmt.Sprint(latest); got != "[{command 300 9 11} {fast-command 300 6 6}]" {
		t.Errorf("latest: %s", got)
	}
	if n := m.Reset("COMMAND", "nosuch"); n != 1 || m.History("command") != nil {
		t.Errorf("reset COMMAND: %d", n)
	}
	if n := m.Reset(); n != 1 || len(m.Latest()) != 0 {
		t.Errorf("reset all: %d", n)
	}
	m.SetThreshold(0)
	if m.Over(1<<40) || m.Threshold() != 0 {
		t.Error("threshold 0 is off")
	}
}

// A graph of more than 80 samples is drawn as one chart per 80, separated
// by an empty line; labels older than a minute count minutes, then hours
// and days.
func TestGraphWraps(t *testing.T) {
	m := New()
	m.SetThreshold(1)
	for i := int64(0); i < 100; i++ {
		m.Add("e", 1+i%3, 1000+i)
	}
	g, _ := m.Graph("e", 1000+99)
	lines := strings.Split(g, "\n")
	if len(lines[2]) != 80 || !strings.Contains(g, "\n\n") {
		t.Fatalf("graph:\n%s", g)
	}
	for sec, want := range map[int64]string{59: "59s", 60: "1m", 3599: "59m", 3600: "1h", 86400: "1d"} {
		if got := ago(sec); got != want {
			t.Errorf("ago(%d) = %s, want %s", sec, got, want)
		}
	}
}
