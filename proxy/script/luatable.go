package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Redis walks tables with lua_next when it turns {map=...} and {set=...}
// into replies and when it reads register_function's named arguments, and
// scripts walk them with pairs and next: all of these see C Lua 5.1's
// hash-table order. gopher-lua iterates its array part and then its keys in
// insertion order.
// luaNextOrder replays the keys, in gopher-lua's order, into a model of
// ltable.c (array sizing, main positions, collision chains, rehashing) and
// reads the model back in lua_next order. It equals C Lua's order whenever
// the C table was built by inserting the keys one by one into an empty
// table, as Redis does when it converts a RESP3 map or set; constructors with
// colliding keys may differ. Keys C Lua hashes by address (tables,
// functions) cannot be modelled: tables holding them keep gopher-lua's order.

// maxArrayBits mirrors MAXBITS of ltable.c.
const maxArrayBits = 26

type tnode struct {
	key  lua.LValue // nil when free
	next int        // next node in the chain, -1 for none
}

type ltable struct {
	array    []bool
	nodes    []tnode // nil: the shared dummy node
	lastfree int
}

// luaNextOrder returns the keys of t in the order C Lua's lua_next visits
// them (see above). inserted, when known, is the order in which the keys
// were inserted; it is used if t still holds exactly those keys. Otherwise
// the insertion order is taken to be gopher-lua's: integer keys ascending
// (gopher-lua keeps them in its array part), then the other keys in
// insertion order.
func luaNextOrder(t *lua.LTable, inserted []lua.LValue) []lua.LValue {
	keys := collectKeys(t)
	if len(inserted) == len(keys) {
		same := true
		for _, k := range inserted {
			if t.RawGet(k) == lua.LNil {
				same = false
				break
			}
		}
		if same {
			keys = inserted
		}
	}
	sequential := true
	for i, k := range keys {
		switch x := k.(type) {
		case lua.LString, lua.LBool:
		case lua.LNumber:
			if float64(x) == float64(i+1) {
				continue
			}
		default:
			return keys
		}
		sequential = false
	}
	if sequential {
		return keys
	}
	m := &ltable{}
	for _, k := range keys {
		m.set(k)
	}
	return m.order()
}

func collectKeys(t *lua.LTable) []lua.LValue {
	var keys []lua.LValue
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		keys = append(keys, k)
	}
	return keys
}

func (t *ltable) order() []lua.LValue {
	var out []lua.LValue
	for i, ok := range t.array {
		if ok {
			out = append(out, lua.LNumber(i+1))
		}
	}
	for _, n := range t.nodes {
		if n.key != nil {
			out = append(out, n.key)
		}
	}
	return out
}

// arrayIndex returns k's array index (1-based) or 0.
func arrayIndex(k lua.LValue) int {
	n, ok := k.(lua.LNumber)
	if !ok {
		return 0
	}
	f := float64(n)
	i := int(f)
	if float64(i) != f || i < 1 || i > 1<<maxArrayBits {
		return 0
	}
	return i
}

func (t *ltable) sizeNode() int {
	if t.nodes == nil {
		return 1
	}
	return len(t.nodes)
}

// set inserts k (absent from the table) as luaH_set does.
func (t *ltable) set(k lua.LValue) {
	if i := arrayIndex(k); i > 0 && i <= len(t.array) {
		t.array[i-1] = true
		return
	}
	t.newKey(k)
}

func (t *ltable) mainPosition(k lua.LValue) int {
	size := t.sizeNode()
	switch x := k.(type) {
	case lua.LString:
		return int(luaStrHash(string(x)) & uint32(size-1))
	case lua.LBool:
		if x {
			return 1 & (size - 1)
		}
		return 0
	case lua.LNumber:
		f := float64(x)
		if f == 0 {
			return 0
		}
		b := math.Float64bits(f)
		h := uint32(b) + uint32(b>>32)
		return int(h % uint32((size-1)|1))
	}
	return 0
}

// luaStrHash is luaS_newlstr's hash of Lua 5.1.5.
func luaStrHash(s string) uint32 {
	l := len(s)
	h := uint32(l)
	step := (l >> 5) + 1
	for l1 := l; l1 >= step; l1 -= step {
		h ^= (h << 5) + (h >> 2) + uint32(s[l1-1])
	}
	return h
}

func (t *ltable) getFreePos() int {
	for t.lastfree > 0 {
		t.lastfree--
		if t.nodes[t.lastfree].key == nil {
			return t.lastfree
		}
	}
	return -1
}

func (t *ltable) newKey(k lua.LValue) {
	if t.nodes == nil {
		t.rehash(k)
		t.set(k)
		return
	}
	mp := t.mainPosition(k)
	if t.nodes[mp].key != nil {
		n := t.getFreePos()
		if n < 0 {
			t.rehash(k)
			t.set(k)
			return
		}
		other := t.mainPosition(t.nodes[mp].key)
		if other != mp {
			for t.nodes[other].next != mp {
				other = t.nodes[other].next
			}
			t.nodes[other].next = n
			t.nodes[n] = t.nodes[mp]
			t.nodes[mp] = tnode{next: -1}
		} else {
			t.nodes[n].next = t.nodes[mp].next
			t.nodes[mp].next = n
			mp = n
		}
	}
	t.nodes[mp].key = k
}

func ceilLog2(x int) int {
	l := 0
	for (1 << l) < x {
		l++
	}
	return l
}

func (t *ltable) rehash(extra lua.LValue) {
	var nums [maxArrayBits + 1]int
	nasize := t.numUseArray(&nums)
	total := nasize
	for i := len(t.nodes) - 1; i >= 0; i-- {
		if k := t.nodes[i].key; k != nil {
			if ai := arrayIndex(k); ai > 0 {
				nums[ceilLog2(ai)]++
				nasize++
			}
			total++
		}
	}
	if ai := arrayIndex(extra); ai > 0 {
		nums[ceilLog2(ai)]++
		nasize++
	}
	total++
	na, size := computeSizes(&nums, nasize)
	t.resize(size, total-na)
}

func (t *ltable) numUseArray(nums *[maxArrayBits + 1]int) int {
	ause := 0
	i := 1
	for lg, ttlg := 0, 1; lg <= maxArrayBits; lg, ttlg = lg+1, ttlg*2 {
		lc := 0
		lim := ttlg
		if lim > len(t.array) {
			lim = len(t.array)
			if i > lim {
				break
			}
		}
		for ; i <= lim; i++ {
			if t.array[i-1] {
				lc++
			}
		}
		nums[lg] += lc
		ause += lc
	}
	return ause
}

func computeSizes(nums *[maxArrayBits + 1]int, narray int) (na, n int) {
	a := 0
	for i, twotoi := 0, 1; twotoi/2 < narray; i, twotoi = i+1, twotoi*2 {
		if nums[i] > 0 {
			a += nums[i]
			if a > twotoi/2 {
				n = twotoi
				na = a
			}
		}
		if a == narray {
			break
		}
	}
	return na, n
}

func (t *ltable) resize(nasize, nhsize int) {
	oldArray := t.array
	oldNodes := t.nodes
	if nasize > len(t.array) {
		grown := make([]bool, nasize)
		copy(grown, t.array)
		t.array = grown
	}
	if nhsize == 0 {
		t.nodes = nil
		t.lastfree = 0
	} else {
		size := 1 << ceilLog2(nhsize)
		t.nodes = make([]tnode, size)
		for i := range t.nodes {
			t.nodes[i].next = -1
		}
		t.lastfree = size
	}
	if nasize < len(oldArray) {
		t.array = t.array[:nasize]
		for i := nasize; i < len(oldArray); i++ {
			if oldArray[i] {
				t.set(lua.LNumber(i + 1))
			}
		}
	}
	for i := len(oldNodes) - 1; i >= 0; i-- {
		if k := oldNodes[i].key; k != nil {
			t.set(k)
		}
	}
}
