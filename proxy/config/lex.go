package config

import (
	"errors"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
)

// errUnbalancedQuotes is Redis's wording for a line splitArgs cannot split.
var errUnbalancedQuotes = errors.New("Unbalanced quotes in configuration line")

// splitArgs splits a configuration line into arguments as Redis's
// sdssplitargs does (cstr.SplitArgs), with Redis's error for a line it
// cannot split.
func splitArgs(line string) ([]string, error) {
	args, ok := cstr.SplitArgs(line)
	if !ok {
		return nil, errUnbalancedQuotes
	}
	return args, nil
}

// repr quotes s as Redis's sdscatrepr does (cstr.AppendRepr).
func repr(s string) string { return string(cstr.AppendRepr(make([]byte, 0, len(s)+2), []byte(s))) }

// bareOrRepr returns s unquoted when splitArgs would read it back as one
// argument unchanged, else repr(s).
func bareOrRepr(s string) string {
	if s == "" {
		return `""`
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if cstr.IsSpace(c) || c == '"' || c == '\'' || c < 0x20 || c >= 0x7f {
			return repr(s)
		}
	}
	return s
}

// directiveString renders a directive as Redis shows it in a config error:
// the name followed by each argument quoted.
func directiveString(name string, args []string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(repr(a))
	}
	return b.String()
}
