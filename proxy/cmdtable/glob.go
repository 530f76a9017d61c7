package cmdtable

// globMatch reports whether str matches the glob pattern as Redis's
// stringmatchlen does (*, ?, [...] with ^ and ranges, backslash escapes),
// including its treatment of malformed patterns and of bytes >= 0x80 as
// signed chars in ranges.
func globMatch(pattern, str []byte, nocase bool) bool {
	skip := false
	return globImpl(pattern, str, nocase, &skip)
}

// sc returns b[i] as a C signed char, or 0 past the end (C's terminator).
func sc(b []byte, i int) int {
	if i < 0 || i >= len(b) {
		return 0
	}
	return int(int8(b[i]))
}

func lowerC(c int) int {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func globImpl(pattern, str []byte, nocase bool, skipLonger *bool) bool {
	p, s := 0, 0
	plen, slen := len(pattern), len(str)
	for plen > 0 && slen > 0 {
		switch sc(pattern, p) {
		case '*':
			for plen > 0 && sc(pattern, p+1) == '*' {
				p++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if globImpl(pattern[p+1:p+plen], str[s:s+slen], nocase, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
				s++
				slen--
			}
			*skipLonger = true
			return false
		case '?':
			s++
			slen--
		case '[':
			p++
			plen--
			not := sc(pattern, p) == '^'
			if not {
				p++
				plen--
			}
			match := false
			for {
				if sc(pattern, p) == '\\' && plen >= 2 {
					p++
					plen--
					if sc(pattern, p) == sc(str, s) {
						match = true
					}
				} else if sc(pattern, p) == ']' {
					break
				} else if plen == 0 {
					p--
					plen++
					break
				} else if plen >= 3 && sc(pattern, p+1) == '-' {
					start, end, c := sc(pattern, p), sc(pattern, p+2), sc(str, s)
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = lowerC(start), lowerC(end), lowerC(c)
					}
					p += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if nocase {
					if lowerC(sc(pattern, p)) == lowerC(sc(str, s)) {
						match = true
					}
				} else if sc(pattern, p) == sc(str, s) {
					match = true
				}
				p++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s++
			slen--
		default:
			if sc(pattern, p) == '\\' && plen >= 2 {
				p++
				plen--
			}
			a, b := sc(pattern, p), sc(str, s)
			if nocase {
				a, b = lowerC(a), lowerC(b)
			}
			if a != b {
				return false
			}
			s++
			slen--
		}
		p++
		plen--
		if slen == 0 {
			for sc(pattern, p) == '*' && plen > 0 {
				p++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}
