package streams

import (
	"strconv"

	"github.com/spillway/spillway/tiering/stream"
)

// Replication of consumer groups, as Redis 7.0's t_stream.c: what a read
// or a claim does to a group's pending entries is propagated as
// idempotent XCLAIMs (streamPropagateXCLAIM), a group's last ID moved
// without one as XGROUP SETID (streamPropagateGroupID), and a consumer a
// NOACK read created as XGROUP CREATECONSUMER
// (streamPropagateConsumerCreation). The argument lists are built only
// when a replica attached once (the callers check Replicating).

// propFunc records one command for the replication stream: Ctx.Propagate,
// or Events.Propagate for a blocked reader served later.
type propFunc func(args ...[]byte)

// xclaimArgs is XCLAIM key group consumer 0 id TIME delivery-time
// RETRYCOUNT delivery-count FORCE JUSTID LASTID group-last-id: pending
// entry n (owned by a consumer) as a replica must hold it.
func xclaimArgs(key, group, id []byte, n *stream.NACK, g *stream.Group) [][]byte {
	return [][]byte{
		[]byte("XCLAIM"), key, group, n.Consumer.Name, []byte("0"), id,
		[]byte("TIME"), strconv.AppendInt(nil, n.DeliveryTime, 10),
		[]byte("RETRYCOUNT"), strconv.AppendInt(nil, n.DeliveryCount, 10),
		[]byte("FORCE"), []byte("JUSTID"),
		[]byte("LASTID"), stream.AppendID(nil, g.LastID),
	}
}

// setIDArgs is XGROUP SETID key group last-id ENTRIESREAD entries-read.
func setIDArgs(key, group []byte, g *stream.Group) [][]byte {
	return [][]byte{
		[]byte("XGROUP"), []byte("SETID"), key, group, stream.AppendID(nil, g.LastID),
		[]byte("ENTRIESREAD"), strconv.AppendInt(nil, g.EntriesRead, 10),
	}
}

// createConsumerArgs is XGROUP CREATECONSUMER key group consumer.
func createConsumerArgs(key, group, consumer []byte) [][]byte {
	return [][]byte{[]byte("XGROUP"), []byte("CREATECONSUMER"), key, group, consumer}
}
