package strops

import "strings"

// SplitArgs splits line into arguments as Redis's sdssplitargs does
// (configuration lines, script shebangs): blanks separate arguments; "..." quotes support the
// escapes \n \r \t \b \a \\ \" and \xHH; '...' quotes support only \'. A
// closing quote must be followed by a blank or the end of the line. ok is false for a line sdssplitargs
// rejects (unbalanced quotes).
func SplitArgs(line string) ([]string, bool) {
	var args []string
	i, n := 0, len(line)
	for {
		for i < n && isSplitSpace(line[i]) {
			i++
		}
		if i >= n {
			return args, true
		}
		var cur strings.Builder
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case inDouble:
				if i >= n {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+3 < n && line[i+1] == 'x' {
					hi, ok1 := splitHexVal(line[i+2])
					lo, ok2 := splitHexVal(line[i+3])
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
					if i+1 < n && !isSplitSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur.WriteByte(c)
				}
				i++
			case inSingle:
				if i >= n {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < n && line[i+1] == '\'':
					i++
					cur.WriteByte('\'')
				case c == '\'':
					if i+1 < n && !isSplitSpace(line[i+1]) {
						return nil, false
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

func isSplitSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func splitHexVal(c byte) (byte, bool) {
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
