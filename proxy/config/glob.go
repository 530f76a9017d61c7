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
