package tiering

// ScoreRange is a score interval of ZRANGEBYSCORE, ZCOUNT...: Min and Max,
// each inclusive unless its Ex flag is set ("(" in Redis). Either may be
// ±Inf.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// gteMin reports whether score is at or above the range's lower bound.
func (r *ScoreRange) gteMin(score float64) bool {
	if r.MinEx {
		return score > r.Min
	}
	return score >= r.Min
}

// lteMax reports whether score is at or below the range's upper bound.
func (r *ScoreRange) lteMax(score float64) bool {
	if r.MaxEx {
		return score < r.Max
	}
	return score <= r.Max
}

// Contains reports whether score is in the range.
func (r *ScoreRange) Contains(score float64) bool { return r.gteMin(score) && r.lteMax(score) }

// Empty reports whether no score can be in the range.
func (r *ScoreRange) Empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// LexBound is one end of a ZRANGEBYLEX interval: "-" (Inf -1, below every
// string), "+" (Inf +1, above every string), or a member, inclusive ("[")
// or exclusive ("(").
type LexBound struct {
	Value     string
	Exclusive bool
	Inf       int
}

// LexRange is a ZRANGEBYLEX interval.
type LexRange struct{ Min, Max LexBound }

// cmpBound compares member with a bound's value: -1, 0 or 1 as member
// sorts before, at or after it (a ±inf bound is never equal).
func cmpBound(member string, b *LexBound) int {
	switch {
	case b.Inf < 0:
		return 1
	case b.Inf > 0:
		return -1
	case member < b.Value:
		return -1
	case member > b.Value:
		return 1
	}
	return 0
}

// gteMin reports whether member is at or above the lower bound.
func (r *LexRange) gteMin(member string) bool {
	c := cmpBound(member, &r.Min)
	return c > 0 || c == 0 && !r.Min.Exclusive
}

// lteMax reports whether member is at or below the upper bound.
func (r *LexRange) lteMax(member string) bool {
	c := cmpBound(member, &r.Max)
	return c < 0 || c == 0 && !r.Max.Exclusive
}

// Contains reports whether member is in the range.
func (r *LexRange) Contains(member string) bool { return r.gteMin(member) && r.lteMax(member) }

// Empty reports whether no member can be in the range.
func (r *LexRange) Empty() bool {
	lo, hi := &r.Min, &r.Max
	switch {
	case lo.Inf > 0 || hi.Inf < 0:
		return true
	case lo.Inf < 0 || hi.Inf > 0:
		return false
	case lo.Value > hi.Value:
		return true
	}
	return lo.Value == hi.Value && (lo.Exclusive || hi.Exclusive)
}
