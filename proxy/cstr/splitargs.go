package cstr

// SplitArgs splits line into arguments as Redis's sdssplitargs does
// (configuration lines, script shebangs): isspace blanks separate
// arguments; "..." quotes support the escapes \n \r \t \b \a \\ \" and \xHH
// (any other escaped byte stands for itself); '...' quotes support only \'.
// A closing quote must be followed by a blank or the end of the line. ok is
// false for a line sdssplitargs rejects (unbalanced quotes, a closing quote
// followed by another byte). A blank line gives no arguments. The whole of
// line is read: a NUL byte is an ordinary byte (callers that read the line
// as a C string cut it first with CString).
func SplitArgs(line string) ([]string, bool) {
	buf := []byte(line)
	parts, ok := SplitArgsInPlace(buf, nil)
	if !ok {
		return nil, false
	}
	if len(parts) == 0 {
		return nil, true
	}
	args := make([]string, len(parts))
	for i, p := range parts {
		args[i] = string(p)
	}
	return args, true
}

// SplitArgsInPlace is SplitArgs on a byte slice, unescaping in place: each
// argument is written over line (it is at most as long as its source) and
// appended to args as a subslice of line with its capacity capped, so that
// nothing is allocated beyond growing args. It returns the extended args and
// whether the line was balanced (when not, args holds whatever was split
// before the error and line is partly overwritten). Redis's inline command
// reader uses it on a request line.
func SplitArgsInPlace(line []byte, args [][]byte) ([][]byte, bool) {
	p, out := 0, 0 // read and write positions, out <= p
	for {
		for p < len(line) && IsSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return args, true
		}
		begin := out
		inq, insq, done := false, false, false
		for !done {
			end := p >= len(line) // the C string's terminator
			var c byte
			if !end {
				c = line[p]
			}
			switch {
			case inq:
				switch {
				case end:
					return args, false
				case c == '\\' && p+3 < len(line) && line[p+1] == 'x' && IsXDigit(line[p+2]) && IsXDigit(line[p+3]):
					line[out] = hexVal(line[p+2])<<4 | hexVal(line[p+3])
					out++
					p += 3
				case c == '\\' && p+1 < len(line):
					p++
					e := line[p]
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					line[out] = e
					out++
				case c == '"':
					// A closing quote must be followed by a space or the end.
					if p+1 < len(line) && !IsSpace(line[p+1]) {
						return args, false
					}
					done = true
				default:
					line[out] = c
					out++
				}
			case insq:
				switch {
				case end:
					return args, false
				case c == '\\' && p+1 < len(line) && line[p+1] == '\'':
					p++
					line[out] = '\''
					out++
				case c == '\'':
					if p+1 < len(line) && !IsSpace(line[p+1]) {
						return args, false
					}
					done = true
				default:
					line[out] = c
					out++
				}
			case end:
				done = true
			default:
				switch c {
				case ' ', '\n', '\r', '\t':
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					line[out] = c
					out++
				}
			}
			if p < len(line) {
				p++
			}
		}
		args = append(args, line[begin:out:out])
	}
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c|0x20 <= 'f':
		return c | 0x20 - 'a' + 10
	}
	return 0
}

// AppendRepr appends s quoted as Redis's sdscatrepr quotes it: in double
// quotes, with \\ \" \n \r \t \a \b escapes and \xHH for the other bytes
// outside printable ASCII. SplitArgs reads it back as s.
func AppendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range s {
		switch c {
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
	return append(b, '"')
}
