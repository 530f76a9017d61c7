package lualib

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The C libraries walk tables with lua_next, so the order of the members of
// a JSON object or a MessagePack map is the order of C Lua 5.1's hash table.
// gopher-lua iterates differently (array part, then keys in insertion
// order). To produce the same bytes as Redis, tableKeys replays the keys, in
// gopher-lua's order, into a model of Lua 5.1's ltable.c (array part sizing,
// node placement, collision chains and rehashing) and reads the model back
// in lua_next order. The result equals C Lua's order whenever the C table
// would have been built by inserting the keys one by one into an empty
// table, which covers tables filled by assignment, by cjson.decode and
// cmsgpack.unpack, and most constructors. Keys C Lua hashes by address
// (tables, functions, userdata) cannot be placed the same way; they get a
// fixed hash.

// maxABits mirrors MAXBITS of ltable.c: array parts hold at most 2^26 slots.
const maxABits = 26

type simNode struct {
	key  lua.LValue // nil when the node is free
	next int        // index of the next node in the collision chain, or -1
}

// simTable models the layout of a Lua 5.1 table (no values are kept: every
// key inserted has a non-nil value and none is removed).
type simTable struct {
	array    []bool // array[i] reports whether key i+1 is present
	nodes    []simNode
	dummy    bool // the hash part is Lua's shared empty dummy node
	lastfree int
}

// tableKeys returns the keys of t in the order C Lua's lua_next visits them.
//
// gopher-lua keeps every positive integer key below lua.MaxArrayIndex in its
// array part, so their insertion order relative to the other keys is lost;
// the replay inserts them first, in ascending order, as a constructor such
// as {1, 2, 3, n = 3} or an array filled before its named fields would.
func tableKeys(t *lua.LTable) []lua.LValue {
	var keys []lua.LValue
	hashed := false
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		if n, ok := k.(lua.LNumber); !ok || float64(n) != float64(len(keys)+1) {
			hashed = true
		}
		keys = append(keys, k)
	}
	if !hashed {
		return keys // exactly 1..n: the order is the same in both VMs
	}
	return NextOrder(keys)
}

// NextOrder returns keys, listed in the order they were inserted into an
// empty table, in the order C Lua 5.1's lua_next visits them: it replays
// them into the model of ltable.c. It is the one model of C Lua's table
// order, shared with the script engine (pairs, next, map and set replies).
func NextOrder(keys []lua.LValue) []lua.LValue {
	st := &simTable{dummy: true}
	for _, k := range keys {
		st.set(k)
	}
	return st.order()
}

func (t *simTable) order() []lua.LValue {
	var out []lua.LValue
	for i, present := range t.array {
		if present {
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

func (t *simTable) sizeNode() int {
	if t.dummy {
		return 1
	}
	return len(t.nodes)
}

// arrayIndex mirrors ltable.c's arrayindex: the key as an int, or -1.
func arrayIndex(k lua.LValue) int {
	n, ok := k.(lua.LNumber)
	if !ok {
		return -1
	}
	i := toCInt(float64(n))
	if float64(i) != float64(n) {
		return -1
	}
	return int(i)
}

func (t *simTable) set(k lua.LValue) {
	if i := arrayIndex(k); i >= 1 && i <= len(t.array) {
		t.array[i-1] = true
		return
	}
	t.newKey(k)
}

// mainPosition mirrors ltable.c's mainposition.
func (t *simTable) mainPosition(k lua.LValue) int {
	size := uint32(t.sizeNode())
	switch v := k.(type) {
	case lua.LNumber:
		if v == 0 {
			return 0
		}
		b := math.Float64bits(float64(v))
		a := uint32(b) + uint32(b>>32)
		return int(a % ((size - 1) | 1))
	case lua.LString:
		return int(luaStringHash(string(v)) & (size - 1))
	case lua.LBool:
		if v {
			return int(1 & (size - 1))
		}
		return 0
	default:
		return 0 // hashed by address in C Lua: unknowable here
	}
}

// luaStringHash mirrors the string hash of Lua 5.1's luaS_newlstr.
func luaStringHash(s string) uint32 {
	l := len(s)
	h := uint32(l)
	step := (l >> 5) + 1
	for l1 := l; l1 >= step; l1 -= step {
		h ^= (h << 5) + (h >> 2) + uint32(s[l1-1])
	}
	return h
}

func (t *simTable) getFreePos() int {
	for t.lastfree > 0 {
		t.lastfree--
		if t.nodes[t.lastfree].key == nil {
			return t.lastfree
		}
	}
	return -1
}

// newKey mirrors ltable.c's newkey (Brent's variation of chained scatter).
func (t *simTable) newKey(k lua.LValue) {
	mp := t.mainPosition(k)
	if t.dummy || t.nodes[mp].key != nil {
		n := -1
		if !t.dummy {
			n = t.getFreePos()
		}
		if n < 0 {
			t.rehash(k)
			t.set(k)
			return
		}
		othern := t.mainPosition(t.nodes[mp].key)
		if othern != mp {
			for t.nodes[othern].next != mp {
				othern = t.nodes[othern].next
			}
			t.nodes[othern].next = n
			t.nodes[n] = t.nodes[mp]
			t.nodes[mp] = simNode{next: -1}
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
	for v := x - 1; v > 0; v >>= 1 {
		l++
	}
	return l
}

func countInt(k lua.LValue, nums *[maxABits + 1]int) int {
	i := arrayIndex(k)
	if i > 0 && i <= 1<<maxABits {
		nums[ceilLog2(i)]++
		return 1
	}
	return 0
}

// rehash mirrors ltable.c's rehash: it recomputes the array and hash sizes
// for the keys present plus the key being inserted.
func (t *simTable) rehash(ek lua.LValue) {
	var nums [maxABits + 1]int
	nasize := 0
	// numusearray
	i := 1
	for lg, ttlg := 0, 1; lg <= maxABits; lg, ttlg = lg+1, ttlg*2 {
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
		nasize += lc
	}
	totaluse := nasize
	// numusehash
	if !t.dummy {
		for j := len(t.nodes) - 1; j >= 0; j-- {
			if t.nodes[j].key != nil {
				nasize += countInt(t.nodes[j].key, &nums)
				totaluse++
			}
		}
	}
	nasize += countInt(ek, &nums)
	totaluse++
	na := computeSizes(&nums, &nasize)
	t.resize(nasize, totaluse-na)
}

// computeSizes mirrors ltable.c's computesizes.
func computeSizes(nums *[maxABits + 1]int, narray *int) int {
	a, na, n := 0, 0, 0
	for i, twotoi := 0, 1; twotoi/2 < *narray; i, twotoi = i+1, twotoi*2 {
		if i > maxABits {
			break
		}
		if nums[i] > 0 {
			a += nums[i]
			if a > twotoi/2 {
				n = twotoi
				na = a
			}
		}
		if a == *narray {
			break
		}
	}
	*narray = n
	return na
}

// resize mirrors ltable.c's resize.
func (t *simTable) resize(nasize, nhsize int) {
	oldArray := t.array
	oldNodes, oldDummy := t.nodes, t.dummy
	if nasize > len(t.array) {
		grown := make([]bool, nasize)
		copy(grown, t.array)
		t.array = grown
	}
	if nhsize == 0 {
		t.nodes, t.dummy, t.lastfree = nil, true, 0
	} else {
		size := 1 << ceilLog2(nhsize)
		t.nodes = make([]simNode, size)
		for j := range t.nodes {
			t.nodes[j].next = -1
		}
		t.dummy, t.lastfree = false, size
	}
	if nasize < len(oldArray) {
		t.array = t.array[:nasize]
		for j := nasize; j < len(oldArray); j++ {
			if oldArray[j] {
				t.newKey(lua.LNumber(j + 1))
			}
		}
	}
	if !oldDummy {
		for j := len(oldNodes) - 1; j >= 0; j-- {
			if oldNodes[j].key != nil {
				t.set(oldNodes[j].key)
			}
		}
	}
}
