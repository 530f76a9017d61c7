package commands

import (
	"strings"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
)

// OBJECT's subcommands. Spillway does not hold Redis's objects: it reports
// what Redis 7.0 would for the same content.

// objectHelp is OBJECT HELP's reply, exactly as Redis 7.0 sends it (one
// status reply per line; generated from redis-server 7.0.15).
var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// objectLookup finds key for OBJECT subcommands without promoting or
// touching it; for a missing key it replies a null and returns nil.
func objectLookup(x *server.Ctx, tx *tiering.Tx, key []byte) (*tiering.Entry, error) {
	e, err := tx.PeekNoTouch(x.DB(), key)
	if err != nil {
		return nil, err
	}
	if e == nil {
		x.W.Null()
	}
	return e, nil
}

// stringEncoding reports the encoding Redis 7.0 would use for a string.
func stringEncoding(v []byte) string {
	if len(v) <= 20 {
		if _, ok := cstr.ParseInt(v); ok {
			return "int"
		}
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}

// zsetEncoding reports the encoding Redis 7.0 would hold z in: listpack
// until the set once grew past 128 members or held a member over 64 bytes,
// skiplist from then on.
func zsetEncoding(z *tiering.ZSet) (string, error) {
	if z.Skiplist() {
		return "skiplist", nil
	}
	return "listpack", nil
}

// cmdObjectEncoding is OBJECT ENCODING key.
func cmdObjectEncoding(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := objectLookup(x, tx, args[2])
		if e == nil || err != nil {
			return err
		}
		switch e.Type {
		case codec.TypeString:
			x.W.BulkString(stringEncoding(e.Str))
		case codec.TypeHash, codec.TypeSet:
			enc, err := collEncoding(tx.PeekColl(x.DB(), args[2], e), e.Type)
			if err != nil {
				return err
			}
			x.W.BulkString(enc)
		case codec.TypeList:
			x.W.BulkString("quicklist") // Redis 7.0's only list encoding
		case codec.TypeStream:
			x.W.BulkString("stream")
		case codec.TypeZSet:
			enc, err := zsetEncoding(tx.PeekZSet(x.DB(), args[2], e))
			if err != nil {
				return err
			}
			x.W.BulkString(enc)
		default:
			x.W.BulkString("hashtable")
		}
		return nil
	})
}

// cmdObjectIdle is OBJECT IDLETIME key: seconds since the key's last
// access, or a null for a missing key; Redis's error under an LFU policy.
func cmdObjectIdle(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		ms, ok, err := tx.IdleMillis(x.DB(), args[2])
		if err == nil {
			tx.AddLookup(ok) // Redis's lookupKeyRead (keyspace_hits)
		}
		switch {
		case err != nil:
			return err
		case !ok:
			x.W.Null()
		case lfuPolicy(x):
			return resp.Err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		default:
			x.W.Int(ms / 1000)
		}
		return nil
	})
}

// lfuPolicy reports whether maxmemory-policy is an LFU one, under which
// Redis tracks access frequency instead of idle time (OBJECT FREQ,
// RESTORE ... FREQ).
func lfuPolicy(x *server.Ctx) bool {
	p, _ := x.Config().Value("maxmemory-policy")
	return strings.HasSuffix(p, "-lfu")
}

// cmdObjectFreq is OBJECT FREQ key: a null for a missing key, else the
// key's LFU counter under an LFU policy (tiering.Tx.Freq: 0 for a cold
// key), else Redis's error.
func cmdObjectFreq(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		n, ok, err := tx.Freq(x.DB(), args[2])
		if err == nil {
			tx.AddLookup(ok) // Redis's lookupKeyRead (keyspace_hits)
		}
		switch {
		case err != nil:
			return err
		case !ok:
			x.W.Null()
		case !lfuPolicy(x):
			return resp.Err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		default:
			x.W.Int(n)
		}
		return nil
	})
}

// cmdObjectRefcount is OBJECT REFCOUNT key: a null for a missing key, else
// Redis's count for the same value.
func cmdObjectRefcount(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := objectLookup(x, tx, args[2])
		if e == nil || err != nil {
			return err
		}
		// Redis shares the integers 0..9999 (refcount INT_MAX).
		if e.Type == codec.TypeString && stringEncoding(e.Str) == "int" {
			if n, _ := cstr.ParseInt(e.Str); n >= 0 && n < 10000 {
				x.W.Int(2147483647)
				return nil
			}
		}
		x.W.Int(1)
		return nil
	})
}
