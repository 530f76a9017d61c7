package acl

import (
	"os"
	"path/filepath"
	"testing"
)

// The errors of an ACL file, as redis-server 7.0.15 reported them for the
// same file (ACL LOAD), and ACL SAVE's file loading back to the same users.
func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "user.acl")
	bad := "user alice on allcommands allkeys &* >alice\nuser bob on -@all +@set +acl ~set* &* >bob\n" +
		"user default on nopass ~* &* +@all\nuser alice on nopass ~* -@all\nuser x%y\n" +
		"user bad +nosuch bogus +@nope %X~a\nnotuser foo\nuser\n   \nuser \"quoted\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "WARNING: Duplicate user 'alice' found on line 4. " +
		path + ":6: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
		path + ":6: Syntax error. " +
		path + ":6: Error in applying operation '+@nope': Unknown command or category name in ACL. " +
		path + ":7 should start with user keyword followed by the username. " +
		path + ":8 should start with user keyword followed by the username. " +
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	if _, err := LoadFile(path, false); err == nil || err.Error() != want {
		t.Fatalf("LoadFile errors:\n got %v\nwant %s", err, want)
	}
	missing := filepath.Join(dir, "nosuch.acl")
	if _, err := LoadFile(missing, false); err == nil ||
		err.Error() != "Error loading ACLs, opening file '"+missing+"': No such file or directory" {
		t.Fatalf("missing file: %v", err)
	}

	good := "user alice on allcommands allkeys &* >alice\nuser bob on -@all +@set +acl ~set* &* >bob\n"
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	users, err := LoadFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry()
	r.Replace(users)
	if err := r.SaveFile(path); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(path)
	wantSaved := "user alice on #2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90 ~* &* +@all\n" +
		"user bob on #81b637d8fcd2c6da6359e6963113a1170de795e4b725b84d1e0b4cfd9ec58ce9 ~set* &* -@all +@set +acl\n" +
		"user default on nopass ~* &* +@all\n"
	if string(saved) != wantSaved {
		t.Fatalf("saved:\n%s\nwant:\n%s", saved, wantSaved)
	}
	again, err := LoadFile(path, false)
	if err != nil || len(again) != 3 || again["bob"].Describe() != users["bob"].Describe() {
		t.Fatalf("reload: %v %v", again, err)
	}
}
