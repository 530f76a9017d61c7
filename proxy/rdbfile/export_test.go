package rdbfile

// CancelRequested reports whether Cancel was called on s's running save.
func CancelRequested(s *Saver) bool { return s.cancel.Load() }
