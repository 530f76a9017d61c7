package cstr

// maxGlobNesting is the '*' recursion depth past which Redis gives up and
// reports no match.
const maxGlobNesting = 1000

// Match reports whether s matches the glob pattern exactly as Redis 7.0's
// stringmatchlen does (KEYS, SCAN MATCH, CONFIG GET, PSUBSCRIBE...): '*',
// '?', '[...]' with '^' negation, ranges and '\' escapes, and '\' escaping
// any other byte. Quirks kept: bytes are compared as signed chars in ranges,
// nocase folds only ASCII letters, an unterminated '[' set runs to the end
// of the pattern, and more than 1000 nested '*' never match. Patterns that
// would take exponential time are cut short as Redis does. Like
// stringmatchlen, Match("*", "") is false: KEYS and SCAN special-case a
// lone "*" as match-all (see MatchesAll).
func Match(pattern, s []byte, nocase bool) bool {
	skip := false
	return matchImpl(pattern, s, nocase, &skip, 0)
}

// at returns p[i], or 0 past the end: Redis patterns are NUL-terminated and
// the matcher peeks one byte beyond.
func at(p []byte, i int) byte {
	if i < len(p) {
		return p[i]
	}
	return 0
}

func lower(c int) int {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func eqByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(int(int8(a))) == lower(int(int8(b)))
	}
	return a == b
}

func matchImpl(p, s []byte, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > maxGlobNesting {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && at(p, 1) == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if matchImpl(p[1:], s, nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			// The rest of the pattern matches nowhere in the rest of
			// the string, so no longer match for an earlier '*' can
			// help either.
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			var ok bool
			if p, ok = matchSet(p[1:], s[0], nocase); !ok {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if !eqByte(p[0], s[0], nocase) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for at(p, 0) == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// matchSet matches c against the set starting just after a '['. It returns
// the pattern positioned on the set's closing ']' (or its last byte when
// unterminated) and whether c matched.
var openBracket = []byte{'['}

func matchSet(p []byte, c byte, nocase bool) ([]byte, bool) {
	// Walk with an index so that an unterminated set can step back one
	// byte, as Redis does.
	full := p
	i := 0
	not := at(full, i) == '^'
	if not {
		i++
	}
	match := false
	for {
		rem := len(full) - i
		switch {
		case at(full, i) == '\\' && rem >= 2:
			i++
			if full[i] == c {
				match = true
			}
		case at(full, i) == ']':
			goto done
		case rem <= 0:
			i--
			goto done
		case rem >= 3 && full[i+1] == '-':
			start, end, ch := int(int8(full[i])), int(int8(full[i+2])), int(int8(c))
			if start > end {
				start, end = end, start
			}
			if nocase {
				start, end, ch = lower(start), lower(end), lower(ch)
			}
			i += 2
			if ch >= start && ch <= end {
				match = true
			}
		default:
			if eqByte(full[i], c, nocase) {
				match = true
			}
		}
		i++
	}
done:
	if not {
		match = !match
	}
	if i < 0 {
		// "[" was the pattern's last byte: Redis steps back onto it,
		// leaving one byte for the caller to consume.
		return openBracket, match
	}
	return full[i:], match
}

// MatchesAll reports whether pattern is the lone "*" that KEYS and SCAN
// treat as matching every key, the empty key included, without calling
// the matcher.
func MatchesAll(pattern []byte) bool {
	return len(pattern) == 1 && pattern[0] == '*'
}

// IsLiteral reports whether pattern has no glob special character ('*',
// '?', '[' or '\'), so that Match(pattern, s, false) is plain equality.
func IsLiteral(pattern []byte) bool {
	for _, c := range pattern {
		switch c {
		case '*', '?', '[', '\\':
			return false
		}
	}
	return true
}
