package config

// hasGlob reports whether p contains a glob metacharacter.
func hasGlob(p []byte) bool {
	for _, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Match reports whether s matches the glob pattern, ignoring ASCII case, with
// the rules of Redis's stringmatchlen: * any run, ? any byte, [abc] [^abc]
// [a-z] classes (an unclosed class runs to the end of the pattern), and \x
// for a literal x.
func Match(pattern, s []byte) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				starP, starI = p, i
				continue
			}
			if ok, next := matchOne(pattern, p, s[i]); ok {
				p, i = next, i+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches the single-byte token at pattern[p] against c and returns
// the index of the next token.
func matchOne(pattern []byte, p int, c byte) (bool, int) {
	switch pattern[p] {
	case '?':
		return true, p + 1
	case '\\':
		if p+1 < len(pattern) {
			return lower(pattern[p+1]) == lower(c), p + 2
		}
		return c == '\\', p + 1
	case '[':
		return matchClass(pattern, p+1, c)
	}
	return lower(pattern[p]) == lower(c), p + 1
}

func matchClass(pattern []byte, p int, c byte) (bool, int) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	lc := lower(c)
	matched := false
	for p < len(pattern) {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			if lower(pattern[p+1]) == lc {
				matched = true
			}
			p += 2
		case pattern[p] == ']':
			return matched != not, p + 1
		case p+2 < len(pattern) && pattern[p+1] == '-':
			lo, hi := lower(pattern[p]), lower(pattern[p+2])
			if lo > hi {
				lo, hi = hi, lo
			}
			if lc >= lo && lc <= hi {
				matched = true
			}
			p += 3
		default:
			if lower(pattern[p]) == lc {
				matched = true
			}
			p++
		}
	}
	return matched != not, p
}
