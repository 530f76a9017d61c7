package tiering

// deque is a ring buffer of list elements with O(1) access at both ends
// and by position. Elements are strings: never modified in place, so a
// reader holding one sees a consistent value.
type deque struct {
	buf   []string // len(buf) is zero or a power of two
	head  int      // position of element 0 in buf
	n     int
	bytes int64 // total length of the elements
}

func (d *deque) len() int { return d.n }

func (d *deque) slot(i int) int { return (d.head + i) & (len(d.buf) - 1) }

// at returns element i (0 <= i < len).
func (d *deque) at(i int) string { return d.buf[d.slot(i)] }

// set replaces element i.
func (d *deque) set(i int, s string) {
	j := d.slot(i)
	d.bytes += int64(len(s) - len(d.buf[j]))
	d.buf[j] = s
}

func (d *deque) grow() {
	if d.n < len(d.buf) {
		return
	}
	nb := make([]string, max(8, 2*len(d.buf)))
	for i := 0; i < d.n; i++ {
		nb[i] = d.at(i)
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushFront(s string) {
	d.grow()
	d.head = (d.head - 1) & (len(d.buf) - 1)
	d.buf[d.head] = s
	d.n++
	d.bytes += int64(len(s))
}

func (d *deque) pushBack(s string) {
	d.grow()
	d.buf[d.slot(d.n)] = s
	d.n++
	d.bytes += int64(len(s))
}

// popFront removes and returns element 0 (the deque must not be empty).
func (d *deque) popFront() string {
	s := d.buf[d.head]
	d.buf[d.head] = ""
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	d.bytes -= int64(len(s))
	d.shrink()
	return s
}

// popBack removes and returns the last element (the deque must not be
// empty).
func (d *deque) popBack() string {
	j := d.slot(d.n - 1)
	s := d.buf[j]
	d.buf[j] = ""
	d.n--
	d.bytes -= int64(len(s))
	d.shrink()
	return s
}

// shrink halves the buffer when it is at most a quarter full, so a list
// that grew and was drained gives its memory back.
func (d *deque) shrink() {
	if len(d.buf) <= 64 || d.n > len(d.buf)/4 {
		return
	}
	nb := make([]string, len(d.buf)/2)
	for i := 0; i < d.n; i++ {
		nb[i] = d.at(i)
	}
	d.buf, d.head = nb, 0
}

// reset empties the deque and releases its buffer.
func (d *deque) reset() { *d = deque{} }

// slice returns the elements in order (a copy of the headers).
func (d *deque) slice() []string {
	out := make([]string, d.n)
	for i := range out {
		out[i] = d.at(i)
	}
	return out
}

// fill replaces the content with elems.
func (d *deque) fill(elems []string) {
	d.reset()
	for _, s := range elems {
		d.pushBack(s)
	}
}

// size is what the deque costs against the hot budget: the bytes, a
// string header per slot of the ring and an allocation's rounding per
// element.
func (d *deque) size() int64 { return d.bytes + int64(len(d.buf))*16 + int64(d.n)*16 }
