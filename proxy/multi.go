package proxy

// multiState is a client's MULTI queue and WATCHed keys.
type multiState struct{}

// discardMulti leaves MULTI state, dropping the queue.
func (c *Client) discardMulti() {}

// unwatchAll forgets the client's WATCHed keys.
func (c *Client) unwatchAll() {}
