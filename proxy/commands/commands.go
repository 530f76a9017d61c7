// Package commands is Spillway's command library: the handlers of Redis's
// data commands (strings, bits, keys, hashes, sets, lists, sorted sets),
// one file per family, each registering its commands explicitly with a
// server.Table (Register). Handlers follow server.Handler's contract: they
// read and write the keyspace only inside the context's Update and View,
// which own the engine's lock, and return Redis errors as values.
//
// The package holds no state; the server's own commands (connection,
// transactions, Pub/Sub, scripting, administration) live in proxy/server.
package commands

import (
	"strconv"

	"github.com/spillway/spillway/proxy/server"
)

// The names of the commands handlers propagate in place of the one they
// ran (server.Ctx.RewriteArgs, Propagate), as Redis's shared objects
// spell them.
var (
	argSet       = []byte("SET")
	argPXAT      = []byte("PXAT")
	argKeepTTL   = []byte("KEEPTTL")
	argPExpireAt = []byte("PEXPIREAT")
	argPersist   = []byte("PERSIST")
	argDel       = []byte("DEL")
	argUnlink    = []byte("UNLINK")
	argSRem      = []byte("SREM")
	argHSet      = []byte("HSET")
	argLPop      = []byte("LPOP")
	argRPop      = []byte("RPOP")
	argLMove     = []byte("LMOVE")
	argRPopLPush = []byte("RPOPLPUSH")
	argZPopMin   = []byte("ZPOPMIN")
	argZPopMax   = []byte("ZPOPMAX")
	argLeft      = []byte("left")
	argRight     = []byte("right")
)

// intArg is n as a propagated argument.
func intArg(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// delArg is the deletion a command propagates: UNLINK when the lazyfree
// setting (lazyfree-lazy-expire, lazyfree-lazy-user-del) is yes, else DEL.
func delArg(x *server.Ctx, setting string) []byte {
	if v, _ := x.Config().Value(setting); v == "yes" {
		return argUnlink
	}
	return argDel
}

// Register adds every command of the library to t.
func Register(t *server.Table) {
	registerString(t)
	registerBits(t)
	registerKeys(t)
	registerHash(t)
	registerSet(t)
	registerList(t)
	registerZSet(t)
	registerMemory(t)
	registerHLL(t)
	registerSort(t)
	registerGeo(t)
	registerDump(t)
	registerACL(t)
}

// Table returns a table holding every command of the library.
func Table() *server.Table {
	t := server.NewTable()
	Register(t)
	return t
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
