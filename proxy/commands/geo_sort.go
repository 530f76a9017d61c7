package commands

// partialSort orders s enough that s[lo..hi] hold what a full sort by cmp
// would put there, as Redis's pqsort does for a geo search with COUNT:
// Bentley and McIlroy's three-way quicksort (median of three, or of nine
// past 40 elements; insertion sort under 7), skipping the partitions
// outside lo..hi. Elements that compare equal end up where that algorithm
// leaves them, which shows in replies (points at the same distance), so
// the steps are Redis's, not just any partial sort.
func partialSort[T any](s []T, cmp func(a, b *T) int, lo, hi int) {
	pqsortRange(s, cmp, 0, len(s), lo, hi)
}

func pqsortRange[T any](s []T, cmp func(a, b *T) int, base, n, lo, hi int) {
	c := func(i, j int) int { return cmp(&s[i], &s[j]) }
	swap := func(i, j int) { s[i], s[j] = s[j], s[i] }
	med3 := func(a, b, m int) int {
		if c(a, b) < 0 {
			switch {
			case c(b, m) < 0:
				return b
			case c(a, m) < 0:
				return m
			}
			return a
		}
		switch {
		case c(b, m) > 0:
			return b
		case c(a, m) < 0:
			return a
		}
		return m
	}
	// overlaps reports whether elements [from, from+k) meet lo..hi.
	overlaps := func(from, k int) bool { return !(hi < from || lo >= from+k) }
	for {
		if n < 7 {
			for m := base + 1; m < base+n; m++ {
				for l := m; l > base && c(l-1, l) > 0; l-- {
					swap(l, l-1)
				}
			}
			return
		}
		m := base + n/2
		if n > 7 {
			l, r := base, base+n-1
			if n > 40 {
				d := n / 8
				l = med3(l, l+d, l+2*d)
				m = med3(m-d, m, m+d)
				r = med3(r-2*d, r-d, r)
			}
			m = med3(l, m, r)
		}
		swap(base, m)
		pa, pb := base+1, base+1
		pc, pd := base+n-1, base+n-1
		for {
			for pb <= pc {
				r := c(pb, base)
				if r > 0 {
					break
				}
				if r == 0 {
					swap(pa, pb)
					pa++
				}
				pb++
			}
			for pb <= pc {
				r := c(pc, base)
				if r < 0 {
					break
				}
				if r == 0 {
					swap(pc, pd)
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			swap(pb, pc)
			pb++
			pc--
		}
		pn := base + n
		vecswap := func(a, b, k int) {
			for i := range k {
				swap(a+i, b+i)
			}
		}
		r := min(pa-base, pb-pa)
		vecswap(base, pb-r, r)
		r = min(pd-pc, pn-pd-1)
		vecswap(pb, pn-r, r)
		if r := pb - pa; r > 1 && overlaps(base, r) {
			pqsortRange(s, cmp, base, r, lo, hi)
		}
		r = pd - pc
		if r <= 1 || !overlaps(pn-r, r) {
			return
		}
		base, n = pn-r, r
	}
}
