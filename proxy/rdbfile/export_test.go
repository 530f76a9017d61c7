package rdbfile

import "github.com/spillway/spillway/tiering"

// CancelRequested reports whether Cancel was called on s's running save.
func CancelRequested(s *Saver) bool { return s.cancel.Load() }

// MarkLoading writes the marker of a load under way, as Load does first.
func MarkLoading(eng *tiering.Engine) error {
	_, err := eng.Update(func(tx *tiering.Tx) error { return tx.PutSystem(sysLoading, loadingOn) })
	return err
}
