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

// repr quotes s as Redis's sdscatrepr does: always in double quotes, with
// \\ \" \n \r \t \a \b escapes and \xHH for other non-printable bytes.
func repr(s string) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if c >= 0x20 && c < 0x7f {
				b = append(b, c)
			} else {
				b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
			}
		}
	}
	return string(append(b, '"'))
}

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
