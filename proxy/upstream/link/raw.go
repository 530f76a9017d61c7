package link

import "net"

// NetConn returns the connection's socket, for a caller that takes it over
// as a byte stream (a replication stream relayed verbatim). Call it only
// when no reply is pending: bytes the reply reader buffered are not in it.
// The Conn's own methods must not be used afterwards, except Close.
func (c *Conn) NetConn() net.Conn { return c.nc }
