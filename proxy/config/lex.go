package config

import (
	"errors"
	"strings"
)

// errUnbalancedQuotes is Redis's wording for a line splitArgs cannot split.
var errUnbalancedQuotes = errors.New("Unbalanced quotes in configuration line")

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// splitArgs splits a configuration line into arguments as Redis's
// sdssplitargs does: blanks separate arguments; "..." quotes support the
// escapes \n \r \t \b \a \\ \" and \xHH; '...' quotes support only \'. A
// closing quote must be followed by a blank or the end of the line.
func splitArgs(line string) ([]string, error) {
	var args []string
	i, n := 0, len(line)
	for {
		for i < n && isSpace(line[i]) {
			i++
		}
		if i >= n {
			return args, nil
		}
		var cur strings.Builder
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case inDouble:
				if i >= n {
					return nil, errUnbalancedQuotes
				}
				c := line[i]
				if c == '\\' && i+3 < n && line[i+1] == 'x' {
					hi, ok1 := hexVal(line[i+2])
					lo, ok2 := hexVal(line[i+3])
					if ok1 && ok2 {
						cur.WriteByte(hi<<4 | lo)
						i += 4
						continue
					}
				}
				switch {
				case c == '\\' && i+1 < n:
					i++
					switch e := line[i]; e {
					case 'n':
						cur.WriteByte('\n')
					case 'r':
						cur.WriteByte('\r')
					case 't':
						cur.WriteByte('\t')
					case 'b':
						cur.WriteByte('\b')
					case 'a':
						cur.WriteByte('\a')
					default:
						cur.WriteByte(e)
					}
				case c == '"':
					if i+1 < n && !isSpace(line[i+1]) {
						return nil, errUnbalancedQuotes
					}
					done = true
				default:
					cur.WriteByte(c)
				}
				i++
			case inSingle:
				if i >= n {
					return nil, errUnbalancedQuotes
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < n && line[i+1] == '\'':
					i++
					cur.WriteByte('\'')
				case c == '\'':
					if i+1 < n && !isSpace(line[i+1]) {
						return nil, errUnbalancedQuotes
					}
					done = true
				default:
					cur.WriteByte(c)
				}
				i++
			default:
				if i >= n {
					done = true
					break
				}
				switch c := line[i]; c {
				case ' ', '\n', '\r', '\t':
					done = true
				case '"':
					inDouble = true
				case '\'':
					inSingle = true
				default:
					cur.WriteByte(c)
				}
				i++
			}
		}
		args = append(args, cur.String())
	}
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
		if isSpace(c) || c == '"' || c == '\'' || c < 0x20 || c >= 0x7f {
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
