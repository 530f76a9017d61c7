package main

import (
	"os"
	"strings"
	"testing"
)

// The logs in testdata are the suite's real output, captured from runs of
// this harness (see each case).
func parseFile(t *testing.T, name string) Result {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Parse(f)
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		file                    string
		passed, failed, skipped int
		status                  Status
		killed                  bool
		failures                []Failure
		exception               string
	}{
		// unit/type/incr on embedded Spillway: [ok] and tag-denied [ignore].
		{file: "incr-ok.log", passed: 23, skipped: 2, status: StatusOK},
		// unit/info-command on embedded Spillway: [err] whose message spans
		// many lines, repeated after "The End" with a "*** " prefix.
		{file: "info-command-failures.log", failed: 3, status: StatusFailures, failures: []Failure{
			{"info command with at most one sub command", `Expected  [string match "*rejected_calls*" # Server`},
			{"info command with one sub-section", ""},
			{"info command with multiple sub-sections", ""},
		}},
		// unit/keyspace on embedded Spillway: an exception (unknown XADD)
		// stops the unit after 35 tests.
		{file: "keyspace-aborted.log", passed: 35, skipped: 5, status: StatusAborted,
			exception: "Executing test client: ERR unknown command 'XADD'"},
		// unit/dump on redis-server: one failure, skipped server blocks.
		{file: "dump-redis-failure.log", passed: 11, failed: 1, skipped: 15, status: StatusFailures, failures: []Failure{
			{"RESTORE fail with invalid payload size", "Expected '*Bad data format*' to equal or match 'ERR DUMP payload version or checksum are wrong'"},
		}},
		// unit/auth: every server block is external:skip.
		{file: "auth-external-skip.log", status: StatusNA},
		// The suite's listener could not bind: nothing ran.
		{file: "listener-busy.log", status: StatusAborted},
		// unit/multi on embedded Spillway under --durable: errors inside
		// tests are failures, their message cut by the suite and completed
		// from the Tcl stack's first line.
		{file: "multi-durable.log", passed: 22, failed: 27, skipped: 13, status: StatusFailures, failures: []Failure{
			{"EXEC fails if there are errors while queueing commands #2", "Expected 'OK 1 OK' to match 'EXECABORT*' (context: type eval line 13 cmd {assert_match {EXECABORT*} $e} proc ::test)"},
			{"EXEC fail on WATCHed key modified by SORT with STORE even if the result is empty", "ERR unknown command 'sort', with args beginning with: 'emptylist' 'store' 'foo'"},
		}},
		// A unit the cap killed keeps what it reported.
		{file: "keyspace-aborted.log", passed: 35, skipped: 5, status: StatusTimeout, killed: true},
	} {
		r := parseFile(t, c.file)
		if r.Passed != c.passed || r.Failed != c.failed || r.Skipped != c.skipped {
			t.Errorf("%s: %d passed, %d failed, %d skipped; want %d, %d, %d", c.file, r.Passed, r.Failed, r.Skipped, c.passed, c.failed, c.skipped)
		}
		if st := Classify(r, c.killed); st != c.status {
			t.Errorf("%s: status %s, want %s", c.file, st, c.status)
		}
		if c.failures != nil {
			if len(r.Failures) < len(c.failures) {
				t.Fatalf("%s: failures %q, want %q", c.file, r.Failures, c.failures)
			}
			for i, f := range c.failures {
				if r.Failures[i].Name != f.Name || (f.Message != "" && r.Failures[i].Message != f.Message) {
					t.Errorf("%s: failure %d is %q, want %q", c.file, i, r.Failures[i], f)
				}
			}
		}
		if !strings.HasPrefix(r.Exception, c.exception) {
			t.Errorf("%s: exception %q, want prefix %q", c.file, r.Exception, c.exception)
		}
	}
}

func TestParseColors(t *testing.T) {
	out := "\x1b[1;37;49mTesting unit/x\x1b[0m\n" +
		"[\x1b[0;32;49mok\x1b[0m]: A test (0 ms)\n" +
		"[\x1b[0;31;49merr\x1b[0m]: B test in tests/unit/x.tcl\n" +
		"Expected '1' to equal '2' (context: type eval line 2)\n" +
		"[\x1b[0;36;49mignore\x1b[0m]: C test: Tag: needs:debug denied\n" +
		"[\x1b[0;33;49mskip\x1b[0m]: D test\n" +
		"[1/1 \x1b[0;33;49mdone\x1b[0m]: unit/x (1 seconds)\n" +
		"\n                   The End\n\n" +
		"*** [err]: B test in tests/unit/x.tcl\n"
	r := Parse(strings.NewReader(out))
	if r.Passed != 1 || r.Failed != 1 || r.Skipped != 2 || !r.Done || r.LastPassed != "A test" {
		t.Fatalf("parsed %+v", r)
	}
	if Classify(r, false) != StatusFailures || Cause(r.Failures[0].Message) != "assertion: reply differs from Redis's" {
		t.Fatalf("status %s, cause %q", Classify(r, false), Cause(r.Failures[0].Message))
	}
	if Classify(Parse(strings.NewReader("[TIMEOUT]: clients state report follows.\n")), false) != StatusTimeout {
		t.Fatal("the suite's own timeout is not a timeout")
	}
}

func TestCause(t *testing.T) {
	for msg, want := range map[string]string{
		"Executing test client: ERR unknown command 'XADD', with args beginning with: 'a'":                           "unknown command XADD",
		"Expected 'ERR unknown command 'xadd', with args beginning with: ' to equal '1'":                             "unknown command XADD",
		"Expected '3' to match '*WRONGTYPE*'":                                                                        "assertion: reply differs from Redis's",
		"ERR unknown subcommand 'freq'. Try OBJECT HELP.":                                                            "unknown subcommand OBJECT FREQ",
		"Executing test client: ERR Unknown option or number of arguments for CONFIG SET - 'list-max'.":              "unsupported CONFIG parameter list-max",
		"WRONGTYPE Operation against a key holding the wrong kind of value":                                          "WRONGTYPE reply",
		"Executing test client: ERR Unknown option or number of arguments for CONFIG SET - 'x'.":                     "unsupported CONFIG parameter x",
		"Expected 'ERR *syntax*' to equal or match 'ERR unknown command 'geoadd', with args beginning with: 'nyc' '": "unknown command GEOADD",
		"Expected an error matching 'ERR*' but got 'OK' (context: type eval line 2)":                                 "assertion: reply differs from Redis's",
		"Expected '0' to be equal to '1' (context: type eval line 2)":                                                "assertion: reply differs from Redis's",
		"Expected":                "assertion: reply differs from Redis's",
		"I/O error reading reply": "connection lost",
		"ERR value is not an integer or out of range": "error reply: ERR value is not an integer or out of range",
		"can't read \"sha1\": no such variable":       "other: can't read \"sha1\": no such variable",
	} {
		if got := Cause(msg); got != want {
			t.Errorf("Cause(%q) = %q, want %q", msg, got, want)
		}
	}
}
