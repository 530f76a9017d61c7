package upstream

import (
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// Replication through a cluster sidecar.
//
// A Redis Cluster replica replicates from its primary's announced address:
// the primary's sidecar. Standalone upstream mode refuses replicas (its cold
// keys are in no replication stream); in front of a cluster node the
// sidecar serves two kinds of replication connection instead, each on a
// connection of its own, never on the shared ones:
//
//   - SYNC or PSYNC (after REPLCONFs) from the cluster replica node: the
//     sidecar opens a dedicated connection to its node, replays the
//     REPLCONFs it answered, sends the PSYNC and splices the two sockets
//     byte for byte. The replica gets its primary's hot data and stream
//     (the demoter's UNLINKs included), its ACKs reach the primary, and
//     WAIT counts it as Redis does.
//   - REPLCONF SPILLWAY-COLD from the replica's own sidecar: the
//     connection becomes that sidecar's cold feed (cluster_follow.go).
//
// Spliced replicas are not Spillway's clients any more: they appear in
// the node's INFO replication and ROLE, not in the sidecar's.

// clusterReplicaCmd is the cluster branch of SYNC, PSYNC and REPLCONF
// (upSync, upReplconf): REPLCONF options are kept for the splice and
// answered +OK, ACK and GETACK get no reply (as from a client that is not
// a replica), SYNC and PSYNC start the splice.
func (c *client) clusterReplicaCmd(args [][]byte) {
	name := strings.ToLower(string(args[0]))
	if name == "replconf" {
		if len(args) < 2 {
			c.w.Error("ERR wrong number of arguments for 'replconf' command")
			return
		}
		switch opt := strings.ToLower(string(args[1])); opt {
		case "ack", "getack":
			return
		case coldFollowOption:
			c.w.OK()
			c.TakeOver(c.f.serveColdFollower)
			return
		}
		if len(args)%2 == 0 { // options come in pairs, as Redis checks
			c.w.Error("ERR syntax error")
			return
		}
		kept := make([][]byte, len(args))
		for i, a := range args {
			kept[i] = append([]byte(nil), a...)
		}
		c.replconf = append(c.replconf, kept)
		c.w.OK()
		return
	}
	up, err := c.f.pool.DialInternal(2, 0)
	if err != nil {
		c.Err(link.ErrorReply(err))
		return
	}
	for _, rc := range c.replconf {
		up.SendArgs(rc)
		if err := up.Flush(); err != nil {
			up.Close()
			c.Err(link.ErrorReply(err))
			return
		}
		r, err := up.Read()
		if err != nil {
			up.Close()
			c.Err(link.ErrorReply(err))
			return
		}
		if link.IsError(r) {
			// Redis's replicas treat a refused REPLCONF as non-critical; the
			// node's answer is what the replica would have got.
			c.f.log.Info("cluster replica's REPLCONF refused by the node", "replconf", string(rc[1]), "reply", link.ReplyText(r))
		}
	}
	c.replconf = nil
	up.SendArgs(args)
	if err := up.Flush(); err != nil {
		up.Close()
		c.Err(link.ErrorReply(err))
		return
	}
	c.f.log.Info("cluster replica attached: relaying its replication connection to the node", "client", c.id, "command", cstr.ErrArg(args[0]))
	c.TakeOver(func(nc net.Conn) {
		c.f.follow.spliceRunning(1) // demotion now waits for a cold follower
		defer c.f.follow.spliceRunning(-1)
		splice(nc, up.NetConn())
		up.Close()
	})
}

// splice copies bytes both ways between the replica's socket and the
// node's until either side closes, then closes both.
func splice(client, node net.Conn) {
	client.SetDeadline(time.Time{})
	var once sync.Once
	done := func() { once.Do(func() { client.Close(); node.Close() }) }
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(node, client)
		done()
	}()
	io.Copy(client, node)
	done()
	wg.Wait()
}
