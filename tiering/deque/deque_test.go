package deque

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDequeAgainstSlice runs random pushes, pops and sets at both ends on a
// Deque and on a slice, and compares every element, the length, the
// bytes and the buffer's shrinking after each step.
func TestDequeAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d Deque
	var model []string
	for step := range 20000 {
		s := fmt.Sprint(step)
		// Grow for the first half, drain for the second.
		grow := step < 10000
		switch r := rng.IntN(10); {
		case r < 3 && (grow || len(model) == 0):
			d.PushFront(s)
			model = append([]string{s}, model...)
		case r < 6 && (grow || len(model) == 0):
			d.PushBack(s)
			model = append(model, s)
		case r < 8 && len(model) > 0:
			if got := d.PopFront(); got != model[0] {
				t.Fatalf("step %d: PopFront = %q, want %q", step, got, model[0])
			}
			model = model[1:]
		case r < 9 && len(model) > 0:
			if got := d.PopBack(); got != model[len(model)-1] {
				t.Fatalf("step %d: PopBack = %q, want %q", step, got, model[len(model)-1])
			}
			model = model[:len(model)-1]
		case len(model) > 0:
			i := rng.IntN(len(model))
			d.Set(i, s+"x")
			model[i] = s + "x"
		}
		var bytes int64
		for _, m := range model {
			bytes += int64(len(m))
		}
		if d.Len() != len(model) || d.Bytes() != bytes {
			t.Fatalf("step %d: Len %d Bytes %d, want %d %d", step, d.Len(), d.Bytes(), len(model), bytes)
		}
		if step%1000 == 0 && !slices.Equal(d.Slice(), model) {
			t.Fatalf("step %d: elements differ", step)
		}
	}
	if d.Len() == 0 && len(d.buf) > 64 {
		t.Fatalf("drained deque keeps %d slots", len(d.buf))
	}
	d.Fill([]string{"a", "b"})
	if !slices.Equal(d.Slice(), []string{"a", "b"}) || d.Size() != 2+int64(len(d.buf))*16+2*16 {
		t.Fatalf("Fill: %q, Size %d", d.Slice(), d.Size())
	}
	d.Reset()
	if d.Len() != 0 || d.Size() != 0 {
		t.Fatalf("Reset: Len %d Size %d", d.Len(), d.Size())
	}
}
