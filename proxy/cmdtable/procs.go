package cmdtable

import "github.com/spillway/spillway/proxy/cstr"

// getKeysProcs holds the command-specific key finders of Redis 7.0 (its
// getkeys_proc functions), by command name. COMMAND GETKEYS uses them when
// the key specs are incomplete, have variable flags, or cannot be resolved.
//
// They are dispatched through a switch rather than function values so
// that escape analysis keeps callers' buffers on the stack.
var getKeysProcs = map[string]keyFinder{
	"zunionstore": {kind: findNumKeys, storeAt: 1, countAt: 2, firstAt: 3},
	"zinterstore": {kind: findNumKeys, storeAt: 1, countAt: 2, firstAt: 3},
	"zdiffstore":  {kind: findNumKeys, storeAt: 1, countAt: 2, firstAt: 3},
	"zunion":      {kind: findNumKeys, storeAt: 0, countAt: 1, firstAt: 2},
	"zinter":      {kind: findNumKeys, storeAt: 0, countAt: 1, firstAt: 2},
	"zdiff":       {kind: findNumKeys, storeAt: 0, countAt: 1, firstAt: 2},
	"zintercard":  {kind: findNumKeys, storeAt: 0, countAt: 1, firstAt: 2},
	"sintercard":  {kind: findNumKeys, storeAt: 0, countAt: 1, firstAt: 2},
	"lmpop":       {kind: findNumKeys, storeAt: 0, countAt: 1, firstAt: 2},
	"zmpop":       {kind: findNumKeys, storeAt: 0, countAt: 1, firstAt: 2},
	"blmpop":      {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},
	"bzmpop":      {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},
	"eval":        {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},
	"evalsha":     {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},
	"eval_ro":     {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},
	"evalsha_ro":  {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},
	"fcall":       {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},
	"fcall_ro":    {kind: findNumKeys, storeAt: 0, countAt: 2, firstAt: 3},

	"sort":              {kind: findSort},
	"sort_ro":           {kind: findSortRO},
	"migrate":           {kind: findMigrate},
	"georadius":         {kind: findGeoradius},
	"georadiusbymember": {kind: findGeoradius},
	"xread":             {kind: findXread},
	"xreadgroup":        {kind: findXread},
	"set":               {kind: findSet},
	"bitfield":          {kind: findBitfield},
}

type finderKind uint8

const (
	findNone finderKind = iota
	findNumKeys
	findSort
	findSortRO
	findMigrate
	findGeoradius
	findXread
	findSet
	findBitfield
)

// keyFinder selects a command-specific key finder; storeAt, countAt and
// firstAt parameterise findNumKeys.
type keyFinder struct {
	kind                      finderKind
	storeAt, countAt, firstAt int
}

// find appends the keys the finder locates in args.
func (f keyFinder) find(args [][]byte, dst []KeyRef) []KeyRef {
	switch f.kind {
	case findNumKeys:
		return numKeys(args, dst, f.storeAt, f.countAt, f.firstAt)
	case findSort:
		return sortKeys(args, dst)
	case findSortRO:
		return sortROKeys(args, dst)
	case findMigrate:
		return migrateKeys(args, dst)
	case findGeoradius:
		return georadiusKeys(args, dst)
	case findXread:
		return xreadKeys(args, dst)
	case findSet:
		return setKeys(args, dst)
	case findBitfield:
		return bitfieldKeys(args, dst)
	}
	return dst
}

// numKeys finds keys of the form CMD [dest] numkeys key [key ...] ...: the
// count is at countAt (parsed as C's atoi), keys follow from firstAt, and a
// store key at storeAt (0: none) comes last. An out-of-range count yields
// no keys.
func numKeys(args [][]byte, dst []KeyRef, storeAt, countAt, firstAt int) []KeyRef {
	if countAt >= len(args) {
		return dst
	}
	n := atoi(args[countAt])
	if n < 1 || n > len(args)-firstAt {
		return dst
	}
	for i := 0; i < n; i++ {
		dst = append(dst, KeyRef{Pos: firstAt + i})
	}
	if storeAt > 0 {
		dst = append(dst, KeyRef{Pos: storeAt})
	}
	return dst
}

// sortROKeys: SORT_RO's only key is its first argument.
func sortROKeys(args [][]byte, dst []KeyRef) []KeyRef {
	return append(dst, KeyRef{Pos: 1, Flags: KeyRO | KeyAccess})
}

// sortKeys: the sorted key plus the destination of the last STORE, skipping
// the arguments of LIMIT, GET and BY.
func sortKeys(args [][]byte, dst []KeyRef) []KeyRef {
	dst = append(dst, KeyRef{Pos: 1, Flags: KeyRO | KeyAccess})
	store := 0
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case cstr.EqualFold(a, "limit"):
			i += 2
		case cstr.EqualFold(a, "get"), cstr.EqualFold(a, "by"):
			i++
		case cstr.EqualFold(a, "store") && i+1 < len(args):
			store = i + 1
		}
	}
	if store > 0 {
		dst = append(dst, KeyRef{Pos: store, Flags: KeyOW | KeyUpdate})
	}
	return dst
}

// migrateKeys: argument 3, or with an empty argument 3 the arguments after
// KEYS (options before KEYS are skipped with their values).
func migrateKeys(args [][]byte, dst []KeyRef) []KeyRef {
	first, num := 3, 1
	if len(args) > 6 {
		for i := 6; i < len(args); i++ {
			a := args[i]
			if cstr.EqualFold(a, "keys") {
				if len(args[3]) > 0 {
					num = 0 // syntax error left to MIGRATE itself
				} else {
					first = i + 1
					num = len(args) - first
				}
				break
			}
			switch {
			case cstr.EqualFold(a, "auth"):
				i++
			case cstr.EqualFold(a, "auth2"):
				i += 2
			}
		}
	}
	for i := 0; i < num; i++ {
		dst = append(dst, KeyRef{Pos: first + i, Flags: KeyRW | KeyAccess | KeyDelete})
	}
	return dst
}

// georadiusKeys: the key plus the last STORE/STOREDIST destination.
func georadiusKeys(args [][]byte, dst []KeyRef) []KeyRef {
	store := -1
	for i := 5; i < len(args); i++ {
		a := args[i]
		if (cstr.EqualFold(a, "store") || cstr.EqualFold(a, "storedist")) && i+1 < len(args) {
			store = i + 1
			i++
		}
	}
	dst = append(dst, KeyRef{Pos: 1})
	if store != -1 {
		dst = append(dst, KeyRef{Pos: store})
	}
	return dst
}

// xreadKeys: the first half of the arguments after STREAMS, found by
// skipping BLOCK, COUNT, GROUP and NOACK.
func xreadKeys(args [][]byte, dst []KeyRef) []KeyRef {
	streams := -1
loop:
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case cstr.EqualFold(a, "block"), cstr.EqualFold(a, "count"):
			i++
		case cstr.EqualFold(a, "group"):
			i += 2
		case cstr.EqualFold(a, "noack"):
		case cstr.EqualFold(a, "streams"):
			streams = i
			break loop
		default:
			break loop
		}
	}
	if streams == -1 {
		return dst
	}
	num := len(args) - streams - 1
	if num == 0 || num%2 != 0 {
		return dst
	}
	num /= 2
	for i := streams + 1; i < len(args)-num; i++ {
		dst = append(dst, KeyRef{Pos: i})
	}
	return dst
}

// setKeys: SET's key, read-write when a GET option is present.
func setKeys(args [][]byte, dst []KeyRef) []KeyRef {
	for i := 3; i < len(args); i++ {
		if cstr.EqualFold(args[i], "get") {
			return append(dst, KeyRef{Pos: 1, Flags: KeyRW | KeyAccess | KeyUpdate})
		}
	}
	return append(dst, KeyRef{Pos: 1, Flags: KeyOW | KeyUpdate})
}

// bitfieldKeys: BITFIELD's key, read-only when only GET and OVERFLOW
// operations are well formed.
func bitfieldKeys(args [][]byte, dst []KeyRef) []KeyRef {
	readonly := true
	for i := 2; i < len(args); i++ {
		rem := len(args) - i - 1
		a := args[i]
		if cstr.EqualFold(a, "get") && rem >= 2 {
			i += 2
		} else if (cstr.EqualFold(a, "set") || cstr.EqualFold(a, "incrby")) && rem >= 3 {
			readonly = false
			break
		} else if cstr.EqualFold(a, "overflow") && rem >= 1 {
			i++
		} else {
			readonly = false
			break
		}
	}
	if readonly {
		return append(dst, KeyRef{Pos: 1, Flags: KeyRO | KeyAccess})
	}
	return append(dst, KeyRef{Pos: 1, Flags: KeyRW | KeyAccess | KeyUpdate})
}
