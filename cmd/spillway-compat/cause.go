package main

import (
	"regexp"
	"strings"
)

// The grouping of failures "by cause" is a pattern match on the first line
// of the suite's message about each failing test, nothing deeper: the
// first rule that matches names the group. An assertion that compares a
// reply with what Redis gives is grouped by the error the reply carried
// when it carried one (unknown command, WRONGTYPE...), else as a value
// mismatch.
var causeRules = []struct {
	re   *regexp.Regexp
	name func(m []string) string
}{
	{regexp.MustCompile(`(?i)unknown command '([^']*)'`), func(m []string) string { return "unknown command " + strings.ToUpper(m[1]) }},
	{regexp.MustCompile(`(?i)unknown subcommand '([^']*)'\. Try ([A-Za-z-]+) HELP`), func(m []string) string {
		return "unknown subcommand " + strings.ToUpper(m[2]) + " " + strings.ToUpper(m[1])
	}},
	{regexp.MustCompile(`(?i)unknown subcommand '([^']*)'`), func(m []string) string { return "unknown subcommand " + strings.ToUpper(m[1]) }},
	{regexp.MustCompile(`(?i)Unsupported CONFIG parameter: ?([^\s'"]+)`), func(m []string) string { return "unsupported CONFIG parameter " + m[1] }},
	{regexp.MustCompile(`(?i)Unknown option or number of arguments for CONFIG SET - '([^']*)'`), func(m []string) string { return "unsupported CONFIG parameter " + m[1] }},
	{regexp.MustCompile(`WRONGTYPE`), func([]string) string { return "WRONGTYPE reply" }},
	{regexp.MustCompile(`(?i)I/O error reading reply|connection (reset|refused)|broken pipe|error writing`), func([]string) string { return "connection lost" }},
	{regexp.MustCompile(`(?i)^timed out|wait_for_condition|timeout`), func([]string) string { return "timed out waiting for a condition" }},
	{regexp.MustCompile(`(?i)ERR syntax error`), func([]string) string { return "ERR syntax error" }},
	{regexp.MustCompile(`^(assertion:)?Expected\b`), func([]string) string { return "assertion: reply differs from Redis's" }},
	{regexp.MustCompile(`(?i)assertion:`), func([]string) string { return "assertion: reply differs from Redis's" }},
	{regexp.MustCompile(`^(ERR|NOSCRIPT|BUSY|NOPERM|WRONGPASS|NOAUTH|EXECABORT|READONLY|OOM|LOADING|NOTBUSY)\b[^'":(]*`), func(m []string) string { return "error reply: " + strings.TrimSpace(m[0]) }},
}

// actualRes find the reply the suite got in its assertion messages
// (tests/support/test.tcl): the rules look at that part only, so a wanted
// WRONGTYPE is not taken for the cause. A test's expected result comes
// first in "Expected 'want' to equal or match 'got'", last elsewhere.
var actualRes = []*regexp.Regexp{
	regexp.MustCompile(`^(?:assertion:)?Expected '.*' to equal or match '(.*)'`),
	regexp.MustCompile(`^(?:assertion:)?Expected an error matching '.*' but got '(.*)'`),
	regexp.MustCompile(`^(?:assertion:)?Expected '(.*)' (?:to (?:be|match|not match)|not equal) `),
}

// Cause names the group a failure message belongs to.
func Cause(msg string) string {
	for _, re := range actualRes {
		if m := re.FindStringSubmatch(msg); m != nil {
			if c := Cause(m[1]); !strings.HasPrefix(c, "other:") {
				return c
			}
			return "assertion: reply differs from Redis's"
		}
	}
	for _, r := range causeRules {
		if m := r.re.FindStringSubmatch(msg); m != nil {
			return r.name(m)
		}
	}
	msg = strings.TrimSpace(msg)
	if i := strings.Index(msg, " (context:"); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 60 {
		msg = msg[:60] + "..."
	}
	if msg == "" {
		return "other: no message"
	}
	return "other: " + msg
}

// unitCause is the group of a unit that did not finish, for the tests it
// never reached.
func unitCause(st Status, r Result) string {
	switch st {
	case StatusTimeout:
		return "unit timed out (wall-clock cap)"
	case StatusAborted:
		if r.Exception != "" {
			return "unit aborted: " + Cause(r.Exception)
		}
		return "unit aborted: suite exited without finishing"
	}
	return ""
}
