package tiering

import (
	"math/bits"
	"math/rand/v2"
)

// zslMaxLevel is the most levels a node can have: enough for 4^32
// members at probability 1/4 per level.
const zslMaxLevel = 32

// Memory accounting for size(): what a node costs besides its member's
// bytes. A node is its struct (string header 16, score 8, backward 8,
// level slice header 24) plus 24 per level (forward pointer, its score,
// span).
// Allocator size-class rounding is ignored.
const (
	zslNodeOverhead  = 56
	zslLevelOverhead = 24
)

// zslNode is one member of a skiplist. Callers may read member and score
// and walk with next/prev; only the zsl changes the other fields.
type zslNode struct {
	member   string
	score    float64
	backward *zslNode // previous node, nil for the first
	level    []zslLevel
}

// zslLevel is a node's link at one level: the next node at that level
// (nil at the end), that node's score, and how many bottom-level steps it
// spans. The score is the forward node's, copied so that a search compares
// with it without loading the node: a search step that does not advance
// (the next node sorts after the target, the last comparison at every
// level) costs no cache miss, and the member is loaded only on a tie.
// Every change of a link or of a linked node's score keeps it (link,
// unlink, updateScore).
type zslLevel struct {
	forward *zslNode
	fscore  float64
	span    int
}

// before reports whether the node l leads to (non-nil) sorts before
// (score, member), as zslBefore, reading the node only on a score tie.
func (l *zslLevel) before(score float64, member string) bool {
	return l.fscore < score || l.fscore == score && l.forward.member < member
}

// next returns the following node in order, nil at the end.
func (n *zslNode) next() *zslNode { return n.level[0].forward }

// prev returns the preceding node in order, nil at the start.
func (n *zslNode) prev() *zslNode { return n.backward }

// zslNodeN are a node with its first N levels in one allocation; most
// nodes (all but about 1 in 256) have at most four levels.
type (
	zslNode1 struct {
		n zslNode
		l [1]zslLevel
	}
	zslNode2 struct {
		n zslNode
		l [2]zslLevel
	}
	zslNode3 struct {
		n zslNode
		l [3]zslLevel
	}
	zslNode4 struct {
		n zslNode
		l [4]zslLevel
	}
)

// newZSLNode allocates a node with level levels: one allocation for up
// to four levels, two above.
func newZSLNode(level int, score float64, member string) *zslNode {
	var x *zslNode
	switch level {
	case 1:
		b := new(zslNode1)
		b.n.level = b.l[:]
		x = &b.n
	case 2:
		b := new(zslNode2)
		b.n.level = b.l[:]
		x = &b.n
	case 3:
		b := new(zslNode3)
		b.n.level = b.l[:]
		x = &b.n
	case 4:
		b := new(zslNode4)
		b.n.level = b.l[:]
		x = &b.n
	default:
		x = &zslNode{level: make([]zslLevel, level)}
	}
	x.score, x.member = score, member
	return x
}

// zslNodeSize is what node x counts for in size().
func zslNodeSize(x *zslNode) int64 {
	return int64(len(x.member)) + zslNodeOverhead + zslLevelOverhead*int64(len(x.level))
}

// zslRandomLevel returns a level in [1, zslMaxLevel], each level above
// the first with probability 1/4: one per pair of low zero bits of a
// random word (bit 63 set caps the count at 63, so the level at 32).
func zslRandomLevel() int {
	return bits.TrailingZeros64(rand.Uint64()|1<<63)/2 + 1
}

// zslBefore reports whether x sorts before (score, member): by score,
// then by member bytes.
func zslBefore(x *zslNode, score float64, member string) bool {
	return x.score < score || x.score == score && x.member < member
}

// zsl is a skiplist with spans, ordered by (score, member) with equal
// scores ordered by member bytes: O(log n) insert, delete, rank and access
// by rank. Each member appears at most once; scores are never NaN and -0
// must be normalised to 0 by the caller. Not safe for concurrent use.
//
// At every level in use, the spans from the header to the end sum to
// len() (a link to nil spans to the last node).
type zsl struct {
	header *zslNode // sentinel with zslMaxLevel levels, holds no member
	tail   *zslNode // last node, nil if empty
	length int
	level  int   // levels in use, at least 1
	bytes  int64 // size() of the nodes, without the header
}

// newZSL returns an empty skiplist.
func newZSL() *zsl {
	return &zsl{header: newZSLNode(zslMaxLevel, 0, ""), level: 1}
}

// len returns the number of members.
func (z *zsl) len() int { return z.length }

// first returns the lowest node, nil if empty.
func (z *zsl) first() *zslNode { return z.header.level[0].forward }

// last returns the highest node, nil if empty.
func (z *zsl) last() *zslNode { return z.tail }

// size approximates the bytes the list holds for the hot budget: the
// members' lengths plus zslNodeOverhead and zslLevelOverhead per level for
// each node and for the header.
func (z *zsl) size() int64 { return z.bytes + zslNodeOverhead + zslLevelOverhead*zslMaxLevel }

// insert adds member with score and returns its node. The member must not
// be present (check with rank or the caller's dictionary first).
func (z *zsl) insert(score float64, member string) *zslNode {
	x := newZSLNode(zslRandomLevel(), score, member)
	z.link(x)
	z.bytes += zslNodeSize(x)
	return x
}

// link puts the unlinked node x, with its level slice set, in place by
// its score and member.
func (z *zsl) link(x *zslNode) {
	var update [zslMaxLevel]*zslNode
	var rank [zslMaxLevel]int // rank of update[i]
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		if i < z.level-1 {
			rank[i] = rank[i+1]
		}
		for l := &p.level[i]; l.forward != nil && l.before(x.score, x.member); l = &p.level[i] {
			rank[i] += l.span
			p = l.forward
		}
		update[i] = p
	}
	lvl := len(x.level)
	if lvl > z.level {
		for i := z.level; i < lvl; i++ {
			update[i] = z.header
			z.header.level[i].span = z.length
		}
		z.level = lvl
	}
	for i := 0; i < lvl; i++ {
		u := &update[i].level[i]
		x.level[i].forward, x.level[i].fscore = u.forward, u.fscore
		u.forward, u.fscore = x, x.score
		// x sits rank[0]-rank[i] steps after update[i], plus one.
		x.level[i].span = u.span - (rank[0] - rank[i])
		u.span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < z.level; i++ {
		update[i].level[i].span++
	}
	if update[0] != z.header {
		x.backward = update[0]
	} else {
		x.backward = nil
	}
	if f := x.level[0].forward; f != nil {
		f.backward = x
	} else {
		z.tail = x
	}
	z.length++
}

// findUpdate fills update with the last node before (score, member) at
// each level in use and returns the node after update[0], which is the
// member's node if present.
func (z *zsl) findUpdate(score float64, member string, update *[zslMaxLevel]*zslNode) *zslNode {
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		for l := &p.level[i]; l.forward != nil && l.before(score, member); l = &p.level[i] {
			p = l.forward
		}
		update[i] = p
	}
	return p.level[0].forward
}

// unlink removes x given update from findUpdate; x keeps its level slice
// (links stale) so it can be linked again.
func (z *zsl) unlink(x *zslNode, update *[zslMaxLevel]*zslNode) {
	for i := 0; i < z.level; i++ {
		u := &update[i].level[i]
		if u.forward == x {
			u.span += x.level[i].span - 1
			u.forward, u.fscore = x.level[i].forward, x.level[i].fscore
		} else {
			u.span--
		}
	}
	if f := x.level[0].forward; f != nil {
		f.backward = x.backward
	} else {
		z.tail = x.backward
	}
	for z.level > 1 && z.header.level[z.level-1].forward == nil {
		z.level--
	}
	z.length--
}

// delete removes member, which must have score if present, and reports
// whether it was found.
func (z *zsl) delete(score float64, member string) bool {
	var update [zslMaxLevel]*zslNode
	x := z.findUpdate(score, member, &update)
	if x == nil || x.score != score || x.member != member {
		return false
	}
	z.unlink(x, &update)
	z.bytes -= zslNodeSize(x)
	x.backward = nil
	clear(x.level)
	return true
}

// updateScore gives member, present with score cur, the score score and
// returns its node. The node is always reused: changed in place when its
// neighbours still bracket it, otherwise unlinked and linked again at its
// new place with the same levels. Panics if member is not present with
// score cur.
func (z *zsl) updateScore(cur float64, member string, score float64) *zslNode {
	var update [zslMaxLevel]*zslNode
	x := z.findUpdate(cur, member, &update)
	if x == nil || x.score != cur || x.member != member {
		panic("tiering: zsl.updateScore of a member not present with that score")
	}
	p, n := x.backward, x.level[0].forward
	if (p == nil || zslBefore(p, score, member)) && (n == nil || !zslBefore(n, score, member)) {
		// n != (score, member) as members are unique, so n sorts after.
		// The links into x at each of its levels are from update[].
		x.score = score
		for i := range x.level {
			update[i].level[i].fscore = score
		}
		return x
	}
	z.unlink(x, &update)
	x.score = score
	z.link(x)
	return x
}

// rank returns the 1-based rank of member with score, 0 if absent.
func (z *zsl) rank(score float64, member string) int {
	r := 0
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		// Advance while the next node is at or before (score, member).
		for f := p.level[i].forward; f != nil && (zslBefore(f, score, member) || f.score == score && f.member == member); f = p.level[i].forward {
			r += p.level[i].span
			p = f
		}
		if p != z.header && p.score == score && p.member == member {
			return r
		}
	}
	return 0
}

// byRank returns the node at 1-based rank, nil if rank is outside
// [1, len()].
func (z *zsl) byRank(rank int) *zslNode {
	if rank < 1 || rank > z.length {
		return nil
	}
	traversed := 0
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		for p.level[i].forward != nil && traversed+p.level[i].span <= rank {
			traversed += p.level[i].span
			p = p.level[i].forward
		}
		if traversed == rank {
			return p
		}
	}
	return nil
}

// inRange reports whether some node may be in r: r is not empty and
// overlaps the scores from first to last.
func (z *zsl) inRange(r *ScoreRange) bool {
	if r.Empty() || z.tail == nil {
		return false
	}
	return r.gteMin(z.tail.score) && r.lteMax(z.first().score)
}

// firstInRange returns the lowest node whose score is in r, nil if none.
func (z *zsl) firstInRange(r *ScoreRange) *zslNode {
	if !z.inRange(r) {
		return nil
	}
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		for f := p.level[i].forward; f != nil && !r.gteMin(f.score); f = p.level[i].forward {
			p = f
		}
	}
	// The tail is at or above the minimum, so p is not the tail.
	x := p.level[0].forward
	if !r.lteMax(x.score) {
		return nil
	}
	return x
}

// lastInRange returns the highest node whose score is in r, nil if none.
func (z *zsl) lastInRange(r *ScoreRange) *zslNode {
	if !z.inRange(r) {
		return nil
	}
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		for f := p.level[i].forward; f != nil && r.lteMax(f.score); f = p.level[i].forward {
			p = f
		}
	}
	// The first node is at or below the maximum, so p is not the header.
	if !r.gteMin(p.score) {
		return nil
	}
	return p
}

// inLexRange is inRange by member.
func (z *zsl) inLexRange(r *LexRange) bool {
	if r.Empty() || z.tail == nil {
		return false
	}
	return r.gteMin(z.tail.member) && r.lteMax(z.first().member)
}

// firstInLexRange returns the first node, in list order, whose member is
// in r, nil if none. It compares members only, so it is meaningful when
// all scores are equal (list order is then member order).
func (z *zsl) firstInLexRange(r *LexRange) *zslNode {
	if !z.inLexRange(r) {
		return nil
	}
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		for f := p.level[i].forward; f != nil && !r.gteMin(f.member); f = p.level[i].forward {
			p = f
		}
	}
	x := p.level[0].forward
	if x == nil || !r.lteMax(x.member) {
		return nil
	}
	return x
}

// lastInLexRange returns the last node, in list order, whose member is in
// r, nil if none; meaningful when all scores are equal, as
// firstInLexRange.
func (z *zsl) lastInLexRange(r *LexRange) *zslNode {
	if !z.inLexRange(r) {
		return nil
	}
	p := z.header
	for i := z.level - 1; i >= 0; i-- {
		for f := p.level[i].forward; f != nil && r.lteMax(f.member); f = p.level[i].forward {
			p = f
		}
	}
	if p == z.header || !r.gteMin(p.member) {
		return nil
	}
	return p
}
