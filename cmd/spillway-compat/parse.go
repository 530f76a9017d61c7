package main

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

// Status is how a unit's run ended.
type Status string

const (
	StatusOK       Status = "ok"       // the unit finished and every test passed
	StatusFailures Status = "failures" // the unit finished with failing tests
	StatusAborted  Status = "aborted"  // the suite stopped early: an exception, a crash, no "done"
	StatusTimeout  Status = "timeout"  // the wall-clock cap (or the suite's own timeout) stopped it
	StatusNA       Status = "n/a"      // no test of the unit runs on an external server
	StatusError    Status = "error"    // the harness failed (server did not start, runtest missing)
)

// Failure is one failing test: its name and the first line of the
// suite's message about it.
type Failure struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// Result is what the suite's output says about one unit on one target.
type Result struct {
	Passed        int       `json:"passed"`
	Failed        int       `json:"failed"`
	Skipped       int       `json:"skipped"`
	Failures      []Failure `json:"failures,omitempty"`
	Done          bool      `json:"done"`       // the suite printed "[n/m done]: unit"
	AllPassed     bool      `json:"all_passed"` // "All tests passed without errors!"
	Exception     string    `json:"exception,omitempty"`
	SuiteTimeout  bool      `json:"suite_timeout,omitempty"`
	ExternalSkips int       `json:"external_skips"` // server blocks skipped as "Not supported on external server"
	LastPassed    string    `json:"last_passed,omitempty"`
}

var (
	ansiRe = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	// statusRe matches the suite's progress lines: "[ok]: name (3 ms)",
	// "[err]: name in tests/unit/x.tcl", "[ignore]: ...", "[skip]: ...",
	// "[exception]: ...", "[1/1 done]: unit/x (2 seconds)", "[TIMEOUT]: ...".
	statusRe = regexp.MustCompile(`^\[(ok|err|ignore|skip|exception|TIMEOUT|ready|\d+/\d+ done)\]: ?(.*)$`)
	okTimeRe = regexp.MustCompile(`^(.*) \(\d+ ms\)$`)
)

const externalSkip = "Not supported on external server"

// blockError names a failure outside any test.
const blockError = "(server block: error outside a test)"

// Parse reads the output of one `runtest --single unit` run. The listing
// of failed tests after "The End" repeats the [err] lines with a "*** "
// prefix and is not counted again.
func Parse(r io.Reader) Result {
	var res Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var pending *Failure // an [err] whose message is on the next lines
	// Under --durable the suite cuts the first ten characters of an error
	// that is not an assertion (as if they were "assertion:") and follows
	// it with the Tcl stack, whose first line is the whole error: last is
	// the failure whose message that line may complete.
	var last *Failure
	inException := false
	ended := false
	for sc.Scan() {
		line := strings.TrimRight(ansiRe.ReplaceAllString(sc.Text(), ""), "\r")
		if strings.Contains(line, "All tests passed without errors!") {
			res.AllPassed = true
			continue
		}
		if strings.TrimSpace(line) == "The End" {
			ended = true
			continue
		}
		if ended {
			continue
		}
		m := statusRe.FindStringSubmatch(line)
		if m == nil {
			t := strings.TrimSpace(line)
			if last != nil && t != "" {
				if msg := last.Message; msg != "" && len(t) > len(msg) && strings.HasSuffix(t, msg) {
					last.Message = t
				}
				last = nil
				continue
			}
			if pending != nil && t != "" {
				pending.Message = t
				res.Failures = append(res.Failures, *pending)
				last = &res.Failures[len(res.Failures)-1]
				pending = nil
			} else if inException && res.Exception != "" && !strings.Contains(res.Exception, "\n") && strings.TrimSpace(line) != "" {
				// "Executing test client: <error>." is followed by the Tcl
				// stack; keep its first line too, it names the command.
				res.Exception += "\n" + strings.TrimSpace(line)
			}
			continue
		}
		if pending != nil {
			res.Failures = append(res.Failures, *pending)
			pending = nil
		}
		last = nil
		inException = false
		kind, data := m[1], m[2]
		switch {
		case kind == "ok":
			res.Passed++
			if t := okTimeRe.FindStringSubmatch(data); t != nil {
				data = t[1]
			}
			res.LastPassed = data
		case kind == "err":
			res.Failed++
			name := data
			if i := strings.LastIndex(name, " in tests/"); i >= 0 {
				pending = &Failure{Name: name[:i]}
				break
			}
			// Under --durable, an error in a server block's code outside
			// any test is reported with no test name: the message (less
			// its first ten characters, which the suite cuts as if they
			// were "assertion:") and the Tcl stack.
			res.Failures = append(res.Failures, Failure{Name: blockError, Message: strings.TrimSpace(data)})
			last = &res.Failures[len(res.Failures)-1]
		case kind == "ignore" || kind == "skip":
			if kind == "ignore" && data == externalSkip {
				res.ExternalSkips++
				continue
			}
			res.Skipped++
		case kind == "exception":
			res.Exception = strings.TrimSpace(data)
			inException = true
		case kind == "TIMEOUT":
			res.SuiteTimeout = true
		case strings.HasSuffix(kind, " done"):
			res.Done = true
		}
	}
	if pending != nil {
		res.Failures = append(res.Failures, *pending)
	}
	return res
}

// Classify gives a unit's status from its parsed output and whether the
// harness's wall-clock cap killed it.
func Classify(r Result, killed bool) Status {
	switch {
	case killed || r.SuiteTimeout:
		return StatusTimeout
	case r.Exception != "" || !r.Done:
		return StatusAborted
	case r.Passed+r.Failed+r.Skipped == 0 && r.ExternalSkips > 0:
		return StatusNA
	case r.Failed > 0:
		return StatusFailures
	}
	return StatusOK
}
