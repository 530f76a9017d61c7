package config

import "time"

// BusyReplyThreshold is busy-reply-threshold (alias lua-time-limit): how
// long a script runs before other clients get BUSY replies.
func (c *Config) BusyReplyThreshold() time.Duration {
	return time.Duration(c.load(idxBusyReplyThreshold).n) * time.Millisecond
}
