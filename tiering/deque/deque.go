// Package deque is the ring buffer that holds a hot list's elements
// (tiering's list cache).
package deque

// Deque is a ring buffer of list elements with O(1) access at both ends
// and by position. Elements are strings: never modified in place, so a
// reader holding one sees a consistent value.
type Deque struct {
	buf   []string // len(buf) is zero or a power of two
	head  int      // position of element 0 in buf
	n     int
	bytes int64 // total length of the elements
}

// Bytes is the total length of the elements.
func (d *Deque) Bytes() int64 { return d.bytes }

// Len is the number of elements.
func (d *Deque) Len() int { return d.n }

func (d *Deque) slot(i int) int { return (d.head + i) & (len(d.buf) - 1) }

// At returns element i (0 <= i < Len).
func (d *Deque) At(i int) string { return d.buf[d.slot(i)] }

// Set replaces element i.
func (d *Deque) Set(i int, s string) {
	j := d.slot(i)
	d.bytes += int64(len(s) - len(d.buf[j]))
	d.buf[j] = s
}

func (d *Deque) grow() {
	if d.n < len(d.buf) {
		return
	}
	nb := make([]string, max(8, 2*len(d.buf)))
	for i := 0; i < d.n; i++ {
		nb[i] = d.At(i)
	}
	d.buf, d.head = nb, 0
}

// PushFront adds s before element 0.
func (d *Deque) PushFront(s string) {
	d.grow()
	d.head = (d.head - 1) & (len(d.buf) - 1)
	d.buf[d.head] = s
	d.n++
	d.bytes += int64(len(s))
}

// PushBack adds s after the last element.
func (d *Deque) PushBack(s string) {
	d.grow()
	d.buf[d.slot(d.n)] = s
	d.n++
	d.bytes += int64(len(s))
}

// PopFront removes and returns element 0 (the deque must not be empty).
func (d *Deque) PopFront() string {
	s := d.buf[d.head]
	d.buf[d.head] = ""
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	d.bytes -= int64(len(s))
	d.shrink()
	return s
}

// PopBack removes and returns the last element (the deque must not be
// empty).
func (d *Deque) PopBack() string {
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
func (d *Deque) shrink() {
	if len(d.buf) <= 64 || d.n > len(d.buf)/4 {
		return
	}
	nb := make([]string, len(d.buf)/2)
	for i := 0; i < d.n; i++ {
		nb[i] = d.At(i)
	}
	d.buf, d.head = nb, 0
}

// Reset empties the deque and releases its buffer.
func (d *Deque) Reset() { *d = Deque{} }

// Slice returns the elements in order (a copy of the headers).
func (d *Deque) Slice() []string {
	out := make([]string, d.n)
	for i := range out {
		out[i] = d.At(i)
	}
	return out
}

// Fill replaces the content with elems.
func (d *Deque) Fill(elems []string) {
	d.Reset()
	for _, s := range elems {
		d.PushBack(s)
	}
}

// Size is what the deque costs against the hot budget: the bytes, a
// string header per slot of the ring and an allocation's rounding per
// element.
func (d *Deque) Size() int64 { return d.bytes + int64(len(d.buf))*16 + int64(d.n)*16 }
