package tiering

import "math/rand/v2"

// fieldMap is the hot copy of a hash or a set: each field with its value
// (sets store empty values). Fields are kept in a dense slice indexed by a
// map, so a random field is O(1) (HRANDFIELD, SPOP) and iteration needs no
// map walk. Removal swaps the last field into the hole, so positions are
// not stable across writes.
type fieldMap struct {
	idx   map[string]int32
	names []string
	vals  []string
	bytes int64 // total length of fields and values
}

// fieldOverhead approximates what one field costs in a fieldMap beyond its
// bytes: a map slot and two string headers.
const fieldOverhead = 64

func newFieldMap(n int) *fieldMap {
	return &fieldMap{
		idx:   make(map[string]int32, n),
		names: make([]string, 0, n),
		vals:  make([]string, 0, n),
	}
}

func (m *fieldMap) len() int { return len(m.names) }

// get returns field's value; the lookup does not allocate.
func (m *fieldMap) get(field []byte) (string, bool) {
	i, ok := m.idx[view(field)]
	if !ok {
		return "", false
	}
	return m.vals[i], true
}

// set stores field = val and reports whether field is new.
func (m *fieldMap) set(field, val []byte) bool {
	if i, ok := m.idx[view(field)]; ok {
		m.bytes += int64(len(val) - len(m.vals[i]))
		m.vals[i] = string(val)
		return false
	}
	f := string(field)
	m.idx[f] = int32(len(m.names))
	m.names = append(m.names, f)
	m.vals = append(m.vals, string(val))
	m.bytes += int64(len(f) + len(val))
	return true
}

// put is set for a write that may repeat the stored value: it reports
// whether field is new, and, for an existing field, whether its value
// changed; an unchanged value is left as it is (nothing is copied).
func (m *fieldMap) put(field, val []byte) (created, changed bool) {
	if i, ok := m.idx[view(field)]; ok {
		if m.vals[i] == view(val) {
			return false, false
		}
		m.bytes += int64(len(val) - len(m.vals[i]))
		m.vals[i] = string(val)
		return false, true
	}
	return m.set(field, val), true
}

// del removes field and reports whether it was there.
func (m *fieldMap) del(field []byte) bool {
	i, ok := m.idx[view(field)]
	if !ok {
		return false
	}
	m.bytes -= int64(len(m.names[i]) + len(m.vals[i]))
	delete(m.idx, m.names[i])
	last := int32(len(m.names) - 1)
	if i != last {
		m.names[i], m.vals[i] = m.names[last], m.vals[last]
		m.idx[m.names[i]] = i
	}
	m.names[last], m.vals[last] = "", ""
	m.names, m.vals = m.names[:last], m.vals[:last]
	return true
}

// random returns a uniformly chosen position; the map must not be empty.
func (m *fieldMap) random() int { return rand.IntN(len(m.names)) }

// size is what the map costs against the hot budget.
func (m *fieldMap) size() int64 { return m.bytes + int64(len(m.names))*fieldOverhead }
