// Package uptier is the placement policy of upstream mode, where an
// upstream Redis is the hot tier and the tiering engine (with no hot budget
// of its own) holds the cold copies: which keys are cold (ColdIndex), which
// keys to demote and when (Demoter: sampling, ranking by the upstream's
// access clock, the memory budget, writer throttling), how a demotion is
// ordered against client requests (KeyLocks, Gate) and made safe against
// racing writes (WATCH ... MULTI/UNLINK/EXEC), and what a cold copy is in
// the store (Value, Import, DropKey, ColdSize). Reload admission is
// tiering.Admission, shared with embedded mode.
//
// It moves no bytes itself: it talks to the upstream through Upstream and
// Conn, which proxy/upstream/link implements over its connections (sending the
// commands and parsing the replies). This package must not import proxy.
package uptier

import (
	"errors"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/tiering/stream"
)

// ErrUnavailable is wrapped by the errors of a Conn whose connection to
// the upstream was lost (the outcome of a request in flight is unknown).
// proxy/upstream/link's ErrUnavailable is this error.
var ErrUnavailable = errors.New("upstream unavailable")

// Upstream is the upstream Redis as the demoter sees it.
type Upstream interface {
	// Dial opens a new connection (RESP2) on database db.
	Dial(db int) (Conn, error)
	// DB is the database clients start in (the URL's).
	DB() int
}

// Conn is one connection to the upstream, used by one goroutine at a time.
// Each method is one pipelined round trip. An error wrapping
// ErrUnavailable means the connection is lost and must be closed; other
// errors are replies the upstream refused or could not be parsed.
type Conn interface {
	SetDeadline(t time.Time) error
	Close() error
	// Select switches the connection to database db.
	Select(db int) error
	// UsedMemory returns used_memory (INFO memory).
	UsedMemory() (int64, error)
	// Poll returns used_memory and which of databases 0..databases-1 hold
	// keys (INFO memory, INFO keyspace).
	Poll(databases int) (used int64, dbs []int, err error)
	// RandomKeys sends n RANDOMKEYs and returns their replies (nil for an
	// empty database).
	RandomKeys(n int) ([][]byte, error)
	// Object sends OBJECT sub key for each key (IDLETIME, FREQ).
	Object(sub string, keys [][]byte) ([]ObjectReply, error)
	// WatchDescribe WATCHes keys and returns each one's TYPE, PEXPIRETIME
	// and OBJECT ENCODING.
	WatchDescribe(keys [][]byte) ([]KeyInfo, error)
	// ReadChunks reads part of each key's value (see Chunk).
	ReadChunks(reqs []Chunk) ([]ChunkReply, error)
	// Unwatch sends UNWATCH, ignoring the reply.
	Unwatch()
	// UnlinkWatched sends MULTI, UNLINK keys, EXEC and reports whether
	// EXEC ran (false: a watched key changed since WatchDescribe). An
	// error wrapping ErrUnavailable leaves it unknown whether the keys
	// were removed; another error is EXEC's error reply (nothing removed).
	UnlinkWatched(keys [][]byte) (applied bool, err error)
	// Scan sends SCAN cursor COUNT count.
	Scan(cursor uint64, count int) (next uint64, keys [][]byte, err error)
}

// ObjectReply is the reply to one OBJECT subcommand.
type ObjectReply struct {
	N     int64
	IsInt bool // an integer reply (N)
	IsErr bool // an error reply
}

// KeyInfo is what WatchDescribe returns for a key.
type KeyInfo struct {
	Type        string // TYPE's reply
	PExpireTime int64  // PEXPIRETIME's reply: -1 no expiry, -2 no key
	Encoding    string // OBJECT ENCODING's reply
}

// Chunk asks for part of a key's value: a string whole (GET); Count list
// elements (LRANGE) or sorted set members with their scores (ZRANGE
// WITHSCORES) from index From; about Count hash fields and values (HSCAN)
// or set members (SSCAN) from cursor From; a stream whole (DUMP, From and
// Count unused).
type Chunk struct {
	Key   []byte
	Type  codec.Type
	From  uint64
	Count int
}

// ChunkReply is a chunk read: Str for a string (nil for a nil reply);
// Items for the others (a sorted set's members and scores alternate, as do
// a hash's fields and values); Cursor the next SCAN cursor (hash, set);
// Stream a stream's model, decoded from its DUMP payload (nil when the key
// is gone, or when the upstream's payload is of a kind it would not take
// back by RESTORE: the stream then stays upstream).
type ChunkReply struct {
	Str    []byte
	Items  [][]byte
	Cursor uint64
	Stream *stream.Stream
}
