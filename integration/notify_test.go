package integration

// Keyspace notifications (notify-keyspace-events) in embedded mode, black
// box. TestNotifyDiff runs a table of command sequences against a real
// redis-server and against Spillway with the same notify-keyspace-events
// classes, a subscriber on each (PSUBSCRIBE __key*__:*, in RESP2 and in
// RESP3), and compares the replies and the events received, byte for byte
// and in order; then again with the commands' own RESP3 connection as the
// subscriber, where the events must come where Redis puts them among the
// replies (before, after or inside them). Keys are demoted to disk on
// Spillway (DEBUG DEMOTE) in the steps marked so, to cover cold keys and
// their expiry by a lookup or by the background sweeper.
// TestNotifyNoEvictedOnDemotion checks that demotions under a small
// maxmemory send no "evicted" event.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// notifyCase is one sequence of steps run with notify-keyspace-events set
// to classes. A step is a command on the main connection (its reply is
// compared), or a directive:
//
//	@sleep ms          pause both runs alike
//	@demote key...     Spillway: DEBUG DEMOTE (in db 0), every key must move; redis: nothing
//	@demoteany key...  @demote of keys that may be cold already
//	@bg name cmd...    send a blocking command on connection name, wait until it blocks
//	@read name         read (and compare) connection name's pending reply
//	@gone key          poll OBJECT ENCODING key (no keymiss event) until it is gone
type notifyCase struct {
	name    string
	classes string
	steps   [][]string
	// notSelf: not run with a self-subscribed connection (see
	// notifySelfMode).
	notSelf bool
}

// nEnd is the channel and message of the marker published after a case:
// it matches the subscription's pattern, and everything published before
// it has been received once it arrives.
const nEnd = "__keyend__:end"

// notifyCases are TestNotifyDiff's sequences.
var notifyCases = []notifyCase{
	{name: "strings", classes: "KEAnm", steps: [][]string{
		{"SET", "a", "1"}, {"SET", "a", "2"}, {"SET", "a", "3", "NX"}, {"SET", "a", "4", "XX"},
		{"SET", "b", "1", "XX"}, {"SET", "b", "1", "GET"}, {"SET", "b", "2", "GET"},
		{"SET", "c", "1", "EX", "100"}, {"SET", "c", "2", "KEEPTTL"}, {"SET", "c", "3", "PX", "100000", "GET"},
		{"SET", "c", "4", "NX", "GET"}, {"SET", "n", "4", "XX", "GET"}, {"SET", "c", "x", "EX", "0"},
		{"SETNX", "a", "5"}, {"SETNX", "d", "5"}, {"SETEX", "e", "100", "v"}, {"PSETEX", "e", "100000", "w"},
		{"PSETEX", "f", "100000", "w"}, {"SETEX", "e", "-1", "v"},
		{"GETSET", "a", "10"}, {"GETSET", "g", "10"}, {"GETDEL", "g"}, {"GETDEL", "g"},
		{"GETEX", "a"}, {"GETEX", "a", "EX", "100"}, {"GETEX", "a", "PX", "100000"},
		{"GETEX", "a", "EXAT", "99999999999"}, {"GETEX", "a", "PXAT", "99999999999000"},
		{"GETEX", "a", "PERSIST"}, {"GETEX", "a", "PERSIST"}, {"GETEX", "a", "EXAT", "1"},
		{"GETEX", "missing", "EX", "100"}, {"GETEX", "missing", "EX", "0"},
		{"MGET", "a", "b", "missing", "c"}, {"MSET", "a", "1", "b", "2", "a", "3"},
		{"MSETNX", "x", "1", "y", "2", "x", "3"}, {"MSETNX", "x", "1", "z", "2"},
		{"APPEND", "a", "xx"}, {"APPEND", "h", "xx"}, {"APPEND", "h", ""},
		{"STRLEN", "missing"}, {"STRLEN", "h"},
		{"INCR", "i"}, {"INCR", "i"}, {"DECR", "i"}, {"INCRBY", "i", "5"}, {"DECRBY", "i", "5"},
		{"DECR", "j"}, {"INCRBY", "k", "2"}, {"DECRBY", "l", "2"},
		{"INCRBYFLOAT", "i", "1.5"}, {"INCRBYFLOAT", "m", "1.5"}, {"INCR", "h"}, {"INCRBYFLOAT", "h", "1"},
		{"GETRANGE", "missing", "0", "1"}, {"GETRANGE", "h", "0", "1"}, {"SUBSTR", "missing", "0", "1"},
		{"SETRANGE", "s2", "0", ""}, {"SETRANGE", "h", "1", ""}, {"SETRANGE", "s2", "2", "x"},
		{"SETRANGE", "h", "0", "Z"}, {"SETRANGE", "s3", "536870911", "xx"},
		{"LCS", "h", "missing"}, {"LCS", "missing", "h"}, {"LCS", "a", "h"},
		{"RPUSH", "list", "x"}, {"LCS", "list", "missing"}, {"LCS", "missing", "list"},
		{"GET", "list"}, {"APPEND", "list", "x"}, {"SET", "list", "s"}, {"GET", "missing"}, {"GET", "a"},
	}},
	{name: "bits", classes: "KEAnm", steps: [][]string{
		{"SETBIT", "b", "7", "1"}, {"SETBIT", "b", "7", "1"}, {"SETBIT", "b", "7", "0"}, {"SETBIT", "b", "100", "0"},
		{"SETBIT", "b", "100", "0"}, {"GETBIT", "missing", "1"}, {"GETBIT", "b", "1"},
		{"BITCOUNT", "missing"}, {"BITCOUNT", "b"}, {"BITPOS", "missing", "1"}, {"BITPOS", "b", "0"},
		{"SET", "s", "1"}, {"SETBIT", "s", "0", "0"}, {"SETBIT", "s", "0", "1"},
		{"BITFIELD", "missing", "GET", "u8", "0"}, {"BITFIELD", "b", "GET", "u8", "0"},
		{"BITFIELD_RO", "missing2", "GET", "u8", "0"},
		{"BITFIELD", "b2", "SET", "u8", "0", "1"}, {"BITFIELD", "b2", "SET", "u8", "0", "1"},
		{"BITFIELD", "b2", "SET", "u8", "8", "0"}, {"BITFIELD", "b2", "SET", "u8", "8", "0"},
		{"BITFIELD", "b2", "INCRBY", "u8", "0", "0"}, {"BITFIELD", "b2", "INCRBY", "u8", "0", "1", "INCRBY", "u8", "0", "-1"},
		{"BITFIELD", "b2", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1000"},
		{"BITFIELD", "b2", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "1000"},
		{"BITFIELD", "b2", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "1000"},
		{"BITFIELD", "b2", "OVERFLOW", "WRAP", "INCRBY", "u8", "0", "256"},
		{"BITFIELD", "b2", "GET", "u8", "0", "SET", "u8", "0", "3"},
		{"BITFIELD", "b3", "OVERFLOW", "FAIL", "SET", "u8", "0", "1000"}, {"GET", "b3"},
		{"BITFIELD", "b3", "OVERFLOW", "FAIL", "SET", "u8", "100", "1000", "SET", "u8", "0", "0"},
		{"BITFIELD", "b4", "OVERFLOW", "FAIL", "SET", "u8", "0", "100"},
		{"BITOP", "AND", "d", "missing", "missing2"}, {"BITOP", "AND", "d", "b", "b2"},
		{"BITOP", "AND", "d", "missing", "missing2"}, {"BITOP", "OR", "d", "missing", "b"},
		{"BITOP", "NOT", "d", "missing"}, {"BITOP", "NOT", "d", "b"}, {"BITOP", "XOR", "d", "b", "b"},
		{"LPUSH", "list", "x"}, {"BITOP", "AND", "d", "missing", "list", "b"}, {"SETBIT", "list", "1", "1"},
	}},
	{name: "generic", classes: "KEAnm", steps: [][]string{
		{"SET", "a", "1"}, {"SET", "b", "2"}, {"DEL", "a", "b", "missing"}, {"DEL", "missing"}, {"UNLINK", "missing"},
		{"SET", "a", "1"}, {"UNLINK", "a"}, {"SET", "a", "1"},
		{"EXISTS", "a", "missing", "a", "missing2"}, {"TYPE", "missing"}, {"TYPE", "a"}, {"TOUCH", "a", "missing"},
		{"EXPIRE", "missing", "10"}, {"EXPIRE", "a", "100"}, {"EXPIRE", "a", "100", "NX"}, {"EXPIRE", "a", "200", "XX"},
		{"EXPIRE", "a", "50", "GT"}, {"EXPIRE", "a", "50", "LT"}, {"PEXPIRE", "a", "100000"},
		{"EXPIREAT", "a", "99999999999"}, {"PEXPIREAT", "a", "99999999999000"}, {"EXPIRE", "a", "-1"},
		{"SET", "a", "1"}, {"EXPIRE", "a", "0"}, {"SET", "a", "1"}, {"PEXPIREAT", "a", "1"}, {"SET", "a", "1"},
		{"TTL", "missing"}, {"PTTL", "missing"}, {"EXPIRETIME", "missing"}, {"PEXPIRETIME", "missing"}, {"TTL", "a"},
		{"PERSIST", "missing"}, {"PERSIST", "a"}, {"EXPIRE", "a", "100"}, {"PERSIST", "a"},
		{"RENAME", "missing", "b"}, {"RENAME", "a", "b"}, {"RENAME", "b", "b"}, {"RENAMENX", "b", "b"},
		{"SET", "c", "3"}, {"RENAMENX", "b", "c"}, {"RENAMENX", "b", "d"}, {"SET", "e", "1", "EX", "100"},
		{"RENAME", "e", "d"}, {"RENAMENX", "missing", "x"},
		{"COPY", "d", "z"}, {"COPY", "d", "z"}, {"COPY", "d", "z", "REPLACE"}, {"COPY", "d", "z", "DB", "1"},
		{"COPY", "d", "z", "DB", "1", "REPLACE"}, {"COPY", "missing", "q"}, {"COPY", "missing", "q", "DB", "2"},
		{"MOVE", "z", "2"}, {"MOVE", "z", "2"}, {"MOVE", "d", "1"}, {"MOVE", "missing", "1"},
		{"SET", "d", "again"}, {"MOVE", "d", "1"},
		{"KEYS", "*"}, {"SCAN", "0", "MATCH", "c", "COUNT", "100"}, {"RANDOMKEY"}, {"DBSIZE"},
		{"OBJECT", "ENCODING", "missing"}, {"OBJECT", "ENCODING", "c"}, {"OBJECT", "REFCOUNT", "missing"},
		{"SELECT", "1"}, {"SET", "in1", "v"}, {"DEL", "z"}, {"GET", "missing"}, {"SELECT", "0"},
		{"SWAPDB", "0", "1"}, {"FLUSHDB"}, {"SELECT", "1"}, {"FLUSHALL"}, {"SELECT", "0"},
	}},
	{name: "hash", classes: "KEAnm", steps: [][]string{
		{"HSET", "h", "a", "1", "b", "2"}, {"HSET", "h", "a", "1"}, {"HMSET", "h", "c", "3"},
		{"HSETNX", "h", "a", "9"}, {"HSETNX", "h", "d", "9"}, {"HSETNX", "h2", "d", "9"},
		{"HGET", "missing", "a"}, {"HGET", "h", "missing"}, {"HMGET", "missing", "a", "b"}, {"HMGET", "h", "a"},
		{"HGETALL", "missing"}, {"HKEYS", "missing"}, {"HVALS", "missing"},
		{"HDEL", "missing", "a"}, {"HDEL", "h", "missing"}, {"HDEL", "h", "a", "b", "a"}, {"HDEL", "h", "c", "d", "x"},
		{"HEXISTS", "missing", "a"}, {"HLEN", "missing"}, {"HSTRLEN", "missing", "a"}, {"HSTRLEN", "h2", "d"},
		{"HINCRBY", "h3", "a", "1"}, {"HINCRBY", "h3", "a", "1"}, {"HINCRBYFLOAT", "h3", "b", "1.5"},
		{"HINCRBYFLOAT", "h4", "b", "1.5"}, {"HINCRBYFLOAT", "h3", "b", "x"}, {"HSET", "h3", "s", "x"},
		{"HINCRBY", "h3", "s", "1"}, {"HINCRBYFLOAT", "h3", "s", "1"},
		{"HRANDFIELD", "missing"}, {"HRANDFIELD", "missing", "2"}, {"HRANDFIELD", "h2"},
		{"HSCAN", "missing", "0"}, {"HSCAN", "h2", "0"},
		{"SET", "s", "x"}, {"HSET", "s", "a", "1"}, {"HGET", "s", "a"},
	}},
	{name: "set", classes: "KEAnm", steps: [][]string{
		{"SADD", "S", "a", "b"}, {"SADD", "S", "a"}, {"SREM", "S", "missing"}, {"SREM", "missing", "a"},
		{"SREM", "S", "a", "b"}, {"SADD", "S", "a", "b", "c"},
		{"SMEMBERS", "missing"}, {"SISMEMBER", "missing", "a"}, {"SMISMEMBER", "missing", "a", "b"},
		{"SMISMEMBER", "S", "a"}, {"SCARD", "missing"}, {"SCARD", "S"},
		{"SPOP", "missing"}, {"SPOP", "missing", "2"}, {"SPOP", "S", "0"}, {"SPOP", "S", "5"},
		{"SADD", "S", "a"}, {"SPOP", "S"}, {"SADD", "S", "a"}, {"SPOP", "S", "1"},
		{"SRANDMEMBER", "missing"}, {"SRANDMEMBER", "missing", "2"}, {"SSCAN", "missing", "0"},
		{"SADD", "S", "a", "b", "c"}, {"SMOVE", "S", "T", "a"}, {"SMOVE", "S", "T", "missing"},
		{"SMOVE", "S", "S", "b"}, {"SMOVE", "S", "S", "missing"}, {"SMOVE", "S", "missing2", "missing"},
		{"SMOVE", "missing", "T", "a"}, {"SADD", "T2", "b"}, {"SMOVE", "S", "T2", "b"}, {"SMOVE", "S", "T", "c"},
		{"SINTER", "missing", "T"}, {"SINTERSTORE", "D", "missing", "T"}, {"SINTERSTORE", "D", "T", "T"},
		{"SINTERSTORE", "D", "T", "T2"}, {"SINTERCARD", "2", "missing", "T"}, {"SINTERCARD", "1", "T"},
		{"SUNION", "missing"}, {"SUNIONSTORE", "D", "missing"}, {"SUNIONSTORE", "D", "T", "missing"},
		{"SUNIONSTORE", "D", "T", "T2"}, {"SUNIONSTORE", "D", "missing"},
		{"SDIFF", "missing", "T"}, {"SDIFFSTORE", "D", "T", "T"}, {"SDIFFSTORE", "D", "T"},
		{"SDIFFSTORE", "D", "missing", "T"}, {"SDIFFSTORE", "D", "T", "missing"},
		{"SET", "str", "x"}, {"SINTERSTORE", "D", "missing", "str"}, {"SMOVE", "T", "str", "a"},
		{"SUNIONSTORE", "str", "T"}, {"TYPE", "str"},
	}},
	{name: "list", classes: "KEAnm", steps: [][]string{
		{"LPUSH", "L", "a", "b"}, {"RPUSH", "L", "c"}, {"LPUSHX", "missing", "a"}, {"RPUSHX", "missing", "a"},
		{"LPUSHX", "L", "z"}, {"RPUSHX", "L", "y"},
		{"LPOP", "missing"}, {"LPOP", "missing", "2"}, {"LPOP", "L"}, {"RPOP", "L"}, {"LPOP", "L", "0"},
		{"RPOP", "L", "0"}, {"LPOP", "L", "10"}, {"RPUSH", "L", "a", "b", "c"}, {"RPOP", "L", "3"},
		{"RPUSH", "L", "a", "b", "c"}, {"LLEN", "missing"}, {"LINDEX", "missing", "0"}, {"LINDEX", "L", "9"},
		{"LRANGE", "missing", "0", "1"}, {"LPOS", "missing", "a"}, {"LPOS", "missing", "a", "COUNT", "0"},
		{"LSET", "missing", "0", "x"}, {"LSET", "L", "0", "x"}, {"LSET", "L", "10", "x"},
		{"LINSERT", "missing", "BEFORE", "a", "b"}, {"LINSERT", "L", "BEFORE", "missing", "q"},
		{"LINSERT", "L", "BEFORE", "b", "q"}, {"LINSERT", "L", "AFTER", "b", "q"},
		{"LREM", "missing", "0", "a"}, {"LREM", "L", "0", "missing"}, {"LREM", "L", "0", "q"},
		{"LREM", "L", "-1", "x"}, {"LREM", "L", "1", "b"}, {"LREM", "L", "0", "c"},
		{"RPUSH", "L", "a", "b", "c"}, {"LTRIM", "missing", "0", "1"}, {"LTRIM", "L", "0", "-1"},
		{"LTRIM", "L", "0", "1"}, {"LTRIM", "L", "5", "10"}, {"RPUSH", "L", "a", "b", "c"},
		{"LMOVE", "L", "M", "LEFT", "RIGHT"}, {"LMOVE", "L", "L", "LEFT", "RIGHT"}, {"LMOVE", "L", "L", "LEFT", "LEFT"},
		{"LMOVE", "missing", "M", "LEFT", "RIGHT"}, {"LMOVE", "L", "M", "RIGHT", "LEFT"},
		{"LMOVE", "L", "M", "RIGHT", "RIGHT"}, {"RPOPLPUSH", "M", "M"}, {"RPOPLPUSH", "M", "N"},
		{"RPOPLPUSH", "missing", "N"}, {"SET", "str", "x"}, {"RPOPLPUSH", "N", "str"}, {"RPOPLPUSH", "str", "N"},
		{"RPUSH", "X", "1", "2"}, {"LMPOP", "2", "missing", "X", "LEFT"}, {"LMPOP", "2", "missing", "X", "RIGHT", "COUNT", "5"},
		{"LMPOP", "1", "missing", "LEFT"}, {"RPUSH", "X", "1"}, {"BLPOP", "missing", "X", "1"},
		{"RPUSH", "X", "1", "2"}, {"BRPOP", "X", "1"}, {"BLMOVE", "X", "Y", "LEFT", "LEFT", "1"},
		{"RPUSH", "X", "1", "2"}, {"BRPOPLPUSH", "X", "Y", "1"}, {"BLMPOP", "1", "1", "X", "LEFT", "COUNT", "9"},
	}},
	{name: "zset", classes: "KEAnm", steps: [][]string{
		{"ZADD", "z", "1", "a", "2", "b"}, {"ZADD", "z", "1", "a"}, {"ZADD", "z", "3", "a"}, {"ZADD", "z", "NX", "5", "a"},
		{"ZADD", "z", "XX", "5", "c"}, {"ZADD", "z", "XX", "CH", "6", "a"}, {"ZADD", "z", "INCR", "1", "a"},
		{"ZADD", "z", "INCR", "0", "a"}, {"ZADD", "z", "NX", "INCR", "1", "a"}, {"ZADD", "missing", "XX", "1", "a"},
		{"ZADD", "z", "GT", "1", "a"}, {"ZADD", "z", "LT", "1", "a"}, {"ZADD", "z", "GT", "CH", "9", "a", "1", "q"},
		{"ZADD", "z", "INCR", "inf", "inf"}, {"ZADD", "z", "INCR", "-inf", "inf"}, {"ZADD", "z", "x", "a"},
		{"ZINCRBY", "z", "1", "b"}, {"ZINCRBY", "z2", "1", "b"},
		{"ZREM", "z", "missing"}, {"ZREM", "missing", "a"}, {"ZREM", "z", "a", "inf"}, {"ZREM", "z2", "b"},
		{"ZCARD", "missing"}, {"ZSCORE", "missing", "a"}, {"ZMSCORE", "missing", "a"}, {"ZRANK", "missing", "a"},
		{"ZREVRANK", "missing", "a"}, {"ZCOUNT", "missing", "0", "1"}, {"ZLEXCOUNT", "missing", "-", "+"},
		{"ZRANGE", "missing", "0", "1"}, {"ZREVRANGE", "missing", "0", "1"}, {"ZRANGEBYSCORE", "missing", "0", "1"},
		{"ZREVRANGEBYSCORE", "missing", "1", "0"}, {"ZRANGEBYLEX", "missing", "-", "+"},
		{"ZREVRANGEBYLEX", "missing", "+", "-"}, {"ZRANDMEMBER", "missing"}, {"ZRANDMEMBER", "missing", "2"},
		{"ZSCAN", "missing", "0"},
		{"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"},
		{"ZREMRANGEBYRANK", "missing", "0", "1"}, {"ZREMRANGEBYRANK", "z", "10", "11"}, {"ZREMRANGEBYRANK", "z", "0", "0"},
		{"ZREMRANGEBYSCORE", "z", "100", "200"}, {"ZREMRANGEBYSCORE", "z", "2", "2"}, {"ZREMRANGEBYLEX", "z", "[x", "[y"},
		{"ZREMRANGEBYSCORE", "z", "-inf", "+inf"}, {"ZADD", "z", "0", "a", "0", "b", "0", "c"},
		{"ZREMRANGEBYLEX", "z", "[a", "[b"}, {"ZREMRANGEBYLEX", "z", "-", "+"},
		{"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"},
		{"ZPOPMIN", "missing"}, {"ZPOPMIN", "z"}, {"ZPOPMAX", "z"}, {"ZPOPMIN", "z", "0"}, {"ZPOPMAX", "z", "10"},
		{"ZADD", "z", "1", "a", "2", "b", "3", "c"}, {"ZMPOP", "2", "missing", "z", "MIN"},
		{"ZMPOP", "2", "missing", "z", "MAX", "COUNT", "10"}, {"ZMPOP", "1", "missing", "MIN"},
		{"ZADD", "z", "1", "a", "2", "b"}, {"BZPOPMIN", "missing", "z", "1"}, {"BZPOPMAX", "z", "1"},
		{"ZADD", "z", "1", "a", "2", "b"}, {"BZMPOP", "1", "1", "z", "MIN", "COUNT", "5"},
		{"SET", "str", "x"}, {"ZADD", "str", "1", "a"}, {"ZPOPMIN", "str"},
	}},
	{name: "zset-ops", classes: "KEAnm", steps: [][]string{
		{"ZADD", "z", "1", "a", "2", "b", "3", "c"}, {"SADD", "S", "a", "x"},
		{"ZRANGESTORE", "D", "z", "0", "-1"}, {"ZRANGESTORE", "D", "z", "10", "20"}, {"ZRANGESTORE", "D", "missing", "0", "-1"},
		{"ZRANGESTORE", "D", "z", "0", "-1"}, {"ZRANGESTORE", "D", "z", "5", "6"},
		{"ZRANGESTORE", "D", "z", "(1", "+inf", "BYSCORE", "LIMIT", "0", "1"},
		{"ZUNION", "2", "z", "missing"}, {"ZUNIONSTORE", "D", "2", "z", "missing"}, {"ZUNIONSTORE", "D", "1", "missing"},
		{"ZUNIONSTORE", "D", "2", "z", "S", "WEIGHTS", "1", "2"}, {"ZUNIONSTORE", "D", "2", "missing", "z", "WEIGHTS", "x", "1"},
		{"ZINTER", "2", "z", "missing"}, {"ZINTERSTORE", "D", "2", "z", "z"}, {"ZINTERSTORE", "D", "2", "z", "missing"},
		{"ZINTERSTORE", "D", "2", "z", "S"}, {"ZINTERSTORE", "D", "2", "S", "missing"},
		{"ZDIFF", "2", "missing", "z"}, {"ZDIFFSTORE", "D", "1", "z"}, {"ZDIFFSTORE", "D", "2", "z", "z"},
		{"ZDIFFSTORE", "D", "2", "missing", "z"}, {"ZDIFFSTORE", "D", "2", "z", "S"},
		{"ZINTERCARD", "2", "missing", "z"}, {"ZINTERCARD", "1", "z"},
		{"SET", "str", "x"}, {"ZUNIONSTORE", "D", "3", "missing", "str", "z"}, {"ZUNIONSTORE", "str", "1", "z"},
		{"ZINTERCARD", "2", "missing", "str"},
	}},
	{name: "blocking-served", classes: "KEAnm", steps: [][]string{
		{"@bg", "c1", "BLPOP", "L", "5"}, {"RPUSH", "L", "x"}, {"@read", "c1"},
		{"@bg", "c1", "BLPOP", "L", "5"}, {"RPUSH", "L", "x", "y"}, {"@read", "c1"},
		{"DEL", "L"}, {"@bg", "c1", "BRPOP", "L", "L2", "5"}, {"LPUSH", "L2", "a", "b"}, {"@read", "c1"}, {"DEL", "L", "L2"},
		{"@bg", "c1", "BLMOVE", "A", "M", "LEFT", "RIGHT", "5"}, {"RPUSH", "A", "x"}, {"@read", "c1"},
		{"@bg", "c1", "BLMOVE", "B", "B", "LEFT", "RIGHT", "5"}, {"RPUSH", "B", "x"}, {"@read", "c1"},
		{"@bg", "c1", "BRPOPLPUSH", "C", "M2", "5"}, {"RPUSH", "C", "x"}, {"@read", "c1"},
		{"@bg", "c1", "BLMPOP", "5", "2", "E", "F", "RIGHT", "COUNT", "3"}, {"RPUSH", "F", "a", "b"}, {"@read", "c1"},
		{"@bg", "c1", "BLPOP", "G", "5"}, {"@bg", "c2", "BLPOP", "G", "5"}, {"RPUSH", "G", "a", "b", "c"},
		{"@read", "c1"}, {"@read", "c2"},
		{"@bg", "c1", "BLMOVE", "H", "I", "LEFT", "LEFT", "5"}, {"@bg", "c2", "BLPOP", "I", "5"},
		{"RPUSH", "H", "x"}, {"@read", "c1"}, {"@read", "c2"},
		{"@bg", "c1", "BZPOPMIN", "Z", "5"}, {"ZADD", "Z", "1", "a", "2", "b"}, {"@read", "c1"},
		{"@bg", "c1", "BZPOPMAX", "Z2", "5"}, {"ZADD", "Z2", "1", "a"}, {"@read", "c1"},
		{"@bg", "c1", "BZMPOP", "5", "1", "Z3", "MAX", "COUNT", "9"}, {"ZADD", "Z3", "1", "a", "2", "b"}, {"@read", "c1"},
		{"@bg", "c1", "BLPOP", "J", "5"}, {"MULTI"}, {"RPUSH", "J", "a"}, {"RPUSH", "J", "b"}, {"LPOP", "J"},
		{"EXEC"}, {"@read", "c1"},
		{"@bg", "c1", "BLPOP", "K", "5"}, {"SET", "src", "x"}, {"LPUSH", "tmp", "v"}, {"RENAME", "tmp", "K"}, {"@read", "c1"},
	}},
	// Lazy expiry inside EXEC: with a self-subscribed connection Redis puts
	// "expired" inside EXEC's reply, Spillway before it (the engine's
	// observer does not know the client); the only known difference.
	{name: "multi-exec", classes: "KEAnm", notSelf: true, steps: [][]string{
		{"MULTI"}, {"SET", "a", "1"}, {"INCR", "a"}, {"GET", "missing"}, {"LPUSH", "l", "x"}, {"LPOP", "l"},
		{"SADD", "s", "m"}, {"EXPIRE", "s", "100"}, {"DEL", "s", "missing"}, {"EXEC"},
		{"MULTI"}, {"SET", "b", "1", "PX", "50"}, {"INCR", "b"}, {"EXEC"}, {"@sleep", "120"},
		{"MULTI"}, {"GET", "b"}, {"SET", "b", "2"}, {"EXEC"},
		{"MULTI"}, {"SET", "c", "1"}, {"NOSUCHCOMMAND"}, {"EXEC"},
		{"MULTI"}, {"SET", "c", "1"}, {"LPUSH", "c", "x"}, {"SET", "d", "2"}, {"EXEC"},
		{"WATCH", "a"}, {"MULTI"}, {"SET", "a", "9"}, {"EXEC"}, {"MULTI"}, {"DISCARD"},
	}},
	{name: "expiry", classes: "KEAnm", steps: [][]string{
		// A hot key expired by a read (or the sweeper: same events).
		{"SET", "a", "1", "PX", "50"}, {"@sleep", "120"}, {"GET", "a"},
		{"SET", "a", "1", "PX", "50"}, {"@sleep", "120"}, {"SET", "a", "2"},
		{"SET", "a", "1", "PX", "50"}, {"@sleep", "120"}, {"EXISTS", "a"},
		{"SET", "a", "1", "PX", "50"}, {"@sleep", "120"}, {"DEL", "a"},
		{"HSET", "h", "f", "v"}, {"PEXPIRE", "h", "50"}, {"@sleep", "120"}, {"HSET", "h", "f", "v"},
		{"RPUSH", "l", "v"}, {"PEXPIRE", "l", "50"}, {"@sleep", "120"}, {"LPUSH", "l", "v"},
		{"SET", "src", "1"}, {"SET", "dst", "2", "PX", "50"}, {"@sleep", "120"}, {"RENAME", "src", "dst"},
		{"SET", "dst2", "1", "PX", "50"}, {"@sleep", "120"}, {"COPY", "dst", "dst2"},
		{"SET", "g", "1", "PX", "50"}, {"@gone", "g"}, {"GET", "g"},
		// SMOVE looks its destination up even when its source is missing.
		{"SET", "sm", "1", "PX", "50"}, {"@sleep", "120"}, {"SMOVE", "missing", "sm", "a"},
		// A STORE over an expired destination.
		{"SADD", "S", "a"}, {"SET", "st", "1", "PX", "50"}, {"@sleep", "120"}, {"SUNIONSTORE", "st", "S"},
		// A cold key expired by a read.
		{"SET", "c", "1", "PX", "200"}, {"@demote", "c"}, {"@gone", "c"}, {"GET", "c"},
		{"SET", "c", "1", "PX", "150"}, {"@demote", "c"}, {"@sleep", "250"}, {"GET", "c"},
		{"SADD", "cs", "a", "b"}, {"PEXPIRE", "cs", "150"}, {"@demote", "cs"}, {"@sleep", "250"}, {"SCARD", "cs"},
		{"ZADD", "cz", "1", "a"}, {"PEXPIRE", "cz", "150"}, {"@demote", "cz"}, {"@sleep", "250"}, {"ZADD", "cz", "1", "a"},
		// Cold keys expired by the background sweeper (nothing reads them).
		{"SET", "s1", "1", "PX", "100"}, {"@demote", "s1"}, {"@sleep", "500"},
		{"RPUSH", "s2", "a"}, {"PEXPIRE", "s2", "100"}, {"@demote", "s2"}, {"@sleep", "500"},
		// A hot key expired by the sweeper.
		{"SET", "s3", "1", "PX", "100"}, {"@sleep", "500"}, {"DBSIZE"},
	}},
	{name: "cold-structures", classes: "KEAnm", steps: [][]string{
		{"HSET", "h", "a", "1", "b", "2"}, {"SADD", "s", "a", "b"}, {"RPUSH", "l", "a", "b", "c"},
		{"ZADD", "z", "1", "a", "2", "b"}, {"SET", "str", "v"},
		{"@demote", "h", "s", "l", "z", "str"},
		{"HSET", "h", "c", "3"}, {"HDEL", "h", "a", "b", "c"}, {"HGET", "h", "a"},
		{"SREM", "s", "a"}, {"SMOVE", "s", "s2", "b"}, {"SISMEMBER", "s", "b"},
		{"LPOP", "l"}, {"RPOP", "l", "5"}, {"LLEN", "l"},
		{"ZREM", "z", "a"}, {"ZINCRBY", "z", "1", "b"}, {"ZPOPMIN", "z"}, {"ZCARD", "z"},
		{"HSET", "h", "a", "1"}, {"SADD", "s", "a"}, {"RPUSH", "l", "a"}, {"ZADD", "z", "1", "a"},
		{"@demote", "h", "s", "l", "z"}, // str is still cold
		{"RENAME", "h", "h2"}, {"COPY", "s", "s3"}, {"MOVE", "l", "3"}, {"APPEND", "str", "x"},
		{"@demoteany", "h2", "s", "s3", "z", "str"},
		{"DEL", "h2", "s", "s3", "z", "str", "missing"},
	}},
	{name: "databases", classes: "KEAnm", steps: [][]string{
		{"SELECT", "5"}, {"SET", "k", "v"}, {"GET", "missing"}, {"LPUSH", "l", "a"},
		{"MOVE", "k", "6"}, {"COPY", "l", "l", "DB", "7"}, {"SELECT", "7"}, {"LPOP", "l"},
		{"SELECT", "5"}, {"SWAPDB", "5", "6"}, {"DEL", "k"}, {"SELECT", "0"},
	}},
	{name: "config-set-at-run-time", classes: "", steps: [][]string{
		{"SET", "a", "1"},
		{"CONFIG", "SET", "notify-keyspace-events", "E$"}, {"SET", "a", "2"}, {"GET", "missing"},
		{"CONFIG", "SET", "notify-keyspace-events", "Km"}, {"SET", "a", "3"}, {"GET", "missing"},
		{"CONFIG", "SET", "notify-keyspace-events", "Ex"}, {"SET", "e", "1", "PX", "50"}, {"@sleep", "150"},
		{"MULTI"}, {"CONFIG", "SET", "notify-keyspace-events", "KA"}, {"SET", "b", "1"}, {"EXEC"},
		{"SET", "e", "1", "PX", "50"}, {"@sleep", "150"},
		{"CONFIG", "SET", "notify-keyspace-events", ""}, {"SET", "a", "4"},
	}},
}

// notifyFilterSteps exercise every class; TestNotifyDiff runs them under
// several class filters.
var notifyFilterSteps = [][]string{
	{"SET", "s", "1"}, {"APPEND", "s", "2"}, {"GET", "missing"}, {"EXPIRE", "s", "100"}, {"PERSIST", "s"},
	{"LPUSH", "l", "a"}, {"LPOP", "l"}, {"SADD", "st", "a"}, {"SREM", "st", "a"},
	{"HSET", "h", "f", "v"}, {"HDEL", "h", "f"}, {"ZADD", "z", "1", "a"}, {"ZREM", "z", "a"},
	{"SET", "x", "1", "PX", "50"}, {"@sleep", "150"}, {"GET", "x"}, {"RENAME", "s", "t"}, {"DEL", "t"},
}

// notifyFilterClasses are the class sets notifyFilterSteps run under.
var notifyFilterClasses = []string{"KEA", "El", "Kx", "Egn", "Em", "Ex", "", "K$", "Esh", "Kz", "KEg", "AK", "nm", "KEe"}

func allNotifyCases() []notifyCase {
	cases := append([]notifyCase(nil), notifyCases...)
	for _, cl := range notifyFilterClasses {
		cases = append(cases, notifyCase{name: "filter-" + cl, classes: cl, steps: notifyFilterSteps})
	}
	return cases
}

// startNotifySpillway starts Spillway with the test hooks (DEBUG DEMOTE)
// and cold keys that stay cold (served from disk, never promoted).
func startNotifySpillway(t *testing.T) *harness.Server {
	t.Helper()
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	return harness.StartSpillway(t, "", "--appendfsync", "no", "--loglevel", "warning",
		"--promote-min-hits", "1000000")
}

// TestNotifyDiff compares the keyspace events of redis-server and Spillway
// for every case, with the subscriber in RESP2 and in RESP3.
func TestNotifyDiff(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{} // event names Redis sent
	modes := []int{2, 3, notifySelfMode}
	// The setting is server-wide: each mode has its own pair of servers,
	// and the modes run in parallel.
	var refs, spws []*harness.Server
	for range modes {
		refs, spws = append(refs, harness.StartRedis(t)), append(spws, startNotifySpillway(t))
	}
	t.Run("modes", func(t *testing.T) {
		for i, proto := range modes {
			mode := fmt.Sprintf("resp%d", proto)
			if proto == notifySelfMode {
				mode = "self-resp3"
			}
			ref, spw := refs[i], spws[i]
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				for _, nc := range allNotifyCases() {
					if proto != notifySelfMode || !nc.notSelf {
						runNotifyDiff(t, ref, spw, nc, proto, &mu, seen)
					}
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	for _, name := range notifyEventNames {
		if !seen[name] {
			t.Errorf("no case makes Redis send %q: the table lost coverage", name)
		}
	}
}

// runNotifyDiff runs nc on both servers and compares; it adds the names
// of the events Redis sent to seen.
func runNotifyDiff(t *testing.T, ref, spw *harness.Server, nc notifyCase, proto int, mu *sync.Mutex, seen map[string]bool) {
	t.Helper()
	t.Run(nc.name, func(t *testing.T) {
		want := runNotifyCase(t, ref, false, nc, proto)
		got := runNotifyCase(t, spw, true, nc, proto)
		compareNotifyRuns(t, want, got)
		silent := !strings.ContainsAny(nc.classes, "KE") || nc.classes == "KEe"
		for _, st := range nc.steps {
			silent = silent && st[0] != "CONFIG" // the classes change
		}
		if n := countEvents(want.events); silent != (n == 0) {
			t.Fatalf("redis sent %d events with classes %q: the case tests nothing", n, nc.classes)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range want.events {
			if len(ev.Elems) != 4 {
				continue // a reply's place (self-subscribed)
			}
			if ch := ev.Elems[2].Str; strings.HasPrefix(ch, "__keyevent@") {
				seen[ch[strings.Index(ch, ":")+1:]] = true
			}
		}
	})
}

// notifyEventNames are the events Redis 7.0 sends for the commands
// Spillway has; TestNotifyDiff must see each of them.
var notifyEventNames = []string{
	"new", "keymiss", "expired", "set", "del", "expire", "persist", "rename_from", "rename_to",
	"move_from", "move_to", "copy_to", "append", "incrby", "incrbyfloat", "setrange", "setbit",
	"lpush", "rpush", "lpop", "rpop", "linsert", "lset", "lrem", "ltrim",
	"hset", "hincrby", "hincrbyfloat", "hdel", "sadd", "srem", "spop",
	"sinterstore", "sunionstore", "sdiffstore", "zadd", "zincr", "zrem", "zremrangebyscore",
	"zremrangebyrank", "zremrangebylex", "zpopmin", "zpopmax", "zinterstore", "zunionstore",
	"zdiffstore", "zrangestore",
}

// notifySelfMode is the mode where the connection running the commands
// subscribes itself (RESP3): each command is followed by a PING, and
// everything received up to its reply is recorded in order.
const notifySelfMode = 0

// notifyRun is what one server did in a case.
type notifyRun struct {
	args    [][]string      // the recorded steps' commands, in order
	steps   []string        // their descriptions
	replies []harness.Reply // their replies
	events  []harness.Reply // frames the subscriber received, in order
}

// runNotifyCase runs nc on srv (Spillway when spill) with a subscriber
// speaking proto (notifySelfMode: the main connection itself), and
// returns the replies and the events received.
func runNotifyCase(t *testing.T, srv *harness.Server, spill bool, nc notifyCase, proto int) notifyRun {
	t.Helper()
	var run notifyRun
	dial := func(p int) *harness.Conn {
		c := harness.MustDial(t, srv.Addr())
		c.Timeout = 10 * time.Second
		if p == 3 || p == notifySelfMode {
			if r := c.Do("HELLO", "3"); r.Type != '%' {
				t.Fatalf("%s: HELLO 3: %s", srv.Addr(), r.String())
			}
		}
		return c
	}
	self := proto == notifySelfMode
	main, side := dial(proto), dial(2)
	if !self {
		main = dial(2)
	}
	for _, cmd := range [][]string{{"FLUSHALL"}, {"CONFIG", "SET", "notify-keyspace-events", nc.classes}} {
		if r := side.Do(cmd...); r.Str != "OK" {
			t.Fatalf("%s: %s", fmtArgs(cmd), r.String())
		}
	}
	defer side.Do("CONFIG", "SET", "notify-keyspace-events", "")
	sub := main
	if !self {
		sub = dial(proto)
	}
	if r := sub.Do("PSUBSCRIBE", "__key*__:*"); r.IsError() || r.Err != nil {
		t.Fatalf("PSUBSCRIBE: %s", r.String())
	}
	bg := map[string]*harness.Conn{}
	blocked := 0
	record := func(args []string, desc string, r harness.Reply) {
		run.args = append(run.args, args)
		run.steps = append(run.steps, desc)
		run.replies = append(run.replies, r)
	}
	// do runs a command on main. Self-subscribed, it sends a PING after
	// it and records the events that come before, between and after its
	// reply, with a marker where the reply came; queued in MULTI, the
	// command replies alone (and notifies nothing).
	inMulti, token := false, 0
	do := func(args []string) harness.Reply {
		name := strings.ToUpper(args[0])
		queued := inMulti && name != "EXEC" && name != "DISCARD" || name == "MULTI"
		if !self {
			return main.Do(args...)
		}
		token++
		ping := "ping-" + strconv.Itoa(token)
		if queued && inMulti {
			return main.Do(args...) // the transaction notifies nothing yet
		}
		if queued {
			// A PING after MULTI would be queued: collect what was pushed
			// so far (the sweeper's events), then run MULTI alone.
			if err := main.Send("PING", ping); err != nil {
				t.Fatal(err)
			}
			for n := 0; ; n++ {
				r := main.Read()
				if r.Err != nil || n > 100000 {
					t.Fatalf("%s: PING: %v", fmtArgs(args), r.Err)
				}
				if r.Type == '$' && r.Str == ping {
					break
				}
				run.events = append(run.events, r)
			}
			r := main.Do(args...)
			inMulti = inMulti || name == "MULTI" && r.Str == "OK"
			return r
		}
		inMulti = false
		if err := main.Send(args...); err != nil {
			t.Fatal(err)
		}
		if err := main.Send("PING", ping); err != nil {
			t.Fatal(err)
		}
		var reply harness.Reply
		for n := 0; ; n++ {
			r := main.Read()
			switch {
			case r.Err != nil:
				t.Fatalf("%s: %v", fmtArgs(args), r.Err)
			case r.Type == '$' && r.Str == ping:
				return reply
			case r.Type == '>':
				run.events = append(run.events, r)
			default:
				reply = r
				run.events = append(run.events, harness.Reply{Raw: []byte("(the reply to " + fmtArgs(args) + ")")})
			}
			if n > 100000 {
				t.Fatalf("%s: no PING reply", fmtArgs(args))
			}
		}
	}
	for _, st := range nc.steps {
		switch st[0] {
		case "@sleep":
			ms, _ := strconv.Atoi(st[1])
			pause(time.Duration(ms) * time.Millisecond)
		case "@demote", "@demoteany":
			if !spill {
				continue
			}
			r := side.Do(append([]string{"DEBUG", "DEMOTE"}, st[1:]...)...)
			if r.Type != ':' || st[0] == "@demote" && r.Int != int64(len(st)-1) {
				t.Fatalf("spillway: DEBUG DEMOTE %s: %s, want %d", fmtArgs(st[1:]), r.String(), len(st)-1)
			}
		case "@bg":
			c := bg[st[1]]
			if c == nil {
				c = dial(2)
				bg[st[1]] = c
			}
			err := c.Send(st[2:]...)
			if err == nil {
				err = c.Flush()
			}
			if err != nil {
				t.Fatalf("send %s: %v", fmtArgs(st[2:]), err)
			}
			blocked++
			waitBlockedClients(t, side, blocked)
		case "@read":
			blocked--
			record(nil, st[1]+": (blocked reply)", bg[st[1]].Read())
		case "@gone":
			gone := false
			for i := 0; i < 2000 && !gone; i++ {
				gone = do([]string{"OBJECT", "ENCODING", st[1]}).Null
				if !gone {
					pause(time.Millisecond)
				}
			}
			if !gone {
				t.Fatalf("%s did not expire within 2 s", st[1])
			}
			if self { // the polls' replies are not compared
				kept := run.events[:0]
				for _, ev := range run.events {
					if !strings.HasPrefix(string(ev.Raw), "(the reply to OBJECT ENCODING") {
						kept = append(kept, ev)
					}
				}
				run.events = kept
			}
		default:
			record(st, fmtArgs(st), do(st))
		}
	}
	if self {
		return run
	}
	if r := main.Do("PUBLISH", nEnd, "end"); r.Type != ':' {
		t.Fatalf("PUBLISH: %s", r.String())
	}
	for i := 0; ; i++ {
		r := sub.Read()
		if r.Err != nil {
			t.Fatalf("subscriber: %v (after %d events)", r.Err, len(run.events))
		}
		if len(r.Elems) == 4 && r.Elems[2].Str == nEnd {
			break
		}
		if i > 100000 {
			t.Fatalf("subscriber: no end marker after %d frames", i)
		}
		run.events = append(run.events, r)
	}
	return run
}

// waitBlockedClients waits (bounded, about 5 s) until INFO clients reports
// at least n blocked clients.
func waitBlockedClients(t *testing.T, c *harness.Conn, n int) {
	t.Helper()
	var last string
	for i := 0; i < 500; i++ {
		info, err := harness.Info(c, "clients")
		if err != nil {
			t.Fatal(err)
		}
		last = info["blocked_clients"]
		if b, err := strconv.Atoi(last); err == nil && b >= n {
			return
		}
		pause(10 * time.Millisecond)
	}
	t.Fatalf("blocked_clients is %s, want %d", last, n)
}

// compareNotifyRuns fails t where Spillway's run differs from Redis's.
func compareNotifyRuns(t *testing.T, want, got notifyRun) {
	t.Helper()
	for i := range min(len(want.replies), len(got.replies)) {
		if ok, why := compareReplies(want.args[i], want.replies[i], got.replies[i]); !ok && !sameNotifyReply(want.steps[i], want.replies[i], got.replies[i]) {
			t.Errorf("step %d %s: %s: redis %s, spillway %s", i, want.steps[i], why,
				fmtRaw(want.replies[i].Raw), fmtRaw(got.replies[i].Raw))
		}
	}
	if len(want.replies) != len(got.replies) {
		t.Fatalf("redis recorded %d replies, spillway %d", len(want.replies), len(got.replies))
	}
	show := func(evs []harness.Reply, i int) string {
		if i < len(evs) {
			return eventString(evs[i])
		}
		return "(none)"
	}
	for i := range max(len(want.events), len(got.events)) {
		if i < len(want.events) && i < len(got.events) && string(want.events[i].Raw) == string(got.events[i].Raw) {
			continue
		}
		var ctx strings.Builder
		for j := max(0, i-6); j < i; j++ {
			fmt.Fprintf(&ctx, "  %s\n", eventString(want.events[j]))
		}
		t.Fatalf("event %d differs (redis sent %d events, spillway %d):\nredis:    %s\nspillway: %s\nevents before:\n%s",
			i, len(want.events), len(got.events), show(want.events, i), show(got.events, i), ctx.String())
	}
}

// sameNotifyReply accepts replies that legitimately differ between the
// servers: RANDOMKEY's pick.
func sameNotifyReply(step string, a, b harness.Reply) bool {
	return strings.HasPrefix(step, "RANDOMKEY") && a.Type == b.Type
}

// countEvents counts the pmessage frames in evs.
func countEvents(evs []harness.Reply) int {
	n := 0
	for _, ev := range evs {
		if len(ev.Elems) == 4 {
			n++
		}
	}
	return n
}

// eventString renders a pmessage frame as "channel message".
func eventString(r harness.Reply) string {
	if len(r.Elems) == 4 {
		return r.Elems[2].Str + " " + r.Elems[3].Str
	}
	return fmtRaw(r.Raw)
}

// TestNotifyNoEvictedOnDemotion loads thousands of keys into Spillway
// with a 1 MB maxmemory, so that most are demoted to disk, with every
// class enabled (A includes e, evicted): demotion is not eviction, so the
// subscriber must get exactly the writes' and the expiries' events and no
// "evicted". Reading keys back (promoting some, demoting others) sends
// nothing either.
func TestNotifyNoEvictedOnDemotion(t *testing.T) {
	const keys = 5000
	spw := harness.StartSpillway(t, "", "--maxmemory", "1mb", "--appendfsync", "no", "--loglevel", "warning",
		"--promote-min-hits", "1")
	c, sub := harness.MustDial(t, spw.Addr()), harness.MustDial(t, spw.Addr())
	if r := c.Do("CONFIG", "SET", "notify-keyspace-events", "KEA"); r.Str != "OK" {
		t.Fatalf("CONFIG SET: %s", r.String())
	}
	if r := sub.Do("PSUBSCRIBE", "__key*__:*"); r.Err != nil || r.IsError() {
		t.Fatalf("PSUBSCRIBE: %s", r.String())
	}
	before := tieringStats(t, c, "embedded")["demotions"]
	val := strings.Repeat("v", 1000)
	for i := range keys {
		if err := c.Send("SET", fmt.Sprintf("key:%d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys {
		if r := c.Read(); r.Str != "OK" {
			t.Fatalf("SET key:%d: %s", i, r.String())
		}
	}
	for i := 0; i < keys; i += 7 {
		if r := c.Do("GET", fmt.Sprintf("key:%d", i)); r.Str != val {
			t.Fatalf("GET key:%d: %s", i, harness.Trunc(r.String(), 80))
		}
	}
	if demoted := tieringStats(t, c, "embedded")["demotions"] - before; demoted < keys/2 {
		t.Fatalf("only %d demotions: the test needs most keys demoted", demoted)
	}
	if r := c.Do("PUBLISH", nEnd, "end"); r.Type != ':' {
		t.Fatalf("PUBLISH: %s", r.String())
	}
	counts := map[string]int{}
	for n := 0; ; n++ {
		r := sub.Read()
		if r.Err != nil {
			t.Fatalf("subscriber: %v after %d events", r.Err, n)
		}
		if len(r.Elems) != 4 {
			t.Fatalf("subscriber: unexpected frame %s", fmtRaw(r.Raw))
		}
		ch, msg := r.Elems[2].Str, r.Elems[3].Str
		if ch == nEnd {
			break
		}
		if strings.Contains(ch+" "+msg, "evicted") {
			t.Fatalf("event %d: %s %s: a demotion was reported as an eviction", n, ch, msg)
		}
		if strings.HasPrefix(ch, "__keyspace@0__:") {
			counts[msg]++
		}
	}
	if counts["set"] != keys || len(counts) != 1 {
		t.Fatalf("keyspace events %v, want exactly %d set", counts, keys)
	}
}
