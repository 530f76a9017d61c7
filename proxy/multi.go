package proxy

// multiState is a client's MULTI queue and WATCHed keys.
type multiState struct{}
